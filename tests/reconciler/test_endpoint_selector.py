"""reconciler.endpoint_selector: labels, families, the Service-shaped owner, the plan."""

from __future__ import annotations

import copy
from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig
from endpointslice_operator.reconciler.endpoint_selector import (
    LABEL_ENDPOINT_SELECTOR_NAME,
    LABEL_KEP6116_ENDPOINT_SELECTOR_NAME,
    as_service,
    controlling_service,
    labels_from_endpoint_selector,
    plan_endpoint_selector,
)
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from endpointslice_operator.reconciler.records import pod_record

CONFIG = ReconcilerConfig(controller_name="ours")


def selector(**metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {"name": "sel", "namespace": "ns", "uid": "u-1", **metadata},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "ports": [{"name": "http", "port": "http", "protocol": "TCP"}],
        },
    }


def pod(name: str, ips: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {}},
        "spec": {
            "nodeName": "node-a",
            "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}],
        },
        "status": {
            "phase": "Running",
            "podIPs": [{"ip": ip} for ip in ips],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


NODES = [{"metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "z"}}}]


def test_labels_copy_own_keep_reserved_and_name_the_service_only_when_it_owns() -> None:
    body = selector(labels={"team": "a", LABEL_SERVICE_NAME: "spoof", LABEL_MANAGED_BY: "x"})
    desired, changed = labels_from_endpoint_selector(body)(None, "ours")
    # KEP-6116's label by default, beside the operator's own.
    assert desired == {
        "team": "a",
        LABEL_MANAGED_BY: "ours",
        LABEL_ENDPOINT_SELECTOR_NAME: "sel",
        LABEL_KEP6116_ENDPOINT_SELECTOR_NAME: "sel",
    }
    assert changed is True  # a new slice
    assert labels_from_endpoint_selector(body)(desired, "ours") == (desired, False)
    without_kep = labels_from_endpoint_selector(body, kep6116_labels=False)
    own_only, changed = without_kep(desired, "ours")
    assert LABEL_KEP6116_ENDPOINT_SELECTOR_NAME not in own_only and changed
    assert own_only[LABEL_ENDPOINT_SELECTOR_NAME] == "sel"
    owned = selector(
        ownerReferences=[{"apiVersion": "v1", "kind": "Service", "name": "web", "controller": True}]
    )
    assert controlling_service(owned) == "web"
    assert labels_from_endpoint_selector(owned)(None, "ours")[0][LABEL_SERVICE_NAME] == "web"
    not_controller = selector(
        ownerReferences=[{"apiVersion": "v1", "kind": "Service", "name": "web"}]
    )
    assert controlling_service(not_controller) is None


def test_families_default_to_those_found_and_ip_families_filter() -> None:
    v4 = [pod_record(pod("a", ["10.0.0.1"]))]
    both = [pod_record(pod("b", ["10.0.0.2", "fd00::2"]))]
    assert as_service(selector(), [])["spec"]["ipFamilies"] == ["IPv4"]
    assert as_service(selector(), v4)["spec"]["ipFamilies"] == ["IPv4"]
    assert as_service(selector(), both)["spec"]["ipFamilies"] == ["IPv4", "IPv6"]
    only_v6 = selector()
    only_v6["spec"]["ipFamilies"] = ["IPv6"]
    assert as_service(only_v6, v4)["spec"]["ipFamilies"] == ["IPv6"]


def test_the_plan_owns_its_slices_and_leaves_its_inputs_alone() -> None:
    body = selector()
    pods = [pod("a", ["10.0.0.1"]), pod("b", ["10.0.0.2", "fd00::2"])]
    before = copy.deepcopy((body, pods))
    plan = plan_endpoint_selector(body, pods, NODES, [], CONFIG)
    assert (body, pods) == before
    assert sorted(s["addressType"] for s in plan.creates) == ["IPv4", "IPv6"]
    for created in plan.creates:
        (owner,) = created["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"]) == ("EndpointSelector", "u-1")
        assert created["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    # Planning again over what it wrote: nothing to do.
    written = [
        {**s, "metadata": {**s["metadata"], "name": f"sel-{i}", "uid": f"s-{i}"}}
        for i, s in enumerate(plan.creates)
    ]
    assert plan_endpoint_selector(body, pods, NODES, written, CONFIG).write_count == 0


def test_target_port_is_an_alias_of_port() -> None:
    """``targetPort`` (a Service's spelling) plans exactly as ``port`` (KEP-6116's field)."""
    pods = [pod("a", ["10.0.0.1"])]
    for target in ("http", 8080):
        kep = selector()
        kep["spec"]["ports"] = [{"name": "http", "port": target, "protocol": "TCP"}]
        alias = selector()
        alias["spec"]["ports"] = [{"name": "http", "targetPort": target, "protocol": "TCP"}]
        both = selector()
        both["spec"]["ports"] = [
            {"name": "http", "port": target, "targetPort": target, "protocol": "TCP"}
        ]
        plans = [plan_endpoint_selector(b, pods, NODES, [], CONFIG) for b in (kep, alias, both)]
        for plan in plans:
            (created,) = plan.creates
            assert created["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            assert created["endpoints"][0]["addresses"] == ["10.0.0.1"]
