"""The traffic specs of the kubernetes-sigs/mcs-api conformance suite (``conformance/
connectivity.go`` at v0.5.0 and its HEAD of 2026-05-07), through a real kube-proxy.

The suite sends its requests from a pod of every cluster to the Service's clusterset DNS name;
there is no cluster DNS here, so the requests go from the layer's client namespace to the
ServiceImport's clusterset IP (``spec.ips``, what that name resolves to), in the layer's cluster
``c2``, the only one with a kube-proxy. ``c1`` is one more control plane, the suite's first
cluster (the exporter of every spec); ``c2`` is its second. Pods are network namespaces of the
layer's topology answering HTTP with their name on :8080 (the Services' targetPort), with
their Pod objects in their cluster. Each cluster runs its own operator with ``--multicluster``.
The API-only specs are in ``tests/realcluster/test_mcs_conformance.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import ControlPlane
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster
from endpointslice_operator.testing.kube_proxy_rules import ABSENT, service_key
from tests.dataplane.conftest import assets_dir
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    DEADLINE,
    cluster_id,
    export,
    extra_plane,
    import_of,
    namespace,
    unexport,
)
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import running

pytestmark = [pytest.mark.dataplane, pytest.mark.usefixtures("proxy_mode")]

RULES_SECONDS = 90.0
HELLO = "hello"
REQUESTS = 10
"""The suite's repeat count for its 'only that cluster' specs."""


@pytest.fixture(scope="module")
def c1(dc: DataplaneCluster) -> Iterator[ControlPlane]:
    """The suite's first cluster (the exporter): a control plane beside the layer's (c2)."""
    with extra_plane(assets_dir(), "conf-c1") as plane:
        yield plane


def port(name: str, number: int) -> dict[str, Any]:
    return {"name": name, "port": number, "targetPort": 8080, "protocol": "TCP"}


@dataclass
class Clusters:
    dc: DataplaneCluster
    one: Kube
    two: Kube
    ns: str
    ips: dict[str, str] = field(default_factory=dict)
    """pod name -> its IP (a network namespace of the topology)."""

    @property
    def derived(self) -> str:
        return derived_service_name(self.ns, HELLO)

    async def hello(self, client: Kube, ports: list[dict[str, Any]]) -> str:
        """``hello`` (opted in) in that cluster, and one pod behind it; returns the pod."""
        pod = f"{HELLO}-{'c1' if client is self.one else 'c2'}-{secrets.token_hex(2)}"
        self.ips[pod] = await asyncio.to_thread(self.dc.net.add_pod, pod)
        await o.pod(client, self.ns, pod, self.ips[pod], labels={"app": HELLO})
        await o.service(
            client, self.ns, HELLO, annotations={o.SELECTOR: f"app={HELLO}"}, ports=ports
        )
        return pod

    def ip(self, pod: str) -> str:
        return self.ips[pod]

    async def clusterset_ip(self) -> str:
        async def allocated() -> str:
            ips = (await import_of(self.two, self.ns, HELLO))["spec"].get("ips")
            assert ips, "no spec.ips yet"
            return str(ips[0])

        return str(await eventually(allocated, timeout=DEADLINE))

    async def rules(self, expect: dict[str, Any]) -> None:
        keys = {service_key(self.ns, self.derived, name): value for name, value in expect.items()}
        await asyncio.to_thread(self.dc.wait_rules, keys, RULES_SECONDS)

    async def requests(self, ip: str, number: int, count: int = REQUESTS) -> Counter[str]:
        return await asyncio.to_thread(self.dc.net.requests, ip, number, count)


