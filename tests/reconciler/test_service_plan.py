"""``reconciler/service.py``: ``plan_service``, the one-call planning of a Service."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig, plan_service


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80}],
            "ipFamilies": ["IPv4"],
        },
    }


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "namespace": "ns", "uid": "pod-uid-1"},
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _nodes() -> Iterator[dict[str, Any]]:
    yield {
        "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "status": {"allocatable": {"cpu": "2"}},
    }


def test_nodes_given_once_as_an_iterator_serve_both_the_hints_and_the_zones() -> None:
    """With topology hints on and no cache given, ``plan_service`` reads the nodes for its own
    topology cache; an iterator of nodes must still give the endpoints their zone."""
    config = ReconcilerConfig(controller_name="test")
    plan = plan_service(_service(), [_pod()], _nodes(), [], config)
    (created,) = plan.creates
    (endpoint,) = created["endpoints"]
    assert endpoint["nodeName"] == "node-1"
    assert endpoint["zone"] == "zone-a"


def test_the_services_traffic_distribution_reaches_the_plan() -> None:
    """``spec.trafficDistribution: PreferClose`` gives zone hints (and the metrics label); a
    value that is not a string is no distribution."""
    config = ReconcilerConfig(controller_name="test")
    service = _service()
    service["spec"]["trafficDistribution"] = "PreferClose"
    plan = plan_service(service, [_pod()], _nodes(), [], config)
    assert plan.traffic_distribution_label == "PreferClose"
    (created,) = plan.creates
    assert created["endpoints"][0]["hints"] == {"forZones": [{"name": "zone-a"}]}
    service["spec"]["trafficDistribution"] = ["PreferClose"]
    plan = plan_service(service, [_pod()], _nodes(), [], config)
    assert plan.traffic_distribution_label == ""
    assert "hints" not in plan.creates[0]["endpoints"][0]
