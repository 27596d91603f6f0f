"""The protobuf subset: enough for ``kubectl create namespace``, a 415 beyond it."""

from __future__ import annotations

import pytest

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.protobuf import MAGIC, MEDIA_TYPE, decode
from tests.emulator.conftest import Client


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128 and number < 16
    return bytes([number << 3 | 2, len(payload)]) + payload


def envelope(kind: str, meta: bytes) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    return (
        MAGIC + _field(1, type_meta) + _field(2, _field(1, meta)) + _field(4, MEDIA_TYPE.encode())
    )


def test_decodes_namespace_metadata() -> None:
    label = _field(1, b"team") + _field(2, b"blue")
    meta = _field(1, b"shop") + _field(2, b"") + _field(11, label) + _field(14, b"example.com/f")
    assert decode(envelope("Namespace", meta)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "shop", "labels": {"team": "blue"}, "finalizers": ["example.com/f"]},
    }


@pytest.mark.parametrize("body", [b"not protobuf", envelope("Service", _field(1, b"web"))])
def test_other_bodies_are_unsupported(body: bytes) -> None:
    with pytest.raises(ApiError) as caught:
        decode(body)
    assert caught.value.code == 415


def test_truncated_bodies_are_bad_requests() -> None:
    with pytest.raises(ApiError) as caught:
        decode(MAGIC + b"\x0a\xff")
    assert caught.value.code == 400


async def test_post_a_protobuf_namespace(emu: Emulator, client: Client) -> None:
    body = envelope("Namespace", _field(1, b"shop"))
    status, created = await client.request(
        "POST", "/api/v1/namespaces", body, content_type=MEDIA_TYPE
    )
    assert status == 201
    assert created["metadata"]["name"] == "shop"
    assert emu.store.get("namespaces", None, "shop") is not None


async def test_yaml_bodies_are_accepted(client: Client) -> None:
    body = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-yaml\n"
    status, created = await client.request(
        "POST", "/api/v1/namespaces", body, content_type="application/yaml"
    )
    assert status == 201 and created["metadata"]["name"] == "from-yaml"
