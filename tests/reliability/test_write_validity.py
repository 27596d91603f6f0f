"""Every write the reconciler plans is one the API server accepts.

Random Services (ports, families, headless, publishNotReadyAddresses, topology hints, labels),
nodes and pods (some with addresses the API refuses in a slice: loopback, link-local, ...) go
into the emulator's store, which validates them like kube-apiserver; the plan for the Service
is applied through the same store (POST with generateName, PUT with the
resourceVersion, DELETE), then the pods change and the next plan is applied on top of the
slices the first one wrote. Any write the API would reject fails the property with its 422.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from endpointslice_operator.reconciler import ReconcilerConfig, plan_service
from endpointslice_operator.testing import Store
from tests.reliability.invariants import LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MANAGED_BY

NS = "props"
JSON = dict[str, Any]

label_values = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
port_names = st.sampled_from(["http", "metrics", "dns", "grpc-web", "a"])
protocols = st.sampled_from(["TCP", "UDP", "SCTP"])


@st.composite
def services(draw: st.DrawFn) -> JSON:
    headless = draw(st.booleans())
    count = draw(st.integers(0 if headless else 1, 4))
    names = draw(st.lists(port_names, min_size=count, max_size=count, unique=True))
    ports = [
        {
            "name": name if count > 1 or draw(st.booleans()) else "",
            "port": draw(st.integers(1, 65535)),
            "targetPort": draw(st.one_of(st.integers(1, 65535), port_names)),
            "protocol": draw(protocols),
        }
        for name in names
    ]
    for port in ports:
        if not port["name"]:
            del port["name"]
    families = draw(st.sampled_from([["IPv4"], ["IPv6"], ["IPv4", "IPv6"], ["IPv6", "IPv4"]]))
    spec: JSON = {
        "selector": {"app": "web"},
        "ports": ports,
        "ipFamilies": families,
        "ipFamilyPolicy": "RequireDualStack" if len(families) == 2 else "SingleStack",
        "publishNotReadyAddresses": draw(st.booleans()),
    }
    if headless:
        spec["clusterIP"] = "None"
    annotations = {}
    if draw(st.booleans()):
        annotations["service.kubernetes.io/topology-mode"] = "Auto"
    labels = draw(st.dictionaries(st.sampled_from(["team", "tier", "x.io/owner"]), label_values))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": NS, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


# Addresses the API server refuses in an EndpointSlice (unspecified, loopback, link-local,
# link-local multicast); the reconciler must leave them out. (Only canonical forms: v1.36,
# which the emulator models, refuses any other form in a pod already.)
SPECIAL_IPS = {
    "4": ["0.0.0.0", "127.0.0.1", "127.1.2.3", "169.254.1.1", "224.0.0.5"],
    "6": ["::", "::1", "fe80::1", "febf:ffff::2", "ff02::1", "ff12::2"],
}


@st.composite
def pod_ip(draw: st.DrawFn, serial: int, family: str) -> str:
    if draw(st.integers(0, 7)) == 0:
        return draw(st.sampled_from(SPECIAL_IPS[family]))
    return f"10.0.{serial // 200}.{serial % 200 + 1}" if family == "4" else f"fd00::{serial + 1:x}"


@st.composite
def pods(draw: st.DrawFn, serial: int, nodes: list[str]) -> JSON:
    families = draw(st.sampled_from([("4",), ("6",), ("4", "6"), ("6", "4")]))
    ips = [draw(pod_ip(serial, f)) for f in families]
    spec: JSON = {
        "containers": [
            {
                "name": "main",
                "image": "example/app:1",
                "ports": [
                    {"name": name, "containerPort": draw(st.integers(1, 65535)), "protocol": proto}
                    for name, proto in draw(
                        st.lists(
                            st.tuples(port_names, protocols), max_size=3, unique_by=lambda p: p[0]
                        )
                    )
                ],
            }
        ]
    }
    node = draw(st.sampled_from([*nodes, None]))
    if node is not None:
        spec["nodeName"] = node
    if draw(st.booleans()):
        spec["hostname"] = draw(label_values)
        spec["subdomain"] = "web"
    ready = draw(st.booleans())
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{serial}", "namespace": NS, "labels": {"app": "web"}},
        "spec": spec,
        "status": {
            "phase": draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"])),
            "podIP": ips[0],
            "podIPs": [{"ip": ip} for ip in ips],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    }


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[JSON, list[JSON], list[JSON], list[JSON], int]:
    zones = draw(
        st.lists(st.sampled_from(["zone-a", "zone-b", "zone-c", None]), min_size=1, max_size=4)
    )
    nodes: list[JSON] = []
    for i, zone in enumerate(zones):
        labels = {"kubernetes.io/hostname": f"node-{i}"}
        if zone is not None:
            labels["topology.kubernetes.io/zone"] = zone
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}", "labels": labels},
                "status": {
                    "allocatable": {"cpu": draw(st.sampled_from(["1", "2", "500m", "16"]))},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    names = [n["metadata"]["name"] for n in nodes]
    first = [draw(pods(i, names)) for i in range(draw(st.integers(0, 25)))]
    second = [draw(pods(100 + i, names)) for i in range(draw(st.integers(0, 25)))]
    keep = draw(st.lists(st.booleans(), min_size=len(first), max_size=len(first)))
    second = [p for p, kept in zip(first, keep, strict=True) if kept] + second
    return draw(services()), nodes, first, second, draw(st.integers(1, 6))


def apply(store: Store, service: JSON, pod_bodies: list[JSON], config: ReconcilerConfig) -> None:
    for name in {p["metadata"]["name"] for p in store.list("pods", NS)} - {
        p["metadata"]["name"] for p in pod_bodies
    }:
        store.delete("pods", NS, name)
    for body in pod_bodies:
        if store.get("pods", NS, body["metadata"]["name"]) is None:
            store.create(body)
    existing = [
        s
        for s in store.list("endpointslices", NS)
        if s["metadata"]["labels"].get(LABEL_SERVICE_NAME) == "web"
        and s["metadata"]["labels"].get(LABEL_MANAGED_BY) == MANAGED_BY
    ]
    nodes: dict[str, JSON] = {n["metadata"]["name"]: n for n in store.list("nodes")}
    plan = plan_service(service, store.list("pods", NS), nodes, existing, config)
    for created in plan.creates:
        store.create(created)  # raises ApiError(422) if the API would refuse it
    for updated in plan.updates:
        store.update(updated)
    for deleted in plan.deletes:
        store.delete("endpointslices", NS, deleted["metadata"]["name"])
    # and the result is stable: planning again (with a fresh TopologyCache) writes nothing
    again = [
        s
        for s in store.list("endpointslices", NS)
        if s["metadata"]["labels"].get(LABEL_SERVICE_NAME) == "web"
    ]
    assert plan_service(service, store.list("pods", NS), nodes, again, config).is_empty


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_planned_write_passes_api_validation(
    scenario: tuple[JSON, list[JSON], list[JSON], list[JSON], int],
) -> None:
    service_body, nodes, first, second, max_per_slice = scenario
    store = Store()
    store.create_namespace(NS)
    for node in nodes:
        store.create(node)
    service = store.create(service_body)
    config = ReconcilerConfig(controller_name=MANAGED_BY, max_endpoints_per_slice=max_per_slice)
    apply(store, service, first, config)
    apply(store, service, second, config)
