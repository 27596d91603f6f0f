"""reconciler.endpoint_selector: the Service-shaped owner read from an EndpointSelector as
stored or listed (apiVersion and kind absent from list items, fields empty or of the wrong
type)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig
from endpointslice_operator.reconciler.endpoint_selector import as_service, plan_endpoint_selector
from endpointslice_operator.reconciler.records import pod_record

CONFIG = ReconcilerConfig(controller_name="ours")
NODES = [{"metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "z"}}}]


def selector(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {"name": "sel", "namespace": "ns", "uid": "u-1"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "ports": [{"port": 8080}], **spec},
    }


def pod(name: str, ip: str, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {}},
        "spec": {"nodeName": "node-a"},
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_empty_ip_families_read_as_unset() -> None:
    both = [pod_record(pod("a", "10.0.0.1")), pod_record(pod("b", "fd00::1"))]
    assert as_service(selector(ipFamilies=[]), both)["spec"]["ipFamilies"] == ["IPv4", "IPv6"]


def test_publish_not_ready_addresses_only_when_true() -> None:
    pods = [pod("a", "10.0.0.1"), pod("b", "10.0.0.2", ready=False)]

    def ready_of(body: dict[str, Any]) -> dict[str, Any]:
        (created,) = plan_endpoint_selector(body, pods, NODES, [], CONFIG).creates
        return {e["addresses"][0]: e["conditions"]["ready"] for e in created["endpoints"]}

    assert ready_of(selector()) == {"10.0.0.1": True, "10.0.0.2": False}
    assert ready_of(selector(publishNotReadyAddresses=True)) == {
        "10.0.0.1": True,
        "10.0.0.2": True,
    }
    assert ready_of(selector(publishNotReadyAddresses="true")) == {
        "10.0.0.1": True,
        "10.0.0.2": False,
    }


def test_owner_reference_when_listed_without_api_version_and_kind() -> None:
    listed = selector()
    del listed["apiVersion"], listed["kind"]
    (created,) = plan_endpoint_selector(listed, [pod("a", "10.0.0.1")], NODES, [], CONFIG).creates
    (owner,) = created["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
        "endpointslice-operator.io/v1alpha1",
        "EndpointSelector",
        "u-1",
    )
    # As stored, the object's own apiVersion and kind are what the reference names.
    newer = {**selector(), "apiVersion": "endpointslice-operator.io/v1beta1", "kind": "Selector2"}
    owner_spec = as_service(newer, [])
    assert (owner_spec["apiVersion"], owner_spec["kind"]) == (
        "endpointslice-operator.io/v1beta1",
        "Selector2",
    )
