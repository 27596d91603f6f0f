"""Multi-Cluster Services on two real control planes: an export in one cluster ("east", the
session's control plane) is imported, by the operator of each cluster, into both: the
ServiceImport, its derived Service, and the imported slices that follow the source's pods."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster, assets_dir
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster

MCS = "/apis/multicluster.x-k8s.io/v1beta1"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
IMPORTED = "multicluster.kubernetes.io/service-name={name}"
DEADLINE = 60.0


@pytest.fixture(scope="module")
def west_plane(cluster: Cluster) -> Iterator[ControlPlane]:
    assets = assets_dir()
    if cluster.plane is None or assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: a second control plane is started")
    plane = ControlPlane(
        assets=assets, workdir=Path(tempfile.mkdtemp(prefix="eso-west-")), with_kcm=False
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()


@pytest.fixture
async def west(west_plane: ControlPlane) -> AsyncIterator[Kube]:
    async with await Kube.load(west_plane.kubeconfig) as client:
        yield client


async def cluster_id(kube: Kube, value: str) -> None:
    body = {
        "apiVersion": "about.k8s.io/v1beta1",
        "kind": "ClusterProperty",
        "metadata": {"name": "cluster.clusterset.k8s.io"},
        "spec": {"value": value},
    }
    status, answer = await kube.status_of(
        "POST", "/apis/about.k8s.io/v1beta1/clusterproperties", body
    )
    assert status in (200, 409), answer


async def export(kube: Kube, ns: str, name: str) -> Any:
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": ns},
    }
    return await kube.create(f"{MCS}/namespaces/{ns}/serviceexports", body)


async def imported_slices(kube: Kube, ns: str, name: str) -> list[Any]:
    body = await kube.get(SLICES.format(ns=ns), labelSelector=IMPORTED.format(name=name))
    return list(body["items"])


def conditions(obj: Any) -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c["reason"])
        for c in (obj.get("status") or {}).get("conditions") or []
    }


async def test_export_in_east_is_imported_in_both_clusters_and_follows_readiness(
    cluster: Cluster, kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await install_crds(kube)
    await install_crds(west)
    await cluster_id(kube, "east")
    await cluster_id(west, "west")
    await west.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    derived = derived_service_name(ns, "web")
    args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
    async with (
        running(
            kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(west_plane.kubeconfig)
        ) as east_op,
        running(
            west.kubeconfig, log_dir / "west.log", *args, "--mcs-peer", str(kube.kubeconfig)
        ) as west_op,
    ):

        async def exported() -> bool:
            body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
            found = conditions(body)
            assert found.get("Valid") == ("True", "Valid"), found
            assert found.get("Ready") == ("True", "Ready"), found
            assert found.get("Conflict") == ("False", "NoConflicts"), found
            return True

        async def imported(client: Kube) -> dict[str, Any]:
            body = await client.get(f"{MCS}/namespaces/{ns}/serviceimports/web")
            spec = body["spec"]
            assert spec["type"] == "ClusterSetIP"
            assert spec["ports"] == [{"name": "http", "protocol": "TCP", "port": 80}]
            assert spec["sessionAffinity"] == "None"
            assert spec.get("ips") and len(spec["ips"]) == len(spec["ipFamilies"])
            assert body["status"]["clusters"] == [{"cluster": "east"}]
            assert (
                body["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"]
                == derived
            )
            service = await client.get(f"/api/v1/namespaces/{ns}/services/{derived}")
            assert service["spec"]["clusterIPs"] == spec["ips"]
            assert "selector" not in service["spec"]
            (ref,) = service["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["name"], ref["uid"]) == (
                "ServiceImport",
                "web",
                body["metadata"]["uid"],
            )
            return body  # type: ignore[no-any-return]

        async def slices_ready(client: Kube, ready: bool) -> bool:
            items = await imported_slices(client, ns, "web")
            assert len(items) == 1, items
            (item,) = items
            assert item["metadata"]["labels"] == {
                "multicluster.kubernetes.io/service-name": "web",
                "multicluster.kubernetes.io/source-cluster": "east",
                "kubernetes.io/service-name": derived,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io",
            }
            assert [e["addresses"] for e in item["endpoints"]] == [["10.1.0.1"]]
            assert item["endpoints"][0]["conditions"]["ready"] is ready
            assert item["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            return True

        try:
            await eventually(exported, timeout=DEADLINE)
            for client in (west, kube):
                await eventually(lambda c=client: imported(c), timeout=DEADLINE)
                await eventually(lambda c=client: slices_ready(c, True), timeout=DEADLINE)
            # A readiness flip in east reaches the imported slices of both clusters.
            await o.set_ready(kube, ns, "web-0", False, at="2026-01-01T00:01:00Z")
            for client in (west, kube):
                await eventually(lambda c=client: slices_ready(c, False), timeout=DEADLINE)
            # Unexported: the import, its derived Service and slices are gone within 20 s.
            await kube.delete(f"{MCS}/namespaces/{ns}/serviceexports/web")

            async def gone(client: Kube) -> bool:
                status, _ = await client.status_of(
                    "GET", f"{MCS}/namespaces/{ns}/serviceimports/web"
                )
                assert status == 404
                status, _ = await client.status_of(
                    "GET", f"/api/v1/namespaces/{ns}/services/{derived}"
                )
                assert status == 404
                assert await imported_slices(client, ns, "web") == []
                return True

            for client in (west, kube):
                await eventually(lambda c=client: gone(c), timeout=20)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")
