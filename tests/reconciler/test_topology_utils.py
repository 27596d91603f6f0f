"""Port of upstream topologycache/utils_test.go, plus RemoveHintsFromSlices."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from endpointslice_operator.reconciler.hints.topology import (
    Allocation,
    SliceInfo,
    giving_and_receiving_zones,
    hints_by_zone,
    redistribute_hints,
    remove_hints_from_slices,
)


def ep(zone: str, hint: str | None = None, *, ready: bool | None = True) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"addresses": ["10.0.0.1"], "zone": zone}
    if hint is not None:
        endpoint["hints"] = {"forZones": [{"name": hint}]}
    endpoint["conditions"] = {} if ready is None else {"ready": ready}
    return endpoint


def eps(*endpoints: dict[str, Any]) -> dict[str, Any]:
    return {"addressType": "IPv4", "endpoints": list(endpoints)}


REDISTRIBUTE_CASES = {
    "empty": ([], {}, {}, {}),
    "single endpoint": (
        [eps(ep("zone-a", "zone-a"))],
        {"zone-a": 1},
        {"zone-b": 1},
        {"zone-a": -1, "zone-b": 1},
    ),
    "endpoints from 1 zone redistributed to 2 other zones": (
        [eps(ep("zone-a", "zone-a"), ep("zone-a", "zone-a"), ep("zone-a", "zone-a"))],
        {"zone-a": 2},
        {"zone-b": 1, "zone-c": 1},
        {"zone-a": -2, "zone-b": 1, "zone-c": 1},
    ),
}


@pytest.mark.parametrize(
    ("slices", "giving", "receiving", "expected"),
    REDISTRIBUTE_CASES.values(),
    ids=REDISTRIBUTE_CASES.keys(),
)
def test_redistribute_hints(
    slices: list[dict[str, Any]],
    giving: dict[str, int],
    receiving: dict[str, int],
    expected: dict[str, int],
) -> None:
    assert redistribute_hints(slices, dict(giving), dict(receiving)) == expected
    moved = sum(
        1
        for slice_ in slices
        for endpoint in slice_["endpoints"]
        if endpoint["hints"]["forZones"][0]["name"] != endpoint["zone"]
    )
    assert moved == sum(giving.values())


def test_redistribute_hints_skips_unready_endpoints() -> None:
    slices = [eps(ep("zone-a", ready=False), ep("zone-a", ready=None), ep("zone-a", "zone-a"))]
    assert redistribute_hints(slices, {"zone-a": 1}, {"zone-b": 1}) == {"zone-b": 1, "zone-a": -1}
    assert [e.get("hints") for e in slices[0]["endpoints"]] == [
        None,
        None,
        {"forZones": [{"name": "zone-b"}]},
    ]


def test_redistribute_hints_skips_endpoints_without_a_zone_and_goes_on() -> None:
    no_zone = {"addresses": ["10.0.0.9"], "conditions": {"ready": True}}
    slices = [eps(no_zone, ep("zone-a", "zone-a"))]
    assert redistribute_hints(slices, {"zone-a": 1}, {"zone-b": 1}) == {"zone-b": 1, "zone-a": -1}
    assert [e.get("hints") for e in slices[0]["endpoints"]] == [
        None,
        {"forZones": [{"name": "zone-b"}]},
    ]


def test_redistribute_hints_passes_over_a_zone_with_nothing_left_to_receive() -> None:
    slices = [eps(ep("zone-a", "zone-a"))]
    receiving = {"zone-b": 0, "zone-c": 1}
    assert redistribute_hints(slices, {"zone-a": 1}, receiving) == {"zone-c": 1, "zone-a": -1}
    assert slices[0]["endpoints"][0]["hints"] == {"forZones": [{"name": "zone-c"}]}
    assert receiving == {"zone-b": 0}


def allocs(**desired: float) -> dict[str, Allocation]:
    return {zone.replace("_", "-"): Allocation(desired=value) for zone, value in desired.items()}


GIVING_RECEIVING_CASES = {
    "empty": ({}, {}, {}, {}),
    "simple allocation with no need for rebalancing": (
        allocs(zone_a=1.2, zone_b=1.1, zone_c=1.0),
        {"zone-a": 1, "zone-b": 1, "zone-c": 1},
        {},
        {},
    ),
    "preference for same zone even when giving an extra endpoint would result in slightly "
    "better distribution": (
        allocs(zone_a=5.1, zone_b=5.1, zone_c=5.8),
        {"zone-a": 16},
        {"zone-a": 10},
        {"zone-b": 5, "zone-c": 5},
    ),
    "when 2 zones need < 1 endpoint, give to zone that needs endpoint most": (
        allocs(zone_a=5.0, zone_b=5.6, zone_c=5.4),
        {"zone-a": 16},
        {"zone-a": 11},
        {"zone-b": 6, "zone-c": 5},
    ),
    "when 2 zones have extra endpoints, give from zone with most extra": (
        allocs(zone_a=5.0, zone_b=5.6, zone_c=5.4),
        {"zone-b": 8, "zone-c": 8},
        {"zone-b": 2, "zone-c": 3},
        {"zone-a": 5},
    ),
    # Not upstream's: its getMost walks a Go map, so a tie goes to a random zone. Ours goes
    # to the first zone in the allocations' order, so the same input always gives the same
    # hints (and a re-plan does not move them).
    "a tie between receiving zones goes to the first one": (
        allocs(zone_c=2.0, zone_b=2.0, zone_a=2.0),
        {"zone-c": 1, "zone-b": 1, "zone-a": 3},
        {"zone-a": 1},
        {"zone-c": 1},
    ),
    "a tie between giving zones is broken by the first one": (
        allocs(zone_b=2.0, zone_a=2.0, zone_c=2.0),
        {"zone-a": 3, "zone-b": 3, "zone-c": 1},
        {"zone-b": 1},
        {"zone-c": 1},
    ),
    "exactly half an endpoint to give is enough when the receiver needs a whole one": (
        allocs(zone_a=2.5, zone_b=3.0),
        {"zone-a": 3, "zone-b": 2},
        {"zone-a": 1},
        {"zone-b": 1},
    ),
    "exactly half an endpoint to receive is enough when the giver has a whole one": (
        allocs(zone_a=2.0, zone_b=2.5),
        {"zone-a": 3, "zone-b": 2},
        {"zone-a": 1},
        {"zone-b": 1},
    ),
    "ensure function can handle unexpected data (more allocated than allocations)": (
        allocs(zone_a=5.0, zone_b=5.0, zone_c=5.0),
        {"zone-a": 6, "zone-b": 6, "zone-c": 6},
        {},
        {},
    ),
    "ensure function can handle unexpected data (negative allocations)": (
        allocs(zone_a=-5.0, zone_b=-5.0, zone_c=-5.0),
        {"zone-a": 6, "zone-b": 6, "zone-c": 6},
        {},
        {},
    ),
    "ensure function can handle unexpected data (negative allocated)": (
        allocs(zone_a=5.0, zone_b=5.0, zone_c=5.0),
        {"zone-a": -4, "zone-b": -3, "zone-c": -2},
        {},
        {},
    ),
    "ensure function can handle unexpected data (negative for 1 zone)": (
        allocs(zone_a=5.0, zone_b=5.0, zone_c=5.0),
        {"zone-a": -40, "zone-b": 20, "zone-c": 20},
        {"zone-b": 15, "zone-c": 15},
        {"zone-a": 30},
    ),
}


@pytest.mark.parametrize(
    ("allocations", "allocated", "expected_giving", "expected_receiving"),
    GIVING_RECEIVING_CASES.values(),
    ids=GIVING_RECEIVING_CASES.keys(),
)
def test_get_giving_and_receiving_zones(
    allocations: dict[str, Allocation],
    allocated: dict[str, int],
    expected_giving: dict[str, int],
    expected_receiving: dict[str, int],
) -> None:
    before = dict(allocated)
    assert giving_and_receiving_zones(allocations, allocated) == (
        expected_giving,
        expected_receiving,
    )
    assert allocated == before


def maxima(**maximum: int) -> dict[str, Allocation]:
    return {zone.replace("_", "-"): Allocation(maximum=value) for zone, value in maximum.items()}


def test_allocation_defaults_to_go_zero_values_and_is_an_immutable_hashable_value() -> None:
    """The tables above, like upstream's, leave out the fields they do not need: those are
    zero, so a zone with only ``desired`` set may keep no more than ``desired`` rounded up."""
    assert Allocation() == Allocation(minimum=0, maximum=0, desired=0.0)
    assert Allocation().kept_up_to == 0
    assert Allocation(desired=1.5).kept_up_to == 2
    assert Allocation(maximum=3).kept_up_to == 3
    allocation = Allocation(1, 2, 1.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        allocation.maximum = 5  # type: ignore[misc]
    assert {allocation: "zone-a"}[Allocation(1, 2, 1.5)] == "zone-a"
    assert not hasattr(allocation, "__dict__")  # slotted: one per zone per sync, kept small


HINTS_BY_ZONE_CASES = {
    "empty": ({}, maxima(), {}, {}),
    "single zone hint": (
        eps(ep("zone-a", "zone-a")),
        maxima(zone_a=3),
        {"zone-a": 1},
        {"zone-a": 1},
    ),
    "single zone hint with 1 unready endpoint and 1 unknown endpoint": (
        eps(
            ep("zone-a", "zone-a"),
            ep("zone-a", "zone-a", ready=False),
            ep("zone-a", "zone-a", ready=None),
        ),
        maxima(zone_a=3),
        {"zone-a": 1},
        {"zone-a": 1},
    ),
    "multiple zone hints": (
        eps(ep("zone-a", "zone-a"), ep("zone-a", "zone-b"), ep("zone-b", "zone-b")),
        maxima(zone_a=3, zone_b=3, zone_c=3),
        {"zone-a": 1, "zone-b": 1, "zone-c": 1},
        {"zone-a": 1, "zone-b": 2},
    ),
    "invalid by zones that no longer requires any allocations": (
        eps(ep("zone-a", "zone-non-existent")),
        maxima(zone_a=3),
        {"zone-a": 1, "zone-b": 1, "zone-c": 1},
        None,
    ),
    "invalid by endpoints with nil hints": (
        eps(ep("zone-a")),
        maxima(zone_a=3),
        {},
        None,
    ),
    "invalid by endpoint with no hints": (
        eps({"zone": "zone-a", "hints": {"forZones": []}, "conditions": {"ready": True}}),
        maxima(zone_a=3),
        {},
        None,
    ),
    "invalid by hints that would make minimum allocations impossible": (
        eps(ep("zone-a", "zone-a"), ep("zone-a", "zone-a")),
        maxima(zone_a=2),
        {"zone-a": 1},
        None,
    ),
}


@pytest.mark.parametrize(
    ("slice_", "allocations", "allocated", "expected"),
    HINTS_BY_ZONE_CASES.values(),
    ids=HINTS_BY_ZONE_CASES.keys(),
)
def test_get_hints_by_zone(
    slice_: dict[str, Any],
    allocations: dict[str, Allocation],
    allocated: dict[str, int],
    expected: dict[str, int] | None,
) -> None:
    before = copy.deepcopy(slice_)
    assert hints_by_zone(slice_, allocated, allocations) == expected
    assert slice_ == before


def test_remove_hints_from_slices() -> None:
    create = eps(ep("zone-a", "zone-a"), ep("zone-b", "zone-b", ready=False))
    update = eps(ep("zone-a", "zone-b"))
    with_hints = eps(ep("zone-a"), ep("zone-b", "zone-b"))
    without_hints = eps(ep("zone-a"), ep("zone-b", ready=False))
    unchanged = [with_hints, without_hints]
    before = copy.deepcopy(unchanged)
    si = SliceInfo("ns/svc", "IPv4", to_create=[create], to_update=[update], unchanged=unchanged)

    to_create, to_update = remove_hints_from_slices(si)

    assert unchanged == before
    assert to_create == [eps(ep("zone-a"), ep("zone-b", ready=False))]
    assert to_update == [eps(ep("zone-a")), eps(ep("zone-a"), ep("zone-b"))]
    assert to_update[1] is not with_hints
    assert si.unchanged == [without_hints]
    assert si.unchanged[0] is without_hints
