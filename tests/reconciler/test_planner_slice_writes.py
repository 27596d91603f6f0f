"""What the planner writes to existing slices: a deleted slice is never written again for its
hints, an update keeps the annotations someone else put on the slice, and
``Reconciler.forget_slices`` drops the parses of deleted slices."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig, plan_service
from endpointslice_operator.reconciler.desired import desired_from_service_pods
from endpointslice_operator.reconciler.planner import Reconciler
from endpointslice_operator.reconciler.slices import SliceParseCache

NODES = [
    {
        "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "status": {"allocatable": {"cpu": "2"}},
    }
]


def _service(traffic_distribution: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80}],
        "ipFamilies": ["IPv4"],
    }
    if traffic_distribution is not None:
        spec["trafficDistribution"] = traffic_distribution
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
        "spec": spec,
    }


def _pod(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"web-{i}", "namespace": "ns", "uid": f"pod-uid-{i}"},
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "podIP": f"10.0.0.{i}",
            "podIPs": [{"ip": f"10.0.0.{i}"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


CONFIG = ReconcilerConfig(controller_name="test", max_endpoints_per_slice=1)


def _existing() -> list[dict[str, Any]]:
    """Two slices without hints, one pod each, as written before a trafficDistribution."""
    created = plan_service(_service(), [_pod(1), _pod(2)], NODES, [], CONFIG).creates
    for i, slice_ in enumerate(created, start=1):
        slice_["metadata"].update(name=f"web-{i}", uid=f"slice-uid-{i}", resourceVersion="1")
    return created


def test_a_slice_deleted_is_not_also_updated_with_hints() -> None:
    """PreferClose set as web-2 goes: web-1's slice is rewritten with hints, web-2's deleted
    (not rewritten with hints for an endpoint that is gone)."""
    existing = _existing()
    assert [e["targetRef"]["name"] for s in existing for e in s["endpoints"]] == [
        "web-1",
        "web-2",
    ]
    plan = plan_service(_service("PreferClose"), [_pod(1)], NODES, existing, CONFIG)
    assert [s["metadata"]["name"] for s in plan.updates] == ["web-1"]
    assert plan.updates[0]["endpoints"][0]["hints"] == {"forZones": [{"name": "zone-a"}]}
    assert [s["metadata"]["name"] for s in plan.deletes] == ["web-2"]
    assert plan.creates == []


def test_forget_slices_drops_their_parses() -> None:
    cache = SliceParseCache()
    reconciler = Reconciler(CONFIG, parse_cache=cache)
    existing = _existing()
    desired = desired_from_service_pods(_service(), [_pod(1), _pod(2)], NODES)
    reconciler.plan(_service(), desired, existing)
    assert len(cache) == 2
    reconciler.forget_slices(["slice-uid-2", "unknown"])
    assert len(cache) == 1 and cache.endpoint_count == 1


def test_an_update_by_the_slice_controller_keeps_the_slices_other_annotations() -> None:
    existing = _existing()
    existing[0]["metadata"]["annotations"] = {"example.com/note": "kept"}
    pod = _pod(1)
    pod["status"]["conditions"][0]["status"] = "False"  # web-1 not ready: its slice updated
    plan = plan_service(_service(), [pod, _pod(2)], NODES, existing, CONFIG)
    (update,) = plan.updates
    assert update["endpoints"][0]["conditions"]["ready"] is False
    assert update["metadata"]["annotations"] == {"example.com/note": "kept"}


def test_trafficdistribution_hints_reach_the_unchanged_slices_of_a_sync_that_updates_another() -> (
    None
):
    """PreferClose set as web-1 turns unready: web-1's slice is updated for its endpoint,
    web-2's, unchanged otherwise, is updated for the hints it lacks."""
    existing = _existing()
    pod = _pod(1)
    pod["status"]["conditions"][0]["status"] = "False"
    plan = plan_service(_service("PreferClose"), [pod, _pod(2)], NODES, existing, CONFIG)
    updates = {s["metadata"]["name"]: s["endpoints"][0] for s in plan.updates}
    assert sorted(updates) == ["web-1", "web-2"]
    assert updates["web-1"]["conditions"]["ready"] is False
    assert updates["web-2"]["hints"] == {"forZones": [{"name": "zone-a"}]}
