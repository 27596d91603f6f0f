"""``reconciler/hints/trafficdist.py``: the values of ``spec.trafficDistribution`` as the API
spells them, and the hints of a ready endpoint that has neither a zone nor a node."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler.hints.trafficdist import is_valid, reconcile_hints


def _slice(*endpoints: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "web-1"}, "endpoints": list(endpoints)}


def test_the_values_are_the_apis() -> None:
    """The literal values of the Service API, not the module's constants."""
    assert is_valid("PreferClose", prefer_same_enabled=False)
    assert is_valid("PreferSameZone", prefer_same_enabled=True)
    assert is_valid("PreferSameNode", prefer_same_enabled=True)
    assert not is_valid("PreferSameZone", prefer_same_enabled=False)
    endpoint = {"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "zone": "a"}
    endpoint["nodeName"] = "node-1"
    (zone_only,), _ = reconcile_hints(
        "PreferSameZone", [_slice(dict(endpoint))], [], [], prefer_same_enabled=True
    )
    assert zone_only["endpoints"][0]["hints"] == {"forZones": [{"name": "a"}]}
    (with_node,), _ = reconcile_hints(
        "PreferSameNode", [_slice(dict(endpoint))], [], [], prefer_same_enabled=True
    )
    assert with_node["endpoints"][0]["hints"] == {
        "forZones": [{"name": "a"}],
        "forNodes": [{"name": "node-1"}],
    }


def test_old_hints_of_a_ready_endpoint_without_zone_or_node_are_removed() -> None:
    """Nothing to hint at: the hints the slice had go, on a slice being written."""
    endpoint = {
        "addresses": ["10.0.0.1"],
        "conditions": {"ready": True},
        "hints": {"forZones": [{"name": "a"}]},
    }
    _, (updated,) = reconcile_hints(
        "PreferClose", [], [_slice(endpoint)], [], prefer_same_enabled=False
    )
    assert "hints" not in updated["endpoints"][0]
