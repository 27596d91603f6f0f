"""The chart's RBAC on a real control plane, for tests that run the operator (or its uninstall
hook) as its ServiceAccount would: the objects rendered for a fresh release, created, a token
minted for the account, and the cluster-scoped ones deleted afterwards (the namespaced ones go
with the test's namespace)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from scripts.render_manifests import render_objects
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube

RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def rbac_objects(
    release: str, namespace: str, values: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [
        item
        for item in render_objects(values or {}, name=release, namespace=namespace)
        if item["kind"] in RBAC_KINDS
    ]


def path_of(item: dict[str, Any]) -> str:
    group_version = item["apiVersion"]
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    plural = {"ServiceAccount": "serviceaccounts"}.get(item["kind"], item["kind"].lower() + "s")
    namespace = item["metadata"].get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{scope}/{plural}"


async def published(kube: Kube, ns: str, expected: set[str]) -> bool:
    """The addresses of Service ``web``'s slices are exactly ``expected``."""
    assert o.addresses(await kube.slices(ns, "web")) == expected
    return True


@asynccontextmanager
async def chart_account(
    cluster: Cluster,
    kube: Kube,
    ns: str,
    values: dict[str, Any] | None = None,
    keep: Callable[[dict[str, Any]], bool] = lambda item: True,
    release: str | None = None,
) -> AsyncIterator[Path]:
    """The RBAC objects the chart renders for a release in ``ns`` (those ``keep`` accepts:
    exactly one ServiceAccount among them), and a kubeconfig of that ServiceAccount."""
    if cluster.plane is None:
        pytest.skip("needs the fixture's control plane to mint a ServiceAccount token")
    release = release or f"eso-{secrets.token_hex(3)}"
    created: list[dict[str, Any]] = []
    try:
        for item in rbac_objects(release, ns, values):
            if keep(item):
                await kube.create(path_of(item), item)
                created.append(item)
        (account,) = [item for item in created if item["kind"] == "ServiceAccount"]
        _, kubeconfig = cluster.plane.service_account_token(ns, account["metadata"]["name"])
        yield kubeconfig
    finally:
        for item in reversed(created):
            if not item["metadata"].get("namespace"):
                await kube.delete(f"{path_of(item)}/{item['metadata']['name']}")
