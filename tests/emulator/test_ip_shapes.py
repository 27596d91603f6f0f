"""Every IP shape as kube-apiserver v1.36.2 answers it (measured; docs/reliability.md has the
table, tests/realcluster/test_conformance.py holds both servers to the same requests): a
non-canonical IPv6 text is kept in pods, Endpoints and Services with a ``Warning:`` header and
refused in an EndpointSlice; leading zeros and IPv4-mapped IPv6 are refused everywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest

from endpointslice_operator.testing import Emulator
from tests.emulator.conftest import Client

NS = "/api/v1/namespaces/default"


async def _write(client: Client, method: str, path: str, body: Any, kind: str = "json") -> Any:
    content_type = {"json": "application/json", "merge": "application/merge-patch+json"}[kind]
    async with client.session.request(
        method,
        client.base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": content_type},
    ) as response:
        return response.status, response.headers.getall("Warning", []), await response.json()


async def _pod(client: Client, name: str) -> None:
    body = {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, _, answer = await _write(client, "POST", f"{NS}/pods", body)
    assert status == 201, answer


def _warning(path: str, given: str, canonical: str) -> str:
    return "299 - " + json.dumps(
        f'{path}: IPv6 address "{given}" should be in RFC 5952 canonical format ("{canonical}")'
    )


@pytest.mark.parametrize(
    ("ip", "canonical"),
    [
        ("fd00:0::1", "fd00::1"),
        ("FD00:26::9", "fd00:26::9"),
        ("fd00:0000:0000:0000:0000:0000:0000:0001", "fd00::1"),
    ],
)
async def test_a_pod_keeps_a_non_canonical_ipv6_address_with_a_warning(
    emu: Emulator, client: Client, ip: str, canonical: str
) -> None:
    await _pod(client, "p")
    status, warnings, body = await _write(
        client, "PATCH", f"{NS}/pods/p/status", {"status": {"podIPs": [{"ip": ip}]}}, "merge"
    )
    assert status == 200, body
    assert body["status"]["podIPs"] == [{"ip": ip}]
    assert warnings == [_warning("status.podIPs[0].ip", ip, canonical)]


@pytest.mark.parametrize(
    ("ip", "message"),
    [
        ("10.052.0.3", "must not have leading 0s"),
        ("::ffff:10.52.0.4", "must not be an IPv4-mapped IPv6 address"),
    ],
)
async def test_a_pod_refuses_leading_zeros_and_ipv4_mapped(
    emu: Emulator, client: Client, ip: str, message: str
) -> None:
    await _pod(client, "p")
    status, warnings, body = await _write(
        client, "PATCH", f"{NS}/pods/p/status", {"status": {"podIPs": [{"ip": ip}]}}, "merge"
    )
    assert status == 422
    assert [c["message"] for c in body["details"]["causes"]] == [
        f'Invalid value: "{ip}": {message}'
    ]
    assert warnings == []


@pytest.mark.parametrize(
    ("ip", "address_type", "message"),
    [
        ("fd00:0::1", "IPv6", 'must be in canonical form ("fd00::1")'),
        ("10.052.0.3", "IPv4", "must not have leading 0s"),
        ("::ffff:10.52.0.4", "IPv4", "must be a valid IPv4 address"),
    ],
)
async def test_a_slice_refuses_every_non_canonical_form(
    emu: Emulator, client: Client, ip: str, address_type: str, message: str
) -> None:
    body = {
        "metadata": {"name": "s"},
        "addressType": address_type,
        "endpoints": [{"addresses": [ip]}],
        "ports": [],
    }
    status, _, answer = await _write(
        client, "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", body
    )
    assert status == 422
    assert answer["details"]["causes"][0]["message"].endswith(message), answer


async def test_endpoints_keep_ipv6_forms_with_a_warning_and_refuse_legacy_ones(
    emu: Emulator, client: Client
) -> None:
    def endpoints(name: str, ip: str) -> Any:
        return {
            "metadata": {"name": name},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}],
        }

    status, warnings, _ = await _write(
        client, "POST", f"{NS}/endpoints", endpoints("a", "fd00:0::1")
    )
    assert status == 201
    assert warnings == [_warning("subsets[0].addresses[0].ip", "fd00:0::1", "fd00::1")]
    status, _, answer = await _write(
        client, "POST", f"{NS}/endpoints", endpoints("b", "10.052.0.3")
    )
    assert status == 422
    assert answer["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "10.052.0.3": must not have leading 0s',
        "field": "subsets[0].addresses[0].ip",
    }


async def test_service_external_ips_as_the_server(emu: Emulator, client: Client) -> None:
    def service(name: str, ip: str) -> Any:
        return {"metadata": {"name": name}, "spec": {"externalIPs": [ip], "ports": [{"port": 80}]}}

    status, warnings, _ = await _write(client, "POST", f"{NS}/services", service("a", "fd00:0::1"))
    assert status == 201
    assert _warning("spec.externalIPs[0]", "fd00:0::1", "fd00::1") in warnings
    status, _, answer = await _write(client, "POST", f"{NS}/services", service("b", "10.052.0.3"))
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "spec.externalIPs[0]"


async def test_core_events_take_any_generate_name(emu: Emulator, client: Client) -> None:
    """``generateName: web.`` is 201 on v1.36 for core/v1 Events (events.k8s.io: 422)."""
    body = {
        "metadata": {"generateName": "web."},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "R",
        "message": "m",
        "type": "Normal",
    }
    status, _, answer = await _write(client, "POST", f"{NS}/events", body)
    assert status == 201, answer
    assert answer["metadata"]["name"].startswith("web.")
