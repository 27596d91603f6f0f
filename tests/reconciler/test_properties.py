"""Property-based tests of the planner's invariants on random Services, pods and slices.

Each example converges a random Service against random pre-existing state (slices planned for
an earlier random pod set, plus foreign-owned and unsupported-family slices), then checks:
every desired endpoint appears exactly once in its group; no slice exceeds the maximum;
applying a plan and planning again gives an empty plan; a single pod change costs at most one
write per address type; slices not owned by the Service are never updated; inputs are never
mutated (``Harness.reconcile`` compares deep copies of every input after planning).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import Harness, Json

NS = "prop"
NODES = [
    {"metadata": {"name": f"node-{i}", "labels": {"topology.kubernetes.io/zone": f"z{i % 2}"}}}
    for i in range(3)
]
FAMILIES = st.sampled_from([["IPv4"], ["IPv6"], ["IPv4", "IPv6"]])


@st.composite
def pod_specs(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "v4": draw(st.booleans()),
        "v6": draw(st.booleans()),
        "ready": draw(st.booleans()),
        "terminating": draw(st.integers(0, 5)) == 0,
        "phase": draw(st.sampled_from(["Running", "Running", "Running", "Pending", "Failed"])),
        # node-3 does not exist: such pods are skipped with an error (or kept, when publishing
        # not-ready addresses).
        "node": draw(st.integers(0, 3)),
        "port": draw(st.sampled_from([8080, 8080, 8081])),
    }


def make_pod(index: int, spec: dict[str, Any]) -> Json:
    ips = []
    if spec["v4"]:
        ips.append({"ip": f"10.0.{index // 250}.{index % 250 + 1}"})
    if spec["v6"]:
        ips.append({"ip": f"fd00::{index + 1:x}"})
    metadata: Json = {"namespace": NS, "name": f"pod-{index}", "uid": f"uid-{index}"}
    if spec["terminating"]:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "metadata": metadata,
        "spec": {
            "nodeName": f"node-{spec['node']}",
            "containers": [
                {"ports": [{"name": "http", "containerPort": spec["port"], "protocol": "TCP"}]}
            ],
        },
        "status": {
            "phase": spec["phase"],
            "podIPs": ips,
            "conditions": [{"type": "Ready", "status": "True" if spec["ready"] else "False"}],
        },
    }


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    named = draw(st.booleans())
    service: Json = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": NS, "uid": "svc-uid"},
        "spec": {
            "ipFamilies": draw(FAMILIES),
            "publishNotReadyAddresses": draw(st.booleans()),
            "ports": [
                {
                    "name": "http",
                    "port": 80,
                    "targetPort": "http" if named else 8080,
                    "protocol": "TCP",
                }
            ],
        },
    }
    before = draw(st.lists(pod_specs(), max_size=25))
    after = draw(st.lists(pod_specs(), max_size=25))
    return {
        "service": service,
        "max": draw(st.integers(1, 8)),
        "before": [make_pod(i, s) for i, s in enumerate(before)],
        "after": [make_pod(i, s) for i, s in enumerate(after)],
        "foreign": draw(st.booleans()),
        "legacy": draw(st.booleans()),
        "flip": draw(st.integers(0, 24)),
    }


def _stray(service: Json, name: str, address_type: str, uid: str) -> Json:
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": "svc"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "name": "svc",
                    "uid": uid,
                    "controller": True,
                }
            ],
        },
        "addressType": address_type,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": ["10.9.9.9"],
                "conditions": {"ready": True},
                "targetRef": {"kind": "Pod", "namespace": NS, "name": "pod-0"},
            }
        ],
    }


def _expected(service: Json, pods: list[Json]) -> dict[tuple[str, int], Counter[Any]]:
    """What the slices must hold, worked out from the objects alone (not from the reconciler's
    own ``desired_from_service_pods``): (address type, target port) -> Counter of (addresses,
    pod name, ready), by upstream's rules as written in its reconciler: Failed / Succeeded pods
    and pods without an address of the family are left out; so is a pod on a Node that does
    not exist, unless the Service publishes not-ready addresses; a named target port resolves
    through the pod's container port of that name; ``ready`` is publishNotReadyAddresses, or
    the Ready condition while not terminating."""
    spec = service["spec"]
    publish_not_ready = spec["publishNotReadyAddresses"]
    target = spec["ports"][0]["targetPort"]
    nodes = {node["metadata"]["name"] for node in NODES}
    expected: dict[tuple[str, int], Counter[Any]] = {}
    for pod in pods:
        status, pod_spec = pod["status"], pod["spec"]
        if status["phase"] in ("Failed", "Succeeded"):
            continue
        if pod_spec["nodeName"] not in nodes and not publish_not_ready:
            continue
        if isinstance(target, str):
            (container,) = pod_spec["containers"]
            port = next(p["containerPort"] for p in container["ports"] if p["name"] == target)
        else:
            port = target
        terminating = "deletionTimestamp" in pod["metadata"]
        pod_ready = status["conditions"][0]["status"] == "True"
        ready = publish_not_ready or (pod_ready and not terminating)
        for family in spec["ipFamilies"]:
            ips = [ip["ip"] for ip in status["podIPs"] if (":" in ip["ip"]) == (family == "IPv6")]
            if ips:
                group = expected.setdefault((family, port), Counter())
                group[(tuple(ips), pod["metadata"]["name"], ready)] += 1
    return expected


def _check_converged(h: Harness, service: Json, pods: list[Json]) -> None:
    stored = h.client.list()
    got: dict[tuple[str, int], Counter[Any]] = {}
    for slice_ in stored:
        assert len(slice_["endpoints"]) <= h.config.max_endpoints_per_slice
        assert slice_["metadata"]["ownerReferences"][0]["uid"] == "svc-uid"
        if not slice_["endpoints"]:
            continue  # a placeholder (no endpoints of that family)
        ((port, name),) = [(p["port"], p["name"]) for p in slice_["ports"]]
        assert name == "http"
        group = got.setdefault((slice_["addressType"], port), Counter())
        for ep in slice_["endpoints"]:
            key = (tuple(ep["addresses"]), ep["targetRef"]["name"], ep["conditions"]["ready"])
            group[key] += 1
    assert got == _expected(service, pods)


def _writes_per_type(plan: Any) -> Counter[str]:
    return Counter(s["addressType"] for s in (*plan.creates, *plan.updates, *plan.deletes))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_planner_invariants(case: dict[str, Any]) -> None:
    service = case["service"]
    h = Harness(
        nodes=copy.deepcopy(NODES),
        max_endpoints_per_slice=case["max"],
        config_overrides={"topology_hints": False},
    )

    # Earlier state: what the planner made for other pods, plus stray slices.
    h.reconcile(service, case["before"], [], expect_errors=True)
    if case["foreign"]:
        h.client.create(_stray(service, "foreign", "IPv4", "other-uid"))
    if case["legacy"]:
        h.client.create(_stray(service, "legacy", "IP", "svc-uid"))
    existing = h.client.list()
    foreign_names = {"foreign"} if case["foreign"] else set()

    plan = h.reconcile(service, case["after"], existing, expect_errors=True)
    assert not {s["metadata"]["name"] for s in plan.updates} & foreign_names
    _check_converged(h, service, case["after"])

    replan = h.reconcile(service, case["after"], h.client.list(), expect_errors=True)
    assert replan.is_empty, replan

    # One pod changes: its readiness flips, or it goes away.
    if case["after"]:
        pods = copy.deepcopy(case["after"])
        index = case["flip"] % len(pods)
        condition = pods[index]["status"]["conditions"][0]
        condition["status"] = "False" if condition["status"] == "True" else "True"
        flipped = h.reconcile(service, pods, h.client.list(), expect_errors=True)
        assert all(n <= 1 for n in _writes_per_type(flipped).values()), flipped
        _check_converged(h, service, pods)

        del pods[index]
        removed = h.reconcile(service, pods, h.client.list(), expect_errors=True)
        assert all(n <= 1 for n in _writes_per_type(removed).values()), removed
        _check_converged(h, service, pods)
