"""``endpointslice-operator cleanup`` and the Multi-Cluster Services import side on a real API
server: kept by default, deleted with ``--multicluster`` (ours only: imported slices, derived
Services owned by a ServiceImport, ServiceImports labelled managed-by ours, and the per-peer
Leases once the operator stopped)."""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio.config import new_client_from_config

from endpointslice_operator.controller.mcs.clusters import LeaseBook
from tests.realcluster.kube import Kube
from tests.realcluster.mcs_crds import install_crds

pytestmark = pytest.mark.realcluster

MCS = "/apis/multicluster.x-k8s.io/v1beta1"
OURS = {"endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io"}
TIMEOUT = 60.0


async def cleanup(kube: Kube, ns: str, *args: str) -> list[str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "cleanup",
        "--kubeconfig",
        str(kube.kubeconfig),
        "--namespace",
        ns,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(TIMEOUT):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().splitlines()


async def service_import(kube: Kube, ns: str, name: str, labels: dict[str, str]) -> str:
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "type": "ClusterSetIP",
            "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
        },
    }
    created = await kube.create(f"{MCS}/namespaces/{ns}/serviceimports", body)
    return str(created["metadata"]["uid"])


async def test_cleanup_keeps_the_import_side_unless_multicluster(kube: Kube, ns: str) -> None:
    await install_crds(kube)
    uid = await service_import(kube, ns, "web", OURS)
    await service_import(kube, ns, "theirs", {})
    derived = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "derived-abc",
            "namespace": ns,
            "labels": OURS,
            "ownerReferences": [
                {
                    "apiVersion": "multicluster.x-k8s.io/v1beta1",
                    "kind": "ServiceImport",
                    "name": "web",
                    "uid": uid,
                    "controller": True,
                }
            ],
        },
        "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    }
    await kube.create(f"/api/v1/namespaces/{ns}/services", derived)
    imported = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "web-east-1",
            "namespace": ns,
            "labels": {
                **OURS,
                "kubernetes.io/service-name": "derived-abc",
                "multicluster.kubernetes.io/service-name": "web",
                "multicluster.kubernetes.io/source-cluster": "east",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    await kube.create(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", imported)

    out = await cleanup(kube, ns)
    assert out[-2:] == [
        "kept 1 imported EndpointSlice(s) (Multi-Cluster Services; --multicluster deletes them "
        "with their ServiceImports and derived Services)",
        "deleted 0 EndpointSlice(s) managed by endpointslice-operator.io",
    ]
    assert len((await kube.get(f"{MCS}/namespaces/{ns}/serviceimports"))["items"]) == 2

    out = await cleanup(kube, ns, "--multicluster")
    # The per-peer Leases are the operator's, not a namespace's: those other tests' operators
    # left on this shared plane go too (a test of their own below).
    out = [line for line in out if not line.startswith("deleted the per-peer Lease ")]
    assert out == [
        f"deleted endpointslice {ns}/web-east-1",
        f"deleted service {ns}/derived-abc",
        f"deleted serviceimport {ns}/web",
        "deleted 3 object(s) of the Multi-Cluster Services import side managed by "
        "endpointslice-operator.io",
        "deleted 0 EndpointSlice(s) managed by endpointslice-operator.io",
    ]
    left = (await kube.get(f"{MCS}/namespaces/{ns}/serviceimports"))["items"]
    assert [i["metadata"]["name"] for i in left] == ["theirs"]
    status, _ = await kube.status_of("GET", f"/api/v1/namespaces/{ns}/services/derived-abc")
    assert status == 404


async def peer_leases(kube: Kube, ns: str) -> list[str]:
    items = (await kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"))["items"]
    return sorted(i["metadata"]["name"] for i in items)


async def test_cleanup_multicluster_deletes_our_peer_leases_once_the_operator_stopped(
    kube: Kube, ns: str
) -> None:
    # The per-peer Leases as the operator writes them (its own LeaseBook), and two that are
    # not ours: another name, and ours by name without the label.
    api_client = await new_client_from_config(config_file=str(kube.kubeconfig))
    try:
        book = LeaseBook(
            api_client,
            namespace=ns,
            prefix="endpointslice-operator",
            label="endpointslice-operator.io/mcs-peer",
            timeout=30,
        )
        await book.renew("east")
        await book.renew("west")
    finally:
        await api_client.close()
    for name, labels in (
        ("other-operator-mcs-east", {"endpointslice-operator.io/mcs-peer": "true"}),
        ("endpointslice-operator-mcs-north", {}),
    ):
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"holderIdentity": "x", "leaseDurationSeconds": 30},
        }
        await kube.create(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", body)
    # The operator still runs here: its leader Lease is held and renewed.
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    leader = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "endpointslice-operator", "namespace": ns},
        "spec": {"holderIdentity": "pod-1", "leaseDurationSeconds": 15, "renewTime": now},
    }
    leader = await kube.create(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", leader)
    ours = ["endpointslice-operator-mcs-east", "endpointslice-operator-mcs-west"]
    others = ["endpointslice-operator-mcs-north", "other-operator-mcs-east"]
    everything = sorted(["endpointslice-operator", *ours, *others])
    assert await peer_leases(kube, ns) == everything

    await cleanup(kube, ns, "--multicluster", "--lease-namespace", ns)
    assert await peer_leases(kube, ns) == everything  # it would renew them

    # Stopped: its Lease released.
    leader["spec"] = {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now}
    await kube.request(
        "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/endpointslice-operator", leader
    )
    out = await cleanup(kube, ns, "--multicluster", "--lease-namespace", ns, "--dry-run")
    assert [line for line in out if "per-peer" in line] == [
        f"would delete the per-peer Lease {ns}/{name} (Multi-Cluster Services)" for name in ours
    ]
    assert await peer_leases(kube, ns) == everything
    out = await cleanup(kube, ns, "--multicluster", "--lease-namespace", ns)
    assert [line for line in out if "Lease" in line] == [
        f"deleted the leader-election Lease {ns}/endpointslice-operator (no live holder)",
        *(f"deleted the per-peer Lease {ns}/{name} (Multi-Cluster Services)" for name in ours),
    ]
    assert await peer_leases(kube, ns) == others
