"""``endpointslice-operator cleanup`` and the Multi-Cluster Services import side on a real API
server: kept by default, deleted with ``--multicluster`` (ours only: imported slices, derived
Services owned by a ServiceImport, ServiceImports labelled managed-by ours)."""

from __future__ import annotations

import asyncio
import sys

import pytest

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
