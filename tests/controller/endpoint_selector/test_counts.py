"""The endpoint counts of an EndpointSelector's status: what a sync published, and when the
status timer writes them."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointCounts,
    counts_patch,
    endpoint_counts,
    published_slices,
)
from endpointslice_operator.reconciler.plan import Plan


def slice_of(name: str, *ready: bool | None) -> dict[str, Any]:
    endpoints = []
    for i, flag in enumerate(ready):
        conditions = {} if flag is None else {"ready": flag}
        endpoints.append({"addresses": [f"10.0.0.{i + 1}"], "conditions": conditions})
    return {"metadata": {"name": name}, "endpoints": endpoints}


def test_counts_endpoints_and_those_not_unready() -> None:
    # ready unset reads as ready (as kube-proxy reads it); each family's slice counts.
    assert endpoint_counts([slice_of("a", True, False, None), slice_of("b", True)]) == (3, 4)
    assert endpoint_counts([{"metadata": {"name": "empty"}, "endpoints": None}]) == (0, 0)


def test_published_slices_are_the_existing_ones_with_the_plan_applied() -> None:
    existing = [slice_of("keep", True), slice_of("change", True), slice_of("drop", True, True)]
    plan = Plan(
        "endpointselector:ns/s",
        creates=[
            {"metadata": {"generateName": "s-"}, "endpoints": slice_of("x", False)["endpoints"]}
        ],
        updates=[slice_of("change", True, False)],
        deletes=[existing[2]],
    )
    published = published_slices(existing, plan)
    assert [s["metadata"].get("name") for s in published] == ["keep", "change", None]
    assert endpoint_counts(published) == EndpointCounts(ready=2, total=4)


def test_counts_are_written_only_when_known_and_different() -> None:
    counts = EndpointCounts(ready=1, total=2)
    assert counts_patch(None, {}) is None
    assert counts_patch(counts, None) == {"endpoints": 2, "readyEndpoints": 1}
    assert counts_patch(counts, {"endpoints": 2, "readyEndpoints": 2}) == {
        "endpoints": 2,
        "readyEndpoints": 1,
    }
    assert counts_patch(counts, {"endpoints": 2, "readyEndpoints": 1, "conditions": []}) is None


def test_junk_endpoints_are_skipped_not_the_ones_after_them() -> None:
    junk = {"metadata": {"name": "j"}, "endpoints": ["junk", {"conditions": None}, None]}
    assert endpoint_counts([junk]) == EndpointCounts(ready=1, total=1)
    assert endpoint_counts([{"metadata": {"name": "none"}}, slice_of("a", False)]) == (0, 1)


def test_shown_counts_need_both_numbers() -> None:
    assert counts_patch(EndpointCounts(0, 0), {"endpoints": 0}) == {
        "endpoints": 0,
        "readyEndpoints": 0,
    }
    assert counts_patch(EndpointCounts(0, 0), {"readyEndpoints": 0}) == {
        "endpoints": 0,
        "readyEndpoints": 0,
    }
    assert counts_patch(EndpointCounts(0, 0), {"endpoints": 0, "readyEndpoints": 0}) is None


def test_a_plan_slice_without_a_name_replaces_nothing() -> None:
    existing = [slice_of("keep", True), {"metadata": None, "endpoints": []}]
    plan = Plan("endpointselector:ns/s", updates=[{"metadata": {}, "endpoints": []}])
    published = published_slices(existing, plan)
    assert len(published) == 3 and published[0] is existing[0]
