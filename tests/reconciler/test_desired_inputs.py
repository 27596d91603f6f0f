"""``reconciler/desired.py``: nodes with junk metadata, and the hostname of a pod in the
Service's subdomain, with and without namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import ReconcilerConfig, plan_service
from endpointslice_operator.reconciler.desired import node_zones

ZONE = "topology.kubernetes.io/zone"


def test_nodes_with_metadata_that_is_not_a_mapping_have_no_name_or_zone() -> None:
    nodes: list[dict[str, Any]] = [
        {"metadata": "junk"},
        {"metadata": {"name": "n1", "labels": {ZONE: "a"}}},
    ]
    assert node_zones(nodes) == {"n1": "a"}
    by_name: dict[str, dict[str, Any]] = {"n0": {"metadata": ["junk"]}, "n1": nodes[1]}
    assert node_zones(by_name) == {"n0": "", "n1": "a"}


def _service(namespace: str | None, name: str | None = "web") -> dict[str, Any]:
    metadata: dict[str, Any] = {"uid": "svc-uid"}
    if name is not None:
        metadata["name"] = name
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "metadata": metadata,
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "ipFamilies": ["IPv4"]},
    }


def _pod(
    namespace: str | None, subdomain: str | None = "web", phase: str = "Running"
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "web-1", "uid": "pod-uid-1"}
    if namespace is not None:
        metadata["namespace"] = namespace
    spec = {"nodeName": "node-1", "hostname": "host-1"}
    if subdomain is not None:
        spec["subdomain"] = subdomain
    return {
        "metadata": metadata,
        "spec": spec,
        "status": {
            "phase": phase,
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@pytest.mark.parametrize(
    ("service_namespace", "pod_namespace", "hostname"),
    [
        ("ns", "ns", "host-1"),
        ("ns", "other", None),
        (None, None, "host-1"),  # neither has one (objects read from files)
        (None, "ns", None),
    ],
)
def test_a_pods_hostname_is_published_only_in_its_services_namespace(
    service_namespace: str | None, pod_namespace: str | None, hostname: str | None
) -> None:
    config = ReconcilerConfig(controller_name="test", topology_hints=False)
    nodes = [{"metadata": {"name": "node-1"}}]
    plan = plan_service(_service(service_namespace), [_pod(pod_namespace)], nodes, [], config)
    (endpoint,) = plan.creates[0]["endpoints"]
    assert endpoint.get("hostname") == hostname


def test_a_service_without_name_publishes_the_hostname_of_a_pod_without_subdomain() -> None:
    """Upstream's rule as it reads: the pod's subdomain equals the Service's name, both
    empty here (objects read from files)."""
    config = ReconcilerConfig(controller_name="test", topology_hints=False)
    nodes = [{"metadata": {"name": "node-1"}}]
    plan = plan_service(_service("ns", name=None), [_pod("ns", subdomain=None)], nodes, [], config)
    assert plan.creates[0]["endpoints"][0]["hostname"] == "host-1"
    plan = plan_service(_service("ns", name=None), [_pod("ns")], nodes, [], config)
    assert "hostname" not in plan.creates[0]["endpoints"][0]


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_pods_that_ended_are_not_endpoints(phase: str) -> None:
    config = ReconcilerConfig(controller_name="test", topology_hints=False)
    nodes = [{"metadata": {"name": "node-1"}}]
    plan = plan_service(_service("ns"), [_pod("ns", phase=phase)], nodes, [], config)
    assert [s.get("endpoints") for s in plan.creates] == [[]]  # the placeholder only
