"""Planner figures: a 10,000-pod Service planned cold, at steady state, and after one flip.

The baseline of each figure is the floor any planner pays: building the plain endpoint dicts
for the same pods (from the same ``PodRecord``s the operator caches), timed in the same run.
The planner is timed as the operator calls it: ``desired_from_service_pods`` plus
``Reconciler.plan`` with a long-lived ``Reconciler`` (whose parse cache is warm at steady state);
``plan_noop_10k_cold`` is the same no-op sync with a fresh ``Reconciler`` (after a restart).

The library path: ``plan_service_create_10k`` and ``plan_service_noop_10k`` call
``plan_service`` with the API's Pod dicts, as a library user planning from an informer's cache
does (the same dicts on every call: their records come from the shared ``PodRecordCache``);
``plan_service_create_10k_cold`` empties that cache first, so every pod is parsed, IPs
included (a process's first call). Their floor builds the same plain endpoint dicts straight
from those Pod dicts.
"""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import (
    Plan,
    PodRecord,
    Reconciler,
    ReconcilerConfig,
    desired_from_service_pods,
    plan_service,
    pod_record,
)
from endpointslice_operator.reconciler.records import SHARED_RECORD_CACHE
from endpointslice_operator.reconciler.slices import SliceParseCache
from endpointslice_operator.testing.objects import running_pod

from ..figure import Figure, best_of_interleaved

PODS = 10_000
NODES = 300
ZONES = ("zone-a", "zone-b", "zone-c")
NAMESPACE = "bench"


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "web",
            "namespace": NAMESPACE,
            "uid": "svc-uid",
            "labels": {"app": "web"},
        },
        "spec": {
            "clusterIP": "10.96.0.10",
            "ipFamilies": ["IPv4"],
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def _node(i: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"node-{i}",
            "labels": {"topology.kubernetes.io/zone": ZONES[i % len(ZONES)]},
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "4"},
        },
    }


def _pod(i: int, *, ready: bool = True) -> dict[str, Any]:
    ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    pod = running_pod(
        f"web-{i:05d}",
        NAMESPACE,
        {"app": "web", "pod-template-hash": "5d8f7c"},
        ip,
        f"node-{i % NODES}",
        ready=ready,
    )
    pod["metadata"].update(uid=f"pod-uid-{i:05d}", resourceVersion=str(1000 + i))
    return pod


def plain_endpoints(records: list[PodRecord], zones: dict[str, str]) -> list[dict[str, Any]]:
    """The floor: one plain endpoint dict per pod, nothing else."""
    return [
        {
            "addresses": list(r.ipv4),
            "conditions": {
                "ready": r.ready and not r.terminating,
                "serving": r.ready,
                "terminating": r.terminating,
            },
            "targetRef": {"kind": "Pod", "namespace": r.namespace, "name": r.name, "uid": r.uid},
            "nodeName": r.node_name,
            "zone": zones[r.node_name],
        }
        for r in records
    ]


def plain_endpoints_from_dicts(
    pods: list[dict[str, Any]], zones: dict[str, str]
) -> list[dict[str, Any]]:
    """The library path's floor: one plain endpoint dict per Pod dict, nothing checked."""
    out = []
    for pod in pods:
        meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
        ready = any(
            c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])
        )
        out.append(
            {
                "addresses": [status["podIPs"][0]["ip"]],
                "conditions": {"ready": ready, "serving": ready, "terminating": False},
                "targetRef": {
                    "kind": "Pod",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
                "nodeName": spec["nodeName"],
                "zone": zones[spec["nodeName"]],
            }
        )
    return out


def _apply(plan: Plan, existing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the API server would hold after the plan (names, uids, versions assigned)."""
    by_name = {s["metadata"]["name"]: s for s in existing}
    for number, created in enumerate(plan.creates):
        obj = dict(created)
        meta = dict(obj["metadata"])
        meta["name"] = f"{meta.pop('generateName')}{number:05d}"
        meta["uid"] = f"slice-uid-{number}"
        meta["resourceVersion"] = "1"
        obj["metadata"] = meta
        by_name[meta["name"]] = obj
    for updated in plan.updates:
        obj = dict(updated)
        meta = dict(obj["metadata"])
        meta["resourceVersion"] = str(int(meta.get("resourceVersion") or "1") + 1)
        obj["metadata"] = meta
        by_name[meta["name"]] = obj
    for deleted in plan.deletes:
        by_name.pop(deleted["metadata"]["name"], None)
    return list(by_name.values())


def collect(mode: str) -> list[Figure]:
    runs = {"quick": 9, "full": 25}.get(mode, 9)
    service = _service()
    nodes = [_node(i) for i in range(NODES)]
    zones = {
        n["metadata"]["name"]: n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes
    }
    pod_dicts = [_pod(i) for i in range(PODS)]
    records = [pod_record(pod) for pod in pod_dicts]
    config = ReconcilerConfig(controller_name="endpointslice-operator.example.io")
    reconciler = Reconciler(config, parse_cache=SliceParseCache())

    def plan(pods: list[PodRecord], existing: list[dict[str, Any]], fresh: bool = False) -> Plan:
        planner = Reconciler(config, parse_cache=SliceParseCache()) if fresh else reconciler
        desired = desired_from_service_pods(service, pods, nodes)
        return planner.plan(service, desired, existing)

    created = plan(records, [], fresh=True)
    assert len(created.creates) == PODS // config.max_endpoints_per_slice
    existing = _apply(created, [])
    assert plan(records, existing).is_empty
    flipped = list(records)
    flipped[PODS // 2] = pod_record(_pod(PODS // 2, ready=False))
    one_flip = plan(flipped, existing)
    assert one_flip.write_count == 1 and len(one_flip.updates) == 1

    library_existing = _apply(plan_service(service, pod_dicts, nodes, [], config), [])
    assert plan_service(service, pod_dicts, nodes, library_existing, config).is_empty

    def cold_create() -> object:
        SHARED_RECORD_CACHE.clear()
        return plan_service(service, pod_dicts, nodes, [], config)

    best = best_of_interleaved(
        runs,
        {
            "floor": lambda: plain_endpoints(records, zones),
            "floor_dicts": lambda: plain_endpoints_from_dicts(pod_dicts, zones),
            "library_create": lambda: plan_service(service, pod_dicts, nodes, [], config),
            "library_create_cold": cold_create,
            "library_noop": lambda: plan_service(
                service, pod_dicts, nodes, library_existing, config
            ),
            "create": lambda: plan(records, [], fresh=True),
            "noop": lambda: plan(records, existing),
            # The first sync after a restart: no parsed slices cached yet.
            "noop_cold": lambda: plan(records, existing, fresh=True),
            "flip": lambda: plan(flipped, existing),
        },
    )
    floor = best["floor"]
    ms = 1000.0
    return [
        Figure("plan_create_10k", best["create"] * ms, "ms", floor * ms),
        Figure("plan_noop_10k", best["noop"] * ms, "ms", floor * ms),
        Figure("plan_noop_10k_cold", best["noop_cold"] * ms, "ms", floor * ms),
        Figure(
            "plan_service_create_10k", best["library_create"] * ms, "ms", best["floor_dicts"] * ms
        ),
        Figure(
            "plan_service_create_10k_cold",
            best["library_create_cold"] * ms,
            "ms",
            best["floor_dicts"] * ms,
        ),
        Figure("plan_service_noop_10k", best["library_noop"] * ms, "ms", best["floor_dicts"] * ms),
        Figure("plan_one_flip_10k", best["flip"] * ms, "ms", floor * ms),
    ]
