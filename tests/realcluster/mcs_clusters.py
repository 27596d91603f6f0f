"""What the Multi-Cluster Services tests share: more control planes, cluster ids, exports, the
imports they read back, and peer credentials bound only to the chart's read-only ClusterRole."""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from scripts.render_manifests import render_objects
from tests.realcluster.kube import Kube

MCS = "/apis/multicluster.x-k8s.io/v1beta1"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
IMPORTED = "multicluster.kubernetes.io/service-name={name}"
SOURCE_CLUSTER = "multicluster.kubernetes.io/source-cluster"
CLUSTER_PROPERTY = "/apis/about.k8s.io/v1beta1/clusterproperties"
CLUSTER_ID = "cluster.clusterset.k8s.io"
DEADLINE = 60.0
PEER_READER_SUFFIX = "-mcs-peer-reader"


@contextlib.contextmanager
def extra_plane(assets: Path | None, prefix: str) -> Iterator[ControlPlane]:
    """One more control plane (etcd and kube-apiserver, no kube-controller-manager), stopped by
    PID afterwards; the test is skipped without ``KUBEBUILDER_ASSETS``."""
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: more control planes are started")
    plane = ControlPlane(
        assets=assets, workdir=Path(tempfile.mkdtemp(prefix=f"eso-{prefix}-")), with_kcm=False
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()


async def cluster_id(kube: Kube, value: str) -> str:
    """Name the cluster ``value`` unless it has an id already; returns the id it has."""
    body = {
        "apiVersion": "about.k8s.io/v1beta1",
        "kind": "ClusterProperty",
        "metadata": {"name": CLUSTER_ID},
        "spec": {"value": value},
    }
    status, answer = await kube.status_of("POST", CLUSTER_PROPERTY, body)
    assert status in (200, 409), answer
    current = await kube.get(f"{CLUSTER_PROPERTY}/{CLUSTER_ID}")
    return str(current["spec"]["value"])


async def namespace(kube: Kube, name: str) -> None:
    status, answer = await kube.status_of(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )
    assert status in (200, 409), answer


async def export(kube: Kube, ns: str, name: str) -> Any:
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": ns},
    }
    return await kube.create(f"{MCS}/namespaces/{ns}/serviceexports", body)


async def unexport(kube: Kube, ns: str, name: str) -> None:
    await kube.delete(f"{MCS}/namespaces/{ns}/serviceexports/{name}")


async def export_of(kube: Kube, ns: str, name: str = "web") -> Any:
    return await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/{name}")


async def import_of(client: Kube, ns: str, name: str = "web") -> Any:
    return await client.get(f"{MCS}/namespaces/{ns}/serviceimports/{name}")


async def imported_slices(kube: Kube, ns: str, name: str) -> list[Any]:
    body = await kube.get(SLICES.format(ns=ns), labelSelector=IMPORTED.format(name=name))
    return list(body["items"])


def conditions(obj: Any) -> dict[str, tuple[str, str]]:
    return {
        c["type"]: (c["status"], c["reason"])
        for c in (obj.get("status") or {}).get("conditions") or []
    }


def by_source(items: list[Any]) -> dict[str, set[str]]:
    """source cluster -> the addresses of its imported slices."""
    found: dict[str, set[str]] = {}
    for item in items:
        cluster = item["metadata"]["labels"][SOURCE_CLUSTER]
        found.setdefault(cluster, set()).update(
            a for e in item.get("endpoints") or [] for a in e["addresses"]
        )
    return found


def ready_by_source(items: list[Any]) -> dict[str, set[str]]:
    """source cluster -> the addresses of its ready imported endpoints."""
    found: dict[str, set[str]] = {}
    for item in items:
        cluster = item["metadata"]["labels"][SOURCE_CLUSTER]
        found.setdefault(cluster, set()).update(
            a
            for e in item.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready")
            for a in e["addresses"]
        )
    return found


async def gone_everywhere(clients: list[Kube], ns: str, name: str, derived: str) -> bool:
    """No ServiceImport, derived Service or imported slice of ``name`` in any of ``clients``."""
    for client in clients:
        status, _ = await client.status_of("GET", f"{MCS}/namespaces/{ns}/serviceimports/{name}")
        assert status == 404, (client.base, "import")
        status, _ = await client.status_of("GET", f"/api/v1/namespaces/{ns}/services/{derived}")
        assert status == 404, (client.base, "derived Service")
        assert await imported_slices(client, ns, name) == [], client.base
    return True


def peer_reader_objects(release: str, account: str, account_namespace: str) -> list[Any]:
    """The chart's read-only peer ClusterRole and its binding to ``account`` (as the chart
    renders them with ``multicluster.peerReader.subjects``), and nothing else."""
    values = {
        "multicluster": {
            "enabled": True,
            "peerReader": {
                "subjects": [
                    {"kind": "ServiceAccount", "name": account, "namespace": account_namespace}
                ]
            },
        }
    }
    found = [
        item
        for item in render_objects(values, name=release, namespace=account_namespace)
        if item["kind"] in {"ClusterRole", "ClusterRoleBinding"}
        and item["metadata"]["name"].endswith(PEER_READER_SUFFIX)
    ]
    assert sorted(item["kind"] for item in found) == ["ClusterRole", "ClusterRoleBinding"], found
    return found


def peer_reader_kubeconfig(plane: ControlPlane, without: tuple[str, ...] = ()) -> Path:
    """A kubeconfig for ``plane`` whose identity (a ServiceAccount token) is bound to the chart's
    peer ClusterRole only: what another cluster's operator reads this one with. ``without``:
    resources taken out of the ClusterRole (a peer granted too little)."""
    release = f"eso-{secrets.token_hex(3)}"
    account, account_namespace = f"{release}-peer", "kube-system"
    for item in peer_reader_objects(release, account, account_namespace):
        if item["kind"] == "ClusterRole" and without:
            for rule in item["rules"]:
                rule["resources"] = [r for r in rule["resources"] if r not in without]
            item["rules"] = [rule for rule in item["rules"] if rule["resources"]]
        plural = "clusterroles" if item["kind"] == "ClusterRole" else "clusterrolebindings"
        status, answer = plane.request("POST", f"/apis/rbac.authorization.k8s.io/v1/{plural}", item)
        assert status == 201, (status, answer)
    _, kubeconfig = plane.service_account_token(account_namespace, account, seconds=7200)
    return kubeconfig
