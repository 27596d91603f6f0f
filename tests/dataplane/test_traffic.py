"""Traffic through a real kube-proxy, by the operator's slices and by kube-controller-manager's.

Each test has twin Services on the same pods (``<app>-eso``: selectorless, opted in with the
selector annotation, so only the operator writes its slices; ``<app>-kcm``: ``spec.selector``,
kube-controller-manager's) and checks what kube-proxy programs for each ClusterIP (its rules in
the node namespace) and where requests from the client namespace land. Every test runs once per
kube-proxy mode, ``[iptables]`` and ``[nftables]``: both route by the same slices, and what they
program for each state is the same.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from endpointslice_operator.testing.dataplane_cluster import ENABLED, DataplaneCluster
from endpointslice_operator.testing.kube_proxy_rules import ABSENT, REJECTED
from tests.dataplane.conftest import App

pytestmark = [pytest.mark.dataplane, pytest.mark.usefixtures("proxy_mode")]

OURS = "endpointslice-operator.io"
PROXY_NAME = "service.kubernetes.io/service-proxy-name"


def answered(tally: Counter[str]) -> set[str]:
    return set(tally)


def test_both_services_reach_every_ready_pod(dc: DataplaneCluster, app: App) -> None:
    ours, kcm = app.twins()
    pods = [app.pod(suffix) for suffix in ("a", "b", "c")]
    every = app.ips(*pods)
    dc.wait_rules({ours: every, kcm: every})
    # The opted-in Service is selectorless: what kube-proxy routes it by is the operator's.
    managers = {s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by")
                for s in dc.slices(ours)}  # fmt: skip
    assert managers == {OURS}
    for key in (ours, kcm):
        tally = dc.requests(key, 60)
        assert answered(tally) == set(pods), (key, tally)  # every pod, and no error


def test_an_unready_pod_stops_receiving_traffic_and_comes_back(
    dc: DataplaneCluster, app: App
) -> None:
    ours, kcm = app.twins()
    a, b, c = (app.pod(suffix) for suffix in ("a", "b", "c"))
    dc.wait_rules({ours: app.ips(a, b, c), kcm: app.ips(a, b, c)})

    with ThreadPoolExecutor(2) as pool:
        # Requests keep flowing to both Services while b turns unready and ready again.
        during = [pool.submit(dc.requests, key, 150) for key in (ours, kcm)]
        dc.set_ready(b, False)
        dc.wait_rules({ours: app.ips(a, c), kcm: app.ips(a, c)})
        for key in (ours, kcm):
            assert answered(dc.requests(key, 40)) == {a, c}, key
        dc.set_ready(b, True)
        dc.wait_rules({ours: app.ips(a, b, c), kcm: app.ips(a, b, c)})
        for future in during:
            assert answered(future.result()) <= {a, b, c}, future.result()  # none failed
    for key in (ours, kcm):
        assert answered(dc.requests(key, 60)) == {a, b, c}, key


def test_terminating_pods_are_routed_as_for_the_twin(dc: DataplaneCluster, app: App) -> None:
    ours, kcm = app.twins()
    a, b, c = (app.pod(suffix) for suffix in ("a", "b", "c"))
    dc.wait_rules({ours: app.ips(a, b, c), kcm: app.ips(a, b, c)})

    # One pod terminating (still serving) while others are ready: only the ready ones.
    dc.delete_pod(c)
    dc.wait_rules({ours: app.ips(a, b), kcm: app.ips(a, b)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == {a, b}, key

    # Every pod terminating but serving: kube-proxy falls back to the serving ones.
    dc.delete_pod(a)
    dc.delete_pod(b)
    dc.wait_rules({ours: app.ips(a, b, c), kcm: app.ips(a, b, c)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 60)) == {a, b, c}, key

    # A terminating pod that stops serving (its readiness probe fails) leaves the rules.
    dc.set_ready(c, False)
    dc.wait_rules({ours: app.ips(a, b), kcm: app.ips(a, b)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == {a, b}, key

    # None serving: both Services reject connections.
    dc.set_ready(a, False)
    dc.set_ready(b, False)
    dc.wait_rules({ours: REJECTED, kcm: REJECTED})
    for key in (ours, kcm):
        assert dc.requests(key, 5, timeout=5) == Counter({"ERR:refused": 5}), key


def test_prefer_same_zone_programs_the_same_zone_local_endpoints(
    dc: DataplaneCluster, app: App
) -> None:
    ours, kcm = app.twins(trafficDistribution="PreferSameZone")
    # kube-proxy runs as node-a, in zone-a; node-c is in zone-a too, node-b in zone-b.
    near = [app.pod("a1"), app.pod("c1", node="node-c")]
    far = [app.pod("b1", node="node-b"), app.pod("b2", node="node-b")]
    dc.wait_rules({ours: app.ips(*near), kcm: app.ips(*near)})
    hints = {
        e["targetRef"]["name"]: e.get("hints")
        for s in dc.slices(ours)
        for e in s.get("endpoints") or []
    }
    assert hints[far[0]]["forZones"] == [{"name": "zone-b"}], hints
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == set(near), key

    # No zone-a endpoint ready: both fall back to the other zone's.
    for pod in near:
        dc.set_ready(pod, False)
    dc.wait_rules({ours: app.ips(*far), kcm: app.ips(*far)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == set(far), key


def test_traffic_distribution_set_and_removed_on_unchanged_pods(
    dc: DataplaneCluster, app: App
) -> None:
    """Hints added to, then stripped from, slices whose endpoints do not change (each sync of
    that kind once failed on kube-apiserver v1.36, and kube-proxy kept routing across zones)."""
    ours, kcm = app.twins()
    near = [app.pod("a1"), app.pod("c1", node="node-c")]
    far = [app.pod("b1", node="node-b")]
    every = app.ips(*near, *far)
    dc.wait_rules({ours: every, kcm: every})
    for key in (ours, kcm):
        name = key.split("/", 1)[1].split(":", 1)[0]
        dc.call(
            "PATCH",
            dc.ns_path("services", name),
            {"spec": {"trafficDistribution": "PreferSameZone"}},
        )
    dc.wait_rules({ours: app.ips(*near), kcm: app.ips(*near)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == set(near), key
    for key in (ours, kcm):
        name = key.split("/", 1)[1].split(":", 1)[0]
        dc.call("PATCH", dc.ns_path("services", name), {"spec": {"trafficDistribution": None}})
    dc.wait_rules({ours: every, kcm: every})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 60)) == set(near + far), key


def test_prefer_same_node_programs_the_node_local_endpoints(dc: DataplaneCluster, app: App) -> None:
    ours, kcm = app.twins(trafficDistribution="PreferSameNode")
    local = [app.pod("a1"), app.pod("a2")]  # on node-a, kube-proxy's node
    other = [app.pod("c1", node="node-c"), app.pod("b1", node="node-b")]
    dc.wait_rules({ours: app.ips(*local), kcm: app.ips(*local)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 40)) == set(local), key

    # The node's own endpoints unready: the same zone's (PreferSameNode hints a zone too) ...
    for pod in local:
        dc.set_ready(pod, False)
    same_zone, other_zone = other
    dc.wait_rules({ours: app.ips(same_zone), kcm: app.ips(same_zone)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 20)) == {same_zone}, key
    # ... and none there either: the rest of the cluster's.
    dc.set_ready(same_zone, False)
    dc.wait_rules({ours: app.ips(other_zone), kcm: app.ips(other_zone)})
    for key in (ours, kcm):
        assert answered(dc.requests(key, 20)) == {other_zone}, key


def test_opting_out_rejects_the_cluster_ip_while_the_twin_keeps_working(
    dc: DataplaneCluster, app: App
) -> None:
    ours, kcm = app.twins()
    a, b = app.pod("a"), app.pod("b")
    dc.wait_rules({ours: app.ips(a, b), kcm: app.ips(a, b)})

    name = ours.split("/", 1)[1].split(":", 1)[0]
    dc.call("PATCH", dc.ns_path("services", name), {"metadata": {"annotations": {ENABLED: None}}})
    dc.wait_rules({ours: REJECTED, kcm: app.ips(a, b)})
    assert dc.slices(ours) == []
    assert dc.requests(ours, 10, timeout=5) == Counter({"ERR:refused": 10})
    assert answered(dc.requests(kcm, 40)) == {a, b}


def test_a_service_for_another_proxy_is_ignored_by_kube_proxy(
    dc: DataplaneCluster, app: App
) -> None:
    a, b = app.pod("a"), app.pod("b")
    other = app.opted_in("secondary", labels={PROXY_NAME: "secondary-proxy"})
    ours = app.opted_in("eso")
    # Created after the other one: once kube-proxy programs it, it has seen the other too.
    dc.wait_rules({ours: app.ips(a, b)})
    slices = dc.slices(other)
    assert [s["metadata"]["labels"].get(PROXY_NAME) for s in slices] == ["secondary-proxy"]
    assert {e["addresses"][0] for e in slices[0]["endpoints"]} == set(app.ips(a, b))
    assert dc.net.rules(other) == ABSENT
    tally = dc.requests(other, 3, timeout=0.5)
    assert all(answer.startswith("ERR:") for answer in tally), tally  # no pod answers
