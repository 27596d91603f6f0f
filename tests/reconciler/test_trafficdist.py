"""Port of upstream trafficdist/trafficdist_test.go, plus the validity rules of A.2."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from endpointslice_operator.reconciler.hints.trafficdist import (
    PREFER_CLOSE,
    PREFER_SAME_NODE,
    PREFER_SAME_ZONE,
    is_valid,
    reconcile_hints,
    reconcile_hints_with_unchanged,
)


def ep(
    address: str,
    zone: str | None,
    node: str | None,
    *,
    ready: bool = True,
    zones: list[str] | None = None,
    nodes: list[str] | None = None,
) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"addresses": [address]}
    if zone is not None:
        endpoint["zone"] = zone
    if node is not None:
        endpoint["nodeName"] = node
    endpoint["conditions"] = {"ready": ready}
    hints: dict[str, Any] = {}
    if zones is not None:
        hints["forZones"] = [{"name": z} for z in zones]
    if nodes is not None:
        hints["forNodes"] = [{"name": n} for n in nodes]
    if hints:
        endpoint["hints"] = hints
    return endpoint


def eps(*endpoints: dict[str, Any]) -> dict[str, Any]:
    return {"addressType": "IPv4", "endpoints": list(endpoints)}


def four_slices(
    *, zones: bool, zone_hints: bool, node_hints: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Upstream's recurring fixture: 2 slices to create and 2 to update, 8 endpoints."""
    layout = [
        [("10.0.0.1", "zone-a", "node-1"), ("10.0.0.2", "zone-b", "node-2")],
        [("10.0.0.3", "zone-a", "node-3"), ("10.0.0.4", "zone-b", "node-4")],
        [("10.0.0.5", "zone-a", "node-5"), ("10.0.0.6", "zone-a", "node-6")],
        [("10.0.0.7", "zone-b", "node-7"), ("10.0.0.8", "zone-c", "node-8")],
    ]
    slices = [
        eps(
            *(
                ep(
                    address,
                    zone if zones else None,
                    node,
                    zones=[zone] if zone_hints else None,
                    nodes=[node] if node_hints else None,
                )
                for address, zone, node in endpoints
            )
        )
        for endpoints in layout
    ]
    return slices[:2], slices[2:]


@dataclass
class Case:
    traffic_distribution: str | None
    creates: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[dict[str, Any]] = field(default_factory=list)
    want_creates: list[dict[str, Any]] = field(default_factory=list)
    want_updates: list[dict[str, Any]] = field(default_factory=list)
    want_unchanged: list[dict[str, Any]] = field(default_factory=list)


def _case(
    traffic_distribution: str,
    *,
    zones: bool,
    want_zone_hints: bool,
    want_node_hints: bool,
) -> Case:
    creates, updates = four_slices(zones=zones, zone_hints=False, node_hints=False)
    want_creates, want_updates = four_slices(
        zones=zones, zone_hints=want_zone_hints, node_hints=want_node_hints
    )
    return Case(
        traffic_distribution,
        creates=creates,
        updates=updates,
        want_creates=want_creates,
        want_updates=want_updates,
    )


