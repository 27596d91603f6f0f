"""A peer that has never answered (a wrong address, a dead cluster at first start) must not
hold back the import of what the reachable clusters export: its own slices are unknown, so
nothing is taken away for it, but the clusters that are listed are imported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import free_port
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster, assets_dir
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    DEADLINE,
    MCS,
    by_source,
    cluster_id,
    conditions,
    export,
    extra_plane,
    gone_everywhere,
    import_of,
    imported_slices,
    namespace,
    peer_reader_kubeconfig,
    unexport,
)
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster


def unreachable_kubeconfig(path: Path) -> Path:
    """A kubeconfig for an API server that is not there (a free port on loopback)."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "gone", "cluster": {"server": f"https://127.0.0.1:{free_port()}"}}
                ],
                "users": [{"name": "gone", "user": {"token": "nothing"}}],
                "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
                "current-context": "gone",
            }
        )
    )
    return path


async def test_a_peer_never_seen_does_not_hold_back_the_import_of_the_others(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path, tmp_path: Path
) -> None:
    await install_crds(kube)
    await cluster_id(kube, "east")
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    peer = unreachable_kubeconfig(tmp_path / "gone.kubeconfig")
    args = ("--multicluster", "--mcs-peer-timeout", "10s", "--namespace", ns)
    async with running(kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(peer)):
        await eventually(lambda: _imported_from_east_only(kube, ns), timeout=DEADLINE)


async def test_a_peer_whose_listing_is_refused_does_not_hold_back_the_others(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    if cluster.plane is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: a second control plane is started")
    with extra_plane(assets_dir(), "west") as west_plane:
        async with await Kube.load(west_plane.kubeconfig) as west:
            await install_crds(kube)
            await install_crds(west)
            await cluster_id(kube, "east")
            await cluster_id(west, "west")
            await o.node(kube, "node-a", "zone-a")
            await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
            await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
            await export(kube, ns, "web")
            # west's EndpointSlices cannot be listed: its listings never complete.
            peer = peer_reader_kubeconfig(west_plane, without=("endpointslices",))
            args = ("--multicluster", "--mcs-peer-timeout", "10s", "--namespace", ns)
            async with running(
                kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(peer)
            ):
                await eventually(lambda: _imported_from_east_only(kube, ns), timeout=DEADLINE)


async def test_a_dead_peer_holds_back_what_the_others_stopped_exporting_only_for_the_timeout(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path, tmp_path: Path
) -> None:
    # The life of an installation: `--mcs-peer west --mcs-peer dead`, west unexports. Before,
    # the dead peer (never listed: no cluster id, no Lease) held the import, its derived
    # Service and west's slices here forever, so traffic went to endpoints nobody exported.
    if cluster.plane is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: a second control plane is started")
    with extra_plane(assets_dir(), "alive") as west_plane:
        async with await Kube.load(west_plane.kubeconfig) as west:
            await install_crds(kube)
            await install_crds(west)
            await cluster_id(kube, "east")
            await cluster_id(west, "west")
            await namespace(west, ns)
            # West's Service and its slice, written by hand (no controller runs there).
            await o.service(west, ns, "web", annotations={o.SELECTOR: "app=web"})
            await west.create(
                f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": "web-west",
                        "labels": {"kubernetes.io/service-name": "web"},
                    },
                    "addressType": "IPv4",
                    "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                    "endpoints": [{"addresses": ["10.2.0.1"], "conditions": {"ready": True}}],
                },
            )
            await export(west, ns, "web")
            dead = unreachable_kubeconfig(tmp_path / "dead.kubeconfig")
            args = ("--multicluster", "--mcs-peer-timeout", "20s", "--namespace", ns)
            peers = ("--mcs-peer", str(west_plane.kubeconfig), "--mcs-peer", str(dead))
            async with running(kube.kubeconfig, log_dir / "east.log", *args, *peers):

                async def imported_from_west() -> bool:
                    slices = await imported_slices(kube, ns, "web")
                    assert by_source(slices) == {"west": {"10.2.0.1"}}, slices
                    return True

                await eventually(imported_from_west, timeout=DEADLINE)
                await unexport(west, ns, "web")
                derived = derived_service_name(ns, "web")
                await eventually(
                    lambda: gone_everywhere([kube], ns, "web", derived), timeout=DEADLINE
                )


async def _imported_from_east_only(kube: Kube, ns: str) -> bool:
    body = await import_of(kube, ns)
    assert body is not None, "no ServiceImport"
    # The import is created before its status is written: wait for both.
    clusters = (body.get("status") or {}).get("clusters") or []
    assert [c["cluster"] for c in clusters] == ["east"], body
    slices = await imported_slices(kube, ns, "web")
    assert by_source(slices) == {"east": {"10.1.0.1"}}, slices
    found = conditions(await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web"))
    assert found.get("Ready") == ("True", "Ready"), found
    return True
