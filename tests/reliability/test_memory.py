"""State kept per Service is released once the Service has nothing left (found by the soak)."""

from __future__ import annotations

from endpointslice_operator.reconciler.tracker import EndpointSliceTracker


def _slice(name: str, uid: str, generation: int = 1) -> dict[str, object]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": f"{name}-x",
            "uid": uid,
            "generation": generation,
            "labels": {"kubernetes.io/service-name": name},
        }
    }


def test_the_tracker_forgets_a_service_whose_slices_are_all_deleted() -> None:
    tracker = EndpointSliceTracker()
    for i in range(100):
        written = _slice(f"svc-{i}", f"uid-{i}")
        tracker.update(written)
        tracker.expect_deletion(written)
        assert tracker.handle_deletion(written)
    assert len(tracker) == 0
