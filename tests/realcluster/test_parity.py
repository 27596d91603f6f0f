"""Parity with kube-controller-manager on the same pods (see ``parity.py`` for the twins).

kube-controller-manager here is v1.24; where the operator's port of the newer upstream library
or the twin construction itself makes a difference, the test names it and checks it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess
from tests.realcluster.parity import Twins

pytestmark = pytest.mark.realcluster

FORCE = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


async def test_arrivals_one_at_a_time_flips_and_deletions(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create()
    names: set[str] = set()
    for i in range(12):
        name = f"web-{i}"
        node = ("node-a", "node-b")[i % 2]
        await o.pod(kube, ns, name, f"10.1.0.{i + 1}", node_name=node, ready=i % 5 != 3)
        names.add(name)
        await twins.agree(names)
    for i in (0, 3, 7):  # readiness flips
        await o.set_ready(kube, ns, f"web-{i}", i == 3, at="2026-01-01T00:01:00Z")
        await twins.agree(names, ready=(f"web-{i}", i == 3))
    for i in (1, 2, 8, 9):  # graceful: Terminating (no kubelet), then forced
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-{i}")

    def terminating(kcm: dict[str, Any]) -> None:
        for i in (1, 2, 8, 9):
            assert kcm["endpoints"][f"web-{i}"][3] is True, f"web-{i} not terminating yet"

    await twins.agree(names, expect=terminating)
    for i in (1, 2, 8, 9):
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-{i}", FORCE)
        names.discard(f"web-{i}")
    await twins.agree(names)


async def test_target_port_change_and_named_ports_resolving_differently(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(
        ports=[
            {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
            {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"},
        ]
    )
    names = set()
    for i in range(6):
        port = 8080 if i % 3 else 9090  # "http" is 8080 on some pods and 9090 on others
        await o.pod(
            kube,
            ns,
            f"web-{i}",
            f"10.1.0.{i + 1}",
            container_ports=[{"name": "http", "containerPort": port, "protocol": "TCP"}],
        )
        names.add(f"web-{i}")
    await twins.agree(names)
    kcm, _ = await twins.shapes()
    assert len(kcm["ports"]) == 2, "two port sets, two slices"
    await twins.patch_spec(
        {"ports": [{"name": "http", "port": 80, "targetPort": 7070, "protocol": "TCP"}]}
    )

    def one_port_set(kcm: dict[str, Any]) -> None:
        assert kcm["ports"] == [("IPv4", (("http", 7070, "TCP"),))], kcm["ports"]

    await twins.agree(names, expect=one_port_set)


async def test_publish_not_ready_addresses(kube: Kube, ns: str, operator: OperatorProcess) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(publishNotReadyAddresses=True)
    for i in range(4):
        await o.pod(kube, ns, f"web-{i}", f"10.1.0.{i + 1}", ready=i % 2 == 0)
    await twins.agree({f"web-{i}" for i in range(4)})
    kcm, _ = await twins.shapes()
    assert all(v[1] is True for v in kcm["endpoints"].values()), "all published as ready"


async def test_hostname_and_subdomain(kube: Kube, ns: str, operator: OperatorProcess) -> None:
    """A pod's hostname is published only by the Service its ``spec.subdomain`` names, and the
    twins have different names: each pod gets its hostname from one twin only. Named here, and
    checked as the mirror image: the same hostnames, on the pods whose subdomain is that twin's."""
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(clusterIP="None")
    for i, subdomain in enumerate((twins.kcm, twins.ours, twins.kcm, twins.ours)):
        await o.pod(
            kube, ns, f"web-{i}", f"10.1.0.{i + 1}", hostname=f"host-{i}", subdomain=subdomain
        )

    async def mirrored() -> bool:
        kcm, ours = await twins.shapes()
        assert set(kcm["endpoints"]) == set(ours["endpoints"]) == {f"web-{i}" for i in range(4)}
        for pod, a in kcm["endpoints"].items():
            b = ours["endpoints"][pod]
            assert a[:6] == b[:6], (pod, a, b)
            index = int(pod.rsplit("-", 1)[1])
            assert a[6] == (f"host-{index}" if index % 2 == 0 else None), (pod, a)
            assert b[6] == (f"host-{index}" if index % 2 == 1 else None), (pod, b)
        assert kcm["sizes"] == ours["sizes"]
        return True

    await eventually(mirrored, timeout=60)


async def test_a_pod_on_a_node_that_does_not_exist(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create()
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "web-ghost", "10.1.0.2", node_name="node-that-does-not-exist")
    await twins.agree({"web-0"})


async def test_a_selector_change(kube: Kube, ns: str, operator: OperatorProcess) -> None:
    twins = Twins(kube, ns, "web", {"app": "a"})
    await twins.create()
    for i in range(3):
        await o.pod(kube, ns, f"a-{i}", f"10.1.0.{i + 1}", labels={"app": "a"})
        await o.pod(kube, ns, f"b-{i}", f"10.1.1.{i + 1}", labels={"app": "b"})
    await twins.agree({"a-0", "a-1", "a-2"})
    await twins.patch_spec({}, selector={"app": "b"})
    await twins.agree({"b-0", "b-1", "b-2"})


async def test_more_than_1000_endpoints(kube: Kube, ns: str, operator: OperatorProcess) -> None:
    count = 1050
    for i in range(count):
        await o.pod(kube, ns, f"web-{i}", f"10.2.{i // 250}.{i % 250 + 1}")
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create()
    await twins.agree({f"web-{i}" for i in range(count)}, timeout=180)
    kcm, _ = await twins.shapes()
    assert kcm["sizes"] == [(50, 1), (100, 10)]


@pytest.mark.k8s_below("1.33")
async def test_non_canonical_pod_ips_differ_on_old_servers(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    """``10.052.0.3`` and ``::ffff:10.52.0.4``: servers before 1.33 accept them in pods, and
    their kube-controller-manager publishes them as given; the operator publishes them
    canonical (``10.52.0.3``, ``10.52.0.4``, both IPv4), as kube-controller-manager v1.33+
    does: the server of record is v1.36 (tests/realcluster/test_canonical_ips.py holds it
    there). A known difference on old servers, docs/reliability.md."""
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create()
    odd = {"web-0": "10.052.0.3", "web-1": "::ffff:10.52.0.4"}
    canonical = {"web-0": "10.52.0.3", "web-1": "10.52.0.4"}
    for i, (name, ip) in enumerate(odd.items()):
        await o.pod(kube, ns, name, f"10.1.0.{i + 1}")
        await kube.patch(
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            {"status": {"podIP": ip, "podIPs": [{"ip": ip}]}},
        )

    async def published() -> bool:
        kcm, ours = await twins.shapes()
        assert {n: kcm["endpoints"].get(n, ((),))[0] for n in odd} == {
            n: (ip,) for n, ip in odd.items()
        }, kcm["endpoints"]
        assert {n: ours["endpoints"].get(n, ((),))[0] for n in odd} == {
            n: (ip,) for n, ip in canonical.items()
        }, ours["endpoints"]
        return True

    await eventually(published)
