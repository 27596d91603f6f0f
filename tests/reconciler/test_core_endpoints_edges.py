"""The core/v1 Endpoints object on the edges the upstream ports leave: pods skipped before
others, junk subsets and ports, the semantic comparison, the capacity boundaries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from endpointslice_operator.reconciler.core_endpoints import (
    EndpointsPlan,
    endpoints_need_update,
    plan_endpoints,
    repack_subsets,
    subsets_equal,
)
from endpointslice_operator.reconciler.sources import MultusNetwork

from .test_core_endpoints import NS, endpoints_with, existing_for, many_pods, pod, service


def ips(plan: EndpointsPlan) -> list[str]:
    return [a["ip"] for s in plan.subsets for a in s.get("addresses", [])]


# -- pods --------------------------------------------------------------------------------------


def test_pods_skipped_do_not_stop_the_pods_after_them() -> None:
    terminating = pod(0, terminating=True)
    no_ip = pod(1)
    no_ip["status"]["podIP"], no_ip["status"]["podIPs"] = "", []
    v6_only = pod(2, ip="fd00::2")  # no address of the Service's family: an error
    good = pod(3)
    plan = plan_endpoints(service(), [terminating, no_ip, v6_only, good], None)
    assert ips(plan) == ["1.2.3.7"]
    # A pod without any IP is skipped silently; the IPv6-only one is reported.
    assert plan.errors == [f"Pod {NS}/pod2 has no address of the Service's IP family"]
    # status.podIP without status.podIPs: not skipped as IP-less; reported, as upstream
    # (podToEndpointAddressForService looks the family up in podIPs).
    old_style = pod(4)
    old_style["status"]["podIPs"] = []
    reported = plan_endpoints(service(), [old_style], None)
    assert reported.subsets == []
    assert reported.errors == [f"Pod {NS}/pod4 has no address of the Service's IP family"]


def test_a_pod_left_out_by_the_source_does_not_stop_the_others() -> None:
    attached = pod(1)
    attached["metadata"]["annotations"] = {
        "k8s.v1.cni.cncf.io/network-status": json.dumps([{"name": "net", "ips": ["192.168.7.1"]}])
    }
    pods = [pod(0), attached]  # pod0 has no network-status: left out
    source = MultusNetwork.from_pods(f"{NS}/net", pods)
    plan = plan_endpoints(service(), pods, None, source=source)
    assert ips(plan) == ["192.168.7.1"] and plan.errors == []


def test_a_service_without_ports_and_cluster_ip_does_not_stop_at_its_first_pod() -> None:
    # Not headless: no subsets at all, and no error for any pod.
    plan = plan_endpoints(service(ports=[]), [pod(0), pod(1)], None)
    assert plan.subsets == [] and plan.errors == []
    headless = plan_endpoints(service(ports=[], cluster_ip="None"), [pod(0), pod(1)], None)
    assert ips(headless) == ["1.2.3.4", "1.2.3.5"]


def test_empty_ip_families_fall_back_to_the_cluster_ip_family() -> None:
    dual = pod(0, ips=["1.2.3.4", "fd00::4"])
    plan = plan_endpoints(service(cluster_ip="fd00::1", ipFamilies=[]), [dual], None)
    assert ips(plan) == ["fd00::4"]


def test_service_labels_that_are_not_strings_are_not_copied() -> None:
    plan = plan_endpoints(service(labels={"a": "1", "n": 2}), [pod(0)], None)  # type: ignore[dict-item]
    assert plan.endpoints is not None
    labels = plan.endpoints["metadata"]["labels"]
    assert labels.get("a") == "1" and "n" not in labels


# -- repacking junk ----------------------------------------------------------------------------


def test_repack_skips_junk_subsets_and_ports_without_a_valid_number() -> None:
    given: list[Any] = [
        "junk",
        {
            "addresses": [{"ip": "1.2.3.4"}],
            "ports": [{"port": "80"}, {"port": True}, {"port": 0}, {"port": 2}],
        },
    ]
    assert repack_subsets(given) == [{"addresses": [{"ip": "1.2.3.4"}], "ports": [{"port": 2}]}]
    lowest = [{"addresses": [{"ip": "1.2.3.4"}], "ports": [{"port": 1}]}]
    assert repack_subsets(lowest) == lowest


def test_repack_orders_ports_that_differ_only_in_app_protocol() -> None:
    ports = [
        {"name": "p", "port": 80, "appProtocol": "h2c"},
        {"name": "p", "port": 80},
        {"name": "p", "port": 80, "appProtocol": "a"},
    ]
    packed = repack_subsets([{"addresses": [{"ip": "1.2.3.4"}], "ports": ports}])
    # upstream's portsByHash order (FNV-1a 128 of each port's Go dump, v1.36)
    assert [p.get("appProtocol") for p in packed[0]["ports"]] == [None, "h2c", "a"]


def test_repack_order_of_port_less_subsets_is_canonical() -> None:
    # Two subsets without a usable port (none, and an invalid port 0) keep their addresses
    # apart; their order depends only on their content, not on the input's order or on the
    # order of the keys in its objects.
    first = {"addresses": [{"ip": "1.2.3.4", "nodeName": "b"}]}
    second = {"addresses": [{"nodeName": "a", "ip": "1.2.3.5"}], "ports": [{"port": 0}]}
    reordered = {"addresses": [{"nodeName": "b", "ip": "1.2.3.4"}]}
    packed = repack_subsets([first, second])
    assert packed == repack_subsets([second, first]) == repack_subsets([reordered, second])
    assert [s["addresses"][0]["ip"] for s in packed] == ["1.2.3.4", "1.2.3.5"]
    not_ready_first = {"notReadyAddresses": [{"ip": "1.2.3.4"}]}
    not_ready_second = {"notReadyAddresses": [{"ip": "1.2.3.5"}], "ports": [{"port": 0}]}
    assert repack_subsets([not_ready_first, not_ready_second]) == repack_subsets(
        [not_ready_second, not_ready_first]
    )


# -- comparison --------------------------------------------------------------------------------


def subset(**address: Any) -> list[dict[str, Any]]:
    return [{"addresses": [address], "ports": [{"port": 80}]}]


def test_subsets_equal_ignores_only_the_target_ref_resource_version() -> None:
    ref_a = {"resourceVersion": "1", "uid": "a", "name": "p"}
    assert subsets_equal(
        subset(ip="1.2.3.4", targetRef=ref_a),
        subset(ip="1.2.3.4", targetRef={**ref_a, "resourceVersion": "9"}),
    )
    assert not subsets_equal(
        subset(ip="1.2.3.4", targetRef=ref_a),
        subset(ip="1.2.3.4", targetRef={**ref_a, "uid": "b"}),
    )
    # resourceVersion outside a targetRef is compared.
    assert not subsets_equal(
        subset(ip="1.2.3.4", resourceVersion="1"), subset(ip="1.2.3.4", resourceVersion="2")
    )


def test_subsets_equal_empty_and_absent_fields() -> None:
    assert subsets_equal(subset(ip="1.2.3.4", hostname=""), subset(ip="1.2.3.4"))
    assert subsets_equal(subset(ip="1.2.3.4", hostname=None), subset(ip="1.2.3.4"))
    assert not subsets_equal(subset(hostname="", ip="1.2.3.4"), subset(ip="1.2.3.5"))
    assert subsets_equal(subset(hostname="", ip="1.2.3.4"), subset(ip="1.2.3.4"))
    assert not subsets_equal(subset(ip="1.2.3.4", hostname="h"), subset(ip="1.2.3.4"))
    # nodeName "" is a value (a pointer to ""), not the absence of one.
    assert not subsets_equal(subset(ip="1.2.3.4", nodeName=""), subset(ip="1.2.3.4"))


# -- capacity ----------------------------------------------------------------------------------


def test_an_existing_object_of_exactly_the_capacity_is_left_alone() -> None:
    first = plan_endpoints(service(), many_pods(1000, 0), None)
    assert first.endpoints is not None and first.truncated is False
    plan = plan_endpoints(service(), many_pods(1000, 0), existing_for(first.endpoints))
    assert plan.action == "none" and plan.truncated is False
    assert (plan.ready, plan.not_ready) == (1000, 0)


def test_an_existing_object_over_the_capacity_is_rewritten() -> None:
    # 1000 ready and 1 not ready: 1001 addresses, over the cap whatever their readiness.
    current = endpoints_with(1000, 1)
    desired = current["subsets"]
    assert endpoints_need_update(current, desired, current["metadata"]["labels"])
    assert not endpoints_need_update(
        current, desired, current["metadata"]["labels"], max_capacity=1001
    )


def test_a_plan_without_a_write_and_an_external_name_plan() -> None:
    external = plan_endpoints(service(type="ExternalName"), [pod(0)], None)
    assert (external.action, external.ready, external.not_ready, external.truncated) == (
        "none",
        0,
        0,
        False,
    )
    assert external.errors == []
    with pytest.raises(AttributeError):  # slots: a misspelt field is an error
        external.truncatd = True  # type: ignore[attr-defined]


def test_repack_orders_ports_as_kube_controller_manager_v1_36() -> None:
    """Read off kube-controller-manager v1.36.2's Endpoints for ports ``p3 p1 p7 p2 p9 p5 p4``
    (tests/realcluster/test_parity_ports.py holds it to the server)."""
    ports = [{"name": f"p{i}", "port": 9000 + i, "protocol": "TCP"} for i in (3, 1, 7, 2, 9, 5, 4)]
    packed = repack_subsets([{"addresses": [{"ip": "1.2.3.4"}], "ports": ports}])
    assert [p["name"] for p in packed[0]["ports"]] == ["p3", "p1", "p9", "p5", "p4", "p2", "p7"]


def test_pod_ips_are_published_canonical() -> None:
    """As kube-controller-manager v1.36's Endpoints controller writes them (measured with
    StrictIPCIDRValidation off): ``10.052.0.3`` is ``10.52.0.3``, ``fd00:0::1`` is ``fd00::1``."""
    v4 = plan_endpoints(service(), [pod(0, ip="10.052.0.3")], None)
    assert ips(v4) == ["10.52.0.3"]
    v6 = plan_endpoints(service(ipFamilies=["IPv6"]), [pod(0, ips=["fd00:0::1"])], None)
    assert ips(v6) == ["fd00::1"]
