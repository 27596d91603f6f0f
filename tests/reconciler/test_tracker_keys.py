"""``reconciler/tracking/tracker.py``: owners and slices without a namespace or a name are
filed under ``""``, and found there."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

SELECTOR_LABEL = "endpointselector.example/name"


def _slice(labels: dict[str, str], namespace: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "s-1", "uid": "u-1", "generation": 1, "labels": labels}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"metadata": metadata}


def test_a_service_without_namespace_finds_its_slices_without_one() -> None:
    tracker = EndpointSliceTracker()
    tracker.update(_slice({"kubernetes.io/service-name": "web"}, None))
    service = {"kind": "Service", "metadata": {"name": "web"}}
    assert tracker.stale_slices(service, [])  # written, missing from the list
    assert not tracker.stale_slices(service, [_slice({}, None)])


def test_a_service_without_name_finds_the_slices_without_a_service_name() -> None:
    tracker = EndpointSliceTracker()
    tracker.update(_slice({}, "ns"))
    service = {"kind": "Service", "metadata": {"namespace": "ns"}}
    assert tracker.stale_slices(service, [])
    assert tracker.generations("ns", "") == {"u-1": 1}


def test_a_slice_of_another_owner_kind_without_namespace_is_filed_under_it() -> None:
    tracker = EndpointSliceTracker(owner_labels=[("EndpointSelector", SELECTOR_LABEL, "es:")])
    tracker.update(_slice({SELECTOR_LABEL: "sel"}, None))
    assert tracker.generations("", "es:sel") == {"u-1": 1}
    selector = {"kind": "EndpointSelector", "metadata": {"name": "sel"}}
    assert tracker.stale_slices(selector, [])
