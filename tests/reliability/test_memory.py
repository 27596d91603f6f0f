"""State kept per Service is released once the Service has nothing left (found by the soak)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker
from tests.reliability.invariants import ENABLED, LABEL_MANAGED_BY, MANAGED_BY, SELECTOR


def _slice(name: str, uid: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": f"{name}-x",
            "uid": uid,
            "resourceVersion": "1",
            "generation": 1,
            "labels": {"kubernetes.io/service-name": name, LABEL_MANAGED_BY: MANAGED_BY},
        },
        "addressType": "IPv4",
    }


def test_the_tracker_forgets_services_whose_slices_are_all_deleted() -> None:
    """What an opt-out does: our slices are deleted (expected) and their deletions observed."""
    tracker = EndpointSliceTracker()
    router = EventRouter(
        indexes=Indexes(
            enabled_annotation=ENABLED, selector_annotation=SELECTOR, managed_by=MANAGED_BY
        ),
        tracker=tracker,
        topology=None,
        batch_period=0.0,
    )
    for i in range(100):
        written = _slice(f"svc-{i}", f"uid-{i}")
        router.on_slice("ADDED", written)
        tracker.update(written)
        tracker.expect_deletion(written)
        router.on_slice("DELETED", written)
    assert len(tracker) == 0
