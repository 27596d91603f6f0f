"""Imported EndpointSlices (KEP-1645): one source cluster's slices planned for a ServiceImport
by the same planner as every other slice."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig
from endpointslice_operator.reconciler.mcs import (
    derived_service_name,
    desired_from_source_slices,
    plan_import_slices,
)
from endpointslice_operator.reconciler.plan import Plan

from .harness import FakeClient

NS = "demo"
OURS = "endpointslice-operator.io"
CONFIG = ReconcilerConfig(controller_name=OURS)
IMPORT = {
    "apiVersion": "multicluster.x-k8s.io/v1beta1",
    "kind": "ServiceImport",
    "metadata": {"name": "web", "namespace": NS, "uid": "import-uid"},
}
HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}
METRICS = {"name": "metrics", "port": 9090, "protocol": "TCP"}


def endpoint(ip: str, ready: bool = True, node: str = "node-a") -> dict[str, Any]:
    return {
        "addresses": [ip],
        "conditions": {"ready": ready, "serving": ready, "terminating": False},
        "nodeName": node,
        "zone": "zone-a",
        "targetRef": {"kind": "Pod", "namespace": NS, "name": f"pod-{ip}", "uid": f"u-{ip}"},
        "hints": {"forZones": [{"name": "zone-a"}]},
    }


def source_slice(
    name: str,
    endpoints: list[dict[str, Any]],
    ports: list[dict[str, Any]] | None = None,
    address_type: str = "IPv4",
    manager: str = "endpointslice-controller.k8s.io",
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {
                "kubernetes.io/service-name": "web",
                "endpointslice.kubernetes.io/managed-by": manager,
            },
        },
        "addressType": address_type,
        "ports": ports if ports is not None else [HTTP],
        "endpoints": endpoints,
    }


def apply(client: FakeClient, plan: Plan) -> None:
    for created in plan.creates:
        client.create(created)
    for updated in plan.updates:
        client.update(updated)
    for deleted in plan.deletes:
        client.delete(deleted)


def converge(client: FakeClient, cluster: str, sources: Any, served: set[str]) -> Plan:
    plan = plan_import_slices(IMPORT, cluster, sources, client.list(), CONFIG, served_ports=served)
    apply(client, plan)
    again = plan_import_slices(IMPORT, cluster, sources, client.list(), CONFIG, served_ports=served)
    assert (again.creates, again.updates, again.deletes) == ([], [], []), "not idempotent"
    return plan


def test_desired_endpoints_from_every_manager_once() -> None:
    sources = [
        source_slice("b", [endpoint("10.1.0.1", ready=False), endpoint("10.1.0.2")]),
        source_slice("a", [endpoint("10.1.0.1", ready=True)], manager="someone-else"),
        source_slice("c", [endpoint("fd00::1")], address_type="IPv6"),
        source_slice("d", [{"addresses": ["web.example"]}], address_type="FQDN"),
        source_slice("e", [endpoint("10.1.0.9")], ports=[METRICS]),  # metrics not served
        source_slice("f", [{"addresses": []}, "junk"]),  # type: ignore[list-item]
    ]
    desired = desired_from_source_slices(sources, {"http"})
    (group,) = desired.groups["IPv4"].values()
    ready = {e.addresses[0]: e.state[2] for e in group.endpoints.values()}
    assert ready == {"10.1.0.1": True, "10.1.0.2": True}
    assert desired.endpoint_count("IPv6") == 1
    for e in group.endpoints.values():
        assert e.state[0] is None  # nodeName names a node of another cluster
        assert e.state[1] == "zone-a"
        assert "hints" not in e.to_dict()


def test_plan_creates_labelled_slices_owned_by_the_import() -> None:
    client = FakeClient()
    sources = [source_slice("web-1", [endpoint("10.1.0.1"), endpoint("10.1.0.2", ready=False)])]
    plan = converge(client, "east", sources, {"http"})
    assert len(plan.creates) == 1
    (written,) = client.list()
    assert written["metadata"]["labels"] == {
        "multicluster.kubernetes.io/service-name": "web",
        "multicluster.kubernetes.io/source-cluster": "east",
        "kubernetes.io/service-name": derived_service_name(NS, "web"),
        "endpointslice.kubernetes.io/managed-by": OURS,
    }
    (ref,) = written["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "ServiceImport",
        "web",
        "import-uid",
        True,
    )
    assert ref["apiVersion"] == "multicluster.x-k8s.io/v1beta1"
    assert written["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    by_ip = {e["addresses"][0]: e for e in written["endpoints"]}
    assert by_ip["10.1.0.1"]["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert by_ip["10.1.0.2"]["conditions"]["ready"] is False
    assert "nodeName" not in by_ip["10.1.0.1"] and "hints" not in by_ip["10.1.0.1"]


def test_readiness_flip_is_one_update_and_scale_up_packs() -> None:
    client = FakeClient()
    converge(client, "east", [source_slice("s", [endpoint("10.1.0.1")])], {"http"})
    flipped = converge(
        client, "east", [source_slice("s", [endpoint("10.1.0.1", ready=False)])], {"http"}
    )
    assert (len(flipped.creates), len(flipped.updates), len(flipped.deletes)) == (0, 1, 0)
    many = [endpoint(f"10.2.{i // 200}.{i % 200}") for i in range(250)]
    converge(
        client, "east", [source_slice("s1", many[:100]), source_slice("s2", many[100:])], {"http"}
    )
    sizes = sorted(len(s["endpoints"]) for s in client.list())
    assert sum(sizes) == 250 and max(sizes) <= 100


def test_each_slice_holds_one_source_cluster() -> None:
    client = FakeClient()
    converge(client, "east", [source_slice("s", [endpoint("10.1.0.1")])], {"http"})
    converge(
        client, "west", [source_slice("s", [endpoint("10.9.0.1"), endpoint("10.9.0.2")])], {"http"}
    )
    by_cluster = {
        s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"]: {
            e["addresses"][0] for e in s["endpoints"]
        }
        for s in client.list()
    }
    assert by_cluster == {"east": {"10.1.0.1"}, "west": {"10.9.0.1", "10.9.0.2"}}
    # East stops exporting: its slices go, west's stay.
    gone = converge(client, "east", None, set())
    assert len(gone.deletes) == 1
    assert {
        s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"] for s in client.list()
    } == {"west"}
    # No endpoints at all: no placeholder slice.
    empty = converge(client, "west", [], {"http"})
    assert len(empty.deletes) == 1 and not client.list()


def test_a_port_not_served_by_a_cluster_leaves_its_slices() -> None:
    client = FakeClient()
    sources = [source_slice("s", [endpoint("10.1.0.1")], ports=[HTTP, METRICS])]
    converge(client, "east", sources, {"http", "metrics"})
    narrowed = converge(client, "east", sources, {"http"})
    assert len(narrowed.creates) + len(narrowed.updates) >= 1
    (written,) = client.list()
    assert written["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_foreign_labels_are_rewritten() -> None:
    client = FakeClient()
    converge(client, "east", [source_slice("s", [endpoint("10.1.0.1")])], {"http"})
    (written,) = client.list()
    written["metadata"]["labels"]["extra"] = "x"
    client.update(written)
    again = converge(client, "east", [source_slice("s", [endpoint("10.1.0.1")])], {"http"})
    assert len(again.updates) == 1
    assert "extra" not in client.list()[0]["metadata"]["labels"]
