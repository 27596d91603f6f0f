"""Port of upstream topologycache/sliceinfo_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler.hints.topology import Allocation, SliceInfo


def slice_with_n_endpoints(ready: int, unready: int) -> dict[str, Any]:
    endpoints = [
        {"addresses": [f"10.1.2.{i}"], "conditions": {"ready": i < ready}}
        for i in range(ready + unready)
    ]
    return {"addressType": "IPv4", "endpoints": endpoints}


def count_endpoints(slices: list[dict[str, Any]]) -> int:
    return sum(len(slice_["endpoints"]) for slice_ in slices)


CASES = {
    "empty": (SliceInfo("", ""), 0, 0),
    "empty slice": (SliceInfo("", "", to_create=[slice_with_n_endpoints(0, 0)]), 0, 0),
    "multiple slices": (
        SliceInfo("", "", to_create=[slice_with_n_endpoints(15, 0), slice_with_n_endpoints(8, 0)]),
        23,
        23,
    ),
    "slices for all": (
        SliceInfo(
            "",
            "",
            to_create=[slice_with_n_endpoints(15, 0), slice_with_n_endpoints(8, 0)],
            to_update=[slice_with_n_endpoints(2, 0)],
            unchanged=[slice_with_n_endpoints(100, 0), slice_with_n_endpoints(90, 0)],
        ),
        215,
        215,
    ),
    "slices for all with some unready": (
        SliceInfo(
            "",
            "",
            to_create=[slice_with_n_endpoints(15, 3), slice_with_n_endpoints(5, 4)],
            to_update=[slice_with_n_endpoints(3, 8)],
            unchanged=[slice_with_n_endpoints(98, 2), slice_with_n_endpoints(90, 6)],
        ),
        211,
        234,
    ),
}


@pytest.mark.parametrize(
    ("si", "expected_total_ready", "expected_total"), CASES.values(), ids=CASES.keys()
)
def test_get_total_ready_endpoints(
    si: SliceInfo, expected_total_ready: int, expected_total: int
) -> None:
    # The first assertion checks the helper, as upstream's does.
    total = count_endpoints(si.to_create) + count_endpoints(si.to_update)
    assert total + count_endpoints(si.unchanged) == expected_total
    assert si.total_ready_endpoints() == expected_total_ready


def test_total_ready_endpoints_ignores_missing_conditions() -> None:
    si = SliceInfo(
        "ns/svc",
        "IPv4",
        to_create=[{"endpoints": [{"addresses": ["10.0.0.1"]}, {"conditions": None}]}, {}],
    )
    assert si.total_ready_endpoints() == 0


def test_the_copy_bookkeeping_is_no_part_of_the_constructor_repr_or_equality() -> None:
    """``SliceInfo`` is public; which unchanged slice a pending copy came from is internal
    state: neither a constructor argument, nor shown, nor compared."""
    with pytest.raises(TypeError):
        SliceInfo("ns/svc", "IPv4", [], [], [], {})  # type: ignore[call-arg]
    stale = slice_with_n_endpoints(2, 0)  # ready endpoints without hints: to be rewritten
    si = SliceInfo("ns/svc", "IPv4", unchanged=[stale])
    assert si.allocated_hints_by_zone({"zone-a": Allocation(1, 2, 1.0)}) == {}
    (copy,) = si.to_update
    assert copy == stale and copy is not stale
    assert si == SliceInfo("ns/svc", "IPv4", to_update=[stale])
    assert "_copied_from" not in repr(si) and str(id(copy)) not in repr(si)