@contextlib.asynccontextmanager
async def clusters(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> AsyncIterator[Clusters]:
    assert dc.plane is not None
    ns = f"mcs-conf-{secrets.token_hex(3)}"
    async with (
        await Kube.load(c1.kubeconfig) as one,
        await Kube.load(dc.plane.kubeconfig) as two,
    ):
        world = Clusters(dc, one, two, ns)
        try:
            for client, name in ((one, "c1"), (two, "c2")):
                await install_crds(client)
                await cluster_id(client, name)
                await namespace(client, ns)
            await o.node(one, "node-a", "zone-a")
            args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
            async with (
                running(
                    c1.kubeconfig,
                    tmp_path / "c1.log",
                    *args,
                    "--mcs-peer",
                    str(dc.plane.kubeconfig),
                ) as c1_operator,
                running(
                    dc.plane.kubeconfig,
                    tmp_path / "c2.log",
                    *args,
                    "--mcs-peer",
                    str(c1.kubeconfig),
                ) as c2_operator,
            ):
                try:
                    yield world
                except AssertionError as exc:
                    raise AssertionError(
                        f"{exc}\n--- c1:\n{c1_operator.log()[-3000:]}"
                        f"\n--- c2:\n{c2_operator.log()[-3000:]}"
                    ) from exc
        finally:
            for pod in world.ips:
                await asyncio.to_thread(dc.net.remove_pod, pod)
            await one.delete(f"/api/v1/namespaces/{ns}")
            await two.delete(f"/api/v1/namespaces/{ns}")


async def test_an_exported_clusterip_service_is_reachable_and_not_once_unexported(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> None:
    """Ports connectivity.go's spec that an exported ClusterIP Service is reachable from the
    clusterset (through its clusterset IP instead of its DNS name), and the traffic side of its
    spec that a Service not exported is not: once unexported, the clusterset IP reaches none of
    its pods."""
    async with clusters(dc, c1, tmp_path) as w:
        pod = await w.hello(w.one, [port("tcp", 42)])
        await export(w.one, w.ns, HELLO)
        vip = await w.clusterset_ip()
        await w.rules({"tcp": (w.ip(pod),)})
        tally = await w.requests(vip, 42)
        assert tally == Counter({pod: REQUESTS}), tally
        await unexport(w.one, w.ns, HELLO)
        await w.rules({"tcp": ABSENT})
        tally = await asyncio.to_thread(w.dc.net.requests, vip, 42, 3, 1)
        assert pod not in tally, tally


async def test_a_service_in_two_clusters_exported_from_one_reaches_only_that_one(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> None:
    """Ports connectivity.go's spec for a ClusterIP Service that exists in two clusters but is
    exported from one: every request to the clusterset IP reaches the exporting cluster's pod."""
    async with clusters(dc, c1, tmp_path) as w:
        exporter = await w.hello(w.one, [port("tcp", 42)])
        await w.hello(w.two, [port("tcp", 42)])
        await export(w.one, w.ns, HELLO)
        vip = await w.clusterset_ip()
        await w.rules({"tcp": (w.ip(exporter),)})
        tally = await w.requests(vip, 42)
        assert tally == Counter({exporter: REQUESTS}), tally


async def test_same_port_name_different_numbers_routes_only_to_the_first_cluster(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> None:
    """Ports connectivity.go's spec for Services exported from two clusters with the same port
    name but different numbers (42 in the first, 4242 in the second): traffic to the port goes
    only to the cluster whose port the import exposes (the first)."""
    async with clusters(dc, c1, tmp_path) as w:
        first = await w.hello(w.one, [port("tcp", 42)])
        await export(w.one, w.ns, HELLO)
        vip = await w.clusterset_ip()
        await asyncio.sleep(1.1)  # the second export is younger by a second at least
        await w.hello(w.two, [port("tcp", 4242)])
        await export(w.two, w.ns, HELLO)

        async def both_exports() -> bool:
            body = await import_of(w.two, w.ns, HELLO)
            clusters_ = [c["cluster"] for c in (body.get("status") or {}).get("clusters") or []]
            assert clusters_ == ["c1", "c2"], clusters_
            return True

        await eventually(both_exports, timeout=DEADLINE)
        await w.rules({"tcp": (w.ip(first),)})
        tally = await w.requests(vip, 42)
        assert tally == Counter({first: REQUESTS}), tally


async def test_different_port_names_route_each_port_to_its_cluster(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> None:
    """Ports connectivity.go's spec for Services exported from two clusters with different port
    names (``tcp`` 42 in the first, ``tcp2`` 4242 in the second): traffic to each port goes only
    to the cluster that exposes it."""
    async with clusters(dc, c1, tmp_path) as w:
        first = await w.hello(w.one, [port("tcp", 42)])
        await export(w.one, w.ns, HELLO)
        vip = await w.clusterset_ip()
        await asyncio.sleep(1.1)
        second = await w.hello(w.two, [port("tcp2", 4242)])
        await export(w.two, w.ns, HELLO)
        await w.rules({"tcp": (w.ip(first),), "tcp2": (w.ip(second),)})
        tally = await w.requests(vip, 42)
        assert tally == Counter({first: REQUESTS}), tally
        tally = await w.requests(vip, 4242)
        assert tally == Counter({second: REQUESTS}), tally
