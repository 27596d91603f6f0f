"""Multi-Cluster Services through a real kube-proxy: a Service exported from cluster c1 is
served, in cluster c2, by c2's kube-proxy on the derived Service's ClusterIP, to c1's pods.

c2 is the data-plane layer's cluster (its kube-proxy runs in the node namespace); c1 is one more
control plane. c1's pods are Pods of c1 (status written as a kubelet would) whose IPs are
network namespaces of the layer's topology answering HTTP with their name: one machine, so the
network is flat, as the multi-cluster guide requires. Each cluster runs its own operator with
``--multicluster``, reading the other through a kubeconfig bound only to the chart's read-only
peer ClusterRole.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

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
    imported_slices,
    namespace,
    peer_reader_kubeconfig,
    ready_by_source,
    unexport,
)
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import running

pytestmark = [pytest.mark.dataplane, pytest.mark.usefixtures("proxy_mode")]

RULES_SECONDS = 90.0


@pytest.fixture(scope="module")
def c1(dc: DataplaneCluster) -> Iterator[ControlPlane]:
    """The exporting cluster: a second control plane beside the layer's (which is c2)."""
    with extra_plane(assets_dir(), "c1") as plane:
        yield plane


async def test_kube_proxy_routes_the_derived_cluster_ip_to_the_other_clusters_pods(
    dc: DataplaneCluster, c1: ControlPlane, tmp_path: Path
) -> None:
    assert dc.plane is not None
    ns = f"mcs-traffic-{secrets.token_hex(3)}"
    pods = [f"mcs-{secrets.token_hex(2)}-{suffix}" for suffix in ("a", "b", "c")]
    derived = derived_service_name(ns, "web")
    key = service_key(ns, derived, "http")
    started: list[str] = []
    async with (
        await Kube.load(c1.kubeconfig) as one,
        await Kube.load(dc.plane.kubeconfig) as two,
    ):
        try:
            ids = []
            for client, name in ((one, "c1"), (two, "c2")):
                await install_crds(client)
                ids.append(await cluster_id(client, name))
                await namespace(client, ns)
            await o.node(one, "node-a", "zone-a")
            # c1's pods: network namespaces answering with their name, and their Pods in c1.
            ips: dict[str, str] = {}
            for pod in pods:
                ips[pod] = await asyncio.to_thread(dc.net.add_pod, pod)
                started.append(pod)
                await o.pod(one, ns, pod, ips[pod], labels={"app": "web"})
            await o.service(one, ns, "web", annotations={o.SELECTOR: "app=web"})
            await export(one, ns, "web")
            reads_c2 = await asyncio.to_thread(peer_reader_kubeconfig, dc.plane)
            reads_c1 = await asyncio.to_thread(peer_reader_kubeconfig, c1)
            args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
            async with (
                running(c1.kubeconfig, tmp_path / "c1.log", *args, "--mcs-peer", str(reads_c2)),
                running(
                    dc.plane.kubeconfig, tmp_path / "c2.log", *args, "--mcs-peer", str(reads_c1)
                ) as c2_operator,
            ):
                try:

                    async def served_by(*wanted: str) -> bool:
                        items = await imported_slices(two, ns, "web")
                        assert ready_by_source(items) == {ids[0]: {ips[p] for p in wanted}}, items
                        return True

                    await eventually(lambda: served_by(*pods), timeout=DEADLINE)

                    async def allocated() -> str:
                        ips = (await import_of(two, ns))["spec"].get("ips")
                        assert ips, "no spec.ips yet"
                        return str(ips[0])

                    cluster_ip = await eventually(allocated, timeout=DEADLINE)
                    service = await two.get(f"/api/v1/namespaces/{ns}/services/{derived}")
                    assert service["spec"]["clusterIP"] == cluster_ip

                    def requests(count: int) -> Counter[str]:
                        return dc.net.requests(cluster_ip, 80, count)

                    every = tuple(sorted(ips.values()))
                    await asyncio.to_thread(dc.wait_rules, {key: every}, RULES_SECONDS)
                    tally = await asyncio.to_thread(requests, 60)
                    assert set(tally) == set(pods), tally  # every pod of c1, no error

                    # A readiness flip in c1 takes that backend out of rotation in c2 ...
                    a, b, c = pods
                    await o.set_ready(one, ns, b, False, at="2026-01-01T00:01:00Z")
                    await eventually(lambda: served_by(a, c), timeout=DEADLINE)
                    await asyncio.to_thread(
                        dc.wait_rules, {key: tuple(sorted((ips[a], ips[c])))}, RULES_SECONDS
                    )
                    tally = await asyncio.to_thread(requests, 40)
                    assert set(tally) == {a, c}, tally
                    # ... and back.
                    await o.set_ready(one, ns, b, True, at="2026-01-01T00:02:00Z")
                    await asyncio.to_thread(dc.wait_rules, {key: every}, RULES_SECONDS)
                    tally = await asyncio.to_thread(requests, 60)
                    assert set(tally) == set(pods), tally

                    # Unexported: the derived Service goes, and kube-proxy's rule with it.
                    await unexport(one, ns, "web")
                    await asyncio.to_thread(dc.wait_rules, {key: ABSENT}, RULES_SECONDS)
                    tally = await asyncio.to_thread(lambda: dc.net.requests(cluster_ip, 80, 3, 1))
                    assert not set(tally) & set(pods), tally
                except AssertionError as exc:
                    raise AssertionError(f"{exc}\n--- c2:\n{c2_operator.log()[-3000:]}") from exc
        finally:
            for pod in started:
                await asyncio.to_thread(dc.net.remove_pod, pod)
            await two.delete(f"/api/v1/namespaces/{ns}")
