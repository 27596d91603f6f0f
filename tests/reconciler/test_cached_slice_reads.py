"""What a ``CachedSlice`` reads back: endpoints that keep their JSON held compacted (their
repeated strings and condition dicts shared), targets whose kind is empty rebuilt as they
were, and the membership of its other fields."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import CachedSlice
from endpointslice_operator.reconciler.slices import _parse_body


def _endpoint(i: int, namespace: str) -> dict[str, Any]:
    return {
        "addresses": [f"10.0.0.{i}"],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": namespace, "name": f"web-{i}", "uid": f"u{i}"},
        # Equal strings, distinct objects, as two decoded JSON values are.
        "nodeName": "".join(("node-", "a")),
        "zone": "".join(("zone-", "a")),
    }


def test_endpoints_kept_as_json_share_their_repeated_strings_and_conditions() -> None:
    # Pods of two namespaces: not one Service's, so the endpoints keep their JSON.
    endpoints = [_endpoint(1, "ns"), _endpoint(2, "elsewhere")]
    assert endpoints[0]["nodeName"] is not endpoints[1]["nodeName"]
    cached = CachedSlice({"addressType": "IPv4", "endpoints": endpoints})
    assert not cached.endpoints_rebuilt
    first, second = cached["endpoints"]
    assert first["nodeName"] is second["nodeName"]
    assert first["zone"] is second["zone"]
    assert first["conditions"] is second["conditions"]


@pytest.mark.parametrize("kind", ["", "Pod", "VirtualMachineInstance"])
def test_targets_of_any_one_kind_read_back_with_that_kind(kind: str) -> None:
    """The kind of the first target is the slice's, even an empty one (it was read back as
    ``Pod``)."""
    endpoints = [_endpoint(i, "ns") for i in range(2)]
    for endpoint in endpoints:
        endpoint["targetRef"]["kind"] = kind
    endpoint_slice = {"addressType": "IPv4", "endpoints": endpoints}
    cached = CachedSlice(endpoint_slice)
    assert cached.endpoints_rebuilt
    assert cached == endpoint_slice
    assert cached.parsed == _parse_body(endpoint_slice)


def test_a_cached_slice_holds_its_other_fields() -> None:
    cached = CachedSlice({"addressType": "IPv4", "metadata": {"name": "s"}, "endpoints": []})
    assert "addressType" in cached and "metadata" in cached and "endpoints" in cached
    assert "ports" not in cached