CASES = {
    "should set zone hints with PreferClose": _case(
        PREFER_CLOSE, zones=True, want_zone_hints=True, want_node_hints=False
    ),
    "should set zone hints with PreferSameZone": _case(
        PREFER_SAME_ZONE, zones=True, want_zone_hints=True, want_node_hints=False
    ),
    "should set zone and node hints with PreferSameNode": _case(
        PREFER_SAME_NODE, zones=True, want_zone_hints=True, want_node_hints=True
    ),
    "should correct incorrect hints with PreferClose": Case(
        PREFER_CLOSE,
        updates=[eps(ep("10.0.0.1", "zone-a", "node-1", zones=["zone-b"]))],
        unchanged=[
            eps(ep("10.0.0.2", "zone-b", "node-2", zones=["zone-c"])),
            eps(ep("10.0.0.3", "zone-c", "node-3")),
        ],
        want_updates=[
            eps(ep("10.0.0.1", "zone-a", "node-1", zones=["zone-a"])),
            eps(ep("10.0.0.2", "zone-b", "node-2", zones=["zone-b"])),
            eps(ep("10.0.0.3", "zone-c", "node-3", zones=["zone-c"])),
        ],
    ),
    "should not create hints with PreferClose if there are no zones": _case(
        PREFER_CLOSE, zones=False, want_zone_hints=False, want_node_hints=False
    ),
    "should create only node hints with PreferSameNode if there are no zones": _case(
        PREFER_SAME_NODE, zones=False, want_zone_hints=False, want_node_hints=True
    ),
    "unready endpoints should not trigger updates": Case(
        PREFER_CLOSE,
        unchanged=[eps(ep("10.0.0.2", "zone-b", "node-2", ready=False))],
        want_unchanged=[eps(ep("10.0.0.2", "zone-b", "node-2", ready=False))],
    ),
    "should remove hints when trafficDistribution is unrecognized": Case(
        "Unknown",
        creates=[
            eps(
                ep("10.0.0.1", "zone-a", "node-1", zones=["zone-a"]),
                ep("10.0.0.2", "zone-b", "node-2", zones=["zone-b"]),
            ),
            eps(ep("10.0.0.3", "zone-a", "node-3", zones=["zone-a"])),
        ],
        updates=[eps(ep("10.0.0.5", "zone-a", "node-5", zones=["zone-a"]))],
        want_creates=[
            eps(ep("10.0.0.1", "zone-a", "node-1"), ep("10.0.0.2", "zone-b", "node-2")),
            eps(ep("10.0.0.3", "zone-a", "node-3")),
        ],
        want_updates=[eps(ep("10.0.0.5", "zone-a", "node-5"))],
    ),
    "should remove hints when trafficDistribution is unset": Case(
        None,
        updates=[eps(ep("10.0.0.5", "zone-a", "node-5", zones=["zone-a"]))],
        unchanged=[eps(ep("10.0.0.6", "zone-b", "node-6", zones=["zone-b"]))],
        want_updates=[
            eps(ep("10.0.0.5", "zone-a", "node-5")),
            eps(ep("10.0.0.6", "zone-b", "node-6")),
        ],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_reconcile_hints(case: Case) -> None:
    unchanged_before = copy.deepcopy(case.unchanged)

    creates, updates, unchanged = reconcile_hints_with_unchanged(
        case.traffic_distribution,
        case.creates,
        case.updates,
        case.unchanged,
        prefer_same_enabled=True,
    )

    assert creates == case.want_creates
    assert updates == case.want_updates
    assert unchanged == case.want_unchanged
    assert case.unchanged == unchanged_before


def test_reconcile_hints_does_not_mutate_unchanged_slices() -> None:
    original = eps(ep("10.0.0.1", "zone-a", "node-1"))
    cloned = copy.deepcopy(original)

    creates, updates = reconcile_hints(PREFER_CLOSE, [], [], [original], prefer_same_enabled=True)

    assert original == cloned
    assert creates == []
    assert updates == [eps(ep("10.0.0.1", "zone-a", "node-1", zones=["zone-a"]))]


NEEDS_UPDATE_CASES = {
    "correct zone hint": (PREFER_CLOSE, ep("a", "zone-a", "node-1", zones=["zone-a"]), False),
    "two zone hints": (PREFER_CLOSE, ep("a", "zone-a", None, zones=["zone-a", "zone-b"]), True),
    "zone hint without zone": (PREFER_CLOSE, ep("a", None, "node-1", zones=["zone-a"]), True),
    "stale node hint with PreferClose": (
        PREFER_CLOSE,
        ep("a", "zone-a", "node-1", zones=["zone-a"], nodes=["node-1"]),
        True,
    ),
    "missing node hint with PreferSameNode": (
        PREFER_SAME_NODE,
        ep("a", "zone-a", "node-1", zones=["zone-a"]),
        True,
    ),
    "wrong node hint with PreferSameNode": (
        PREFER_SAME_NODE,
        ep("a", "zone-a", "node-1", zones=["zone-a"], nodes=["node-2"]),
        True,
    ),
    "correct zone and node hints with PreferSameNode": (
        PREFER_SAME_NODE,
        ep("a", "zone-a", "node-1", zones=["zone-a"], nodes=["node-1"]),
        False,
    ),
    "node hint without nodeName with PreferSameNode": (
        PREFER_SAME_NODE,
        ep("a", "zone-a", None, zones=["zone-a"], nodes=["node-1"]),
        True,
    ),
    "no zone, no node, no hints": (PREFER_SAME_NODE, ep("a", None, None), False),
    "unready endpoint with wrong hints": (
        PREFER_CLOSE,
        ep("a", "zone-a", "node-1", ready=False, zones=["zone-b"]),
        False,
    ),
    "default heuristic, unready endpoint with hints": (
        None,
        ep("a", "zone-a", "node-1", ready=False, zones=["zone-a"]),
        True,
    ),
}


@pytest.mark.parametrize(
    ("traffic_distribution", "endpoint", "needs_update"),
    NEEDS_UPDATE_CASES.values(),
    ids=NEEDS_UPDATE_CASES.keys(),
)
def test_unchanged_slice_needs_update(
    traffic_distribution: str | None, endpoint: dict[str, Any], needs_update: bool
) -> None:
    slice_ = eps(endpoint)
    _, updates, unchanged = reconcile_hints_with_unchanged(
        traffic_distribution, [], [], [slice_], prefer_same_enabled=True
    )
    assert (len(updates), len(unchanged)) == ((1, 0) if needs_update else (0, 1))


def test_an_unready_endpoint_does_not_hide_the_wrong_hints_of_the_next_one() -> None:
    slice_ = eps(
        ep("10.0.0.1", "zone-a", "node-1", ready=False),
        ep("10.0.0.2", "zone-b", "node-2", zones=["zone-a"]),
    )
    _, updates, unchanged = reconcile_hints_with_unchanged(
        PREFER_CLOSE, [], [], [slice_], prefer_same_enabled=True
    )
    assert unchanged == []
    assert updates == [
        eps(
            ep("10.0.0.1", "zone-a", "node-1", ready=False),
            ep("10.0.0.2", "zone-b", "node-2", zones=["zone-b"]),
        )
    ]


def test_unready_endpoints_keep_their_hints_with_prefer_close() -> None:
    stale = {"forZones": [{"name": "zone-z"}]}
    create = eps(ep("10.0.0.1", "zone-a", "node-1", ready=False, zones=["zone-z"]))
    creates, _ = reconcile_hints(PREFER_CLOSE, [create], [], [], prefer_same_enabled=True)
    assert creates[0]["endpoints"][0]["hints"] == stale


def test_prefer_same_values_strip_hints_when_the_option_is_off() -> None:
    create = eps(ep("10.0.0.1", "zone-a", "node-1", zones=["zone-a"]))
    unchanged = eps(ep("10.0.0.2", "zone-a", "node-2", zones=["zone-a"]))
    creates, updates = reconcile_hints(
        PREFER_SAME_NODE, [create], [], [unchanged], prefer_same_enabled=False
    )
    assert creates == [eps(ep("10.0.0.1", "zone-a", "node-1"))]
    assert updates == [eps(ep("10.0.0.2", "zone-a", "node-2"))]


@pytest.mark.parametrize(
    ("value", "prefer_same_enabled", "valid"),
    [
        (None, True, False),
        ("", True, False),
        (PREFER_CLOSE, False, True),
        (PREFER_CLOSE, True, True),
        (PREFER_SAME_ZONE, True, True),
        (PREFER_SAME_ZONE, False, False),
        (PREFER_SAME_NODE, True, True),
        (PREFER_SAME_NODE, False, False),
        ("preferClose", True, False),
        ("FutureValue", True, False),
    ],
)
def test_is_valid(value: str | None, prefer_same_enabled: bool, valid: bool) -> None:
    assert is_valid(value, prefer_same_enabled=prefer_same_enabled) is valid


def test_malformed_hints_are_rewritten() -> None:
    unchanged = eps(
        {"addresses": ["10.0.0.1"], "zone": "zone-a", "conditions": {"ready": True}, "hints": 5}
    )
    _, updates = reconcile_hints(PREFER_CLOSE, [], [], [unchanged], prefer_same_enabled=True)
    assert updates == [eps(ep("10.0.0.1", "zone-a", None, zones=["zone-a"]))]
