"""The re-listing check's count (``Relisting.count``, ``missing_any``) against a real
kube-apiserver, which, unlike the emulator, takes a request without the bearer token for
``system:anonymous`` and refuses it (403): the count must carry the token, like every other
request of the operator."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.watch.relist import Key, Relisting
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube

pytestmark = pytest.mark.realcluster


def config_map(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_the_count_of_a_relisting_is_authenticated_by_the_bearer_token(
    cluster: Cluster, kube: Kube, ns: str
) -> None:
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(Path(cluster.kubeconfig)), client_configuration=configuration
    )
    resolve_env_proxy(configuration)
    if not configuration.api_key.get("BearerToken"):
        pytest.skip("the cluster's kubeconfig authenticates by certificate, not a token")
    for name in ("a", "b", "c"):
        await kube.create(f"/api/v1/namespaces/{ns}/configmaps", config_map(name))
    listed = await kube.get(f"/api/v1/namespaces/{ns}/configmaps")
    in_ns = len(listed["items"])  # ours, and kube-root-ca.crt where kcm runs
    held: dict[Key, str] = {
        (ns, item["metadata"]["name"]): item["metadata"]["uid"] for item in listed["items"]
    }
    async with OperatorApiClient(configuration) as api:
        relisting = Relisting(
            api,
            "/api/v1",
            "configmaps",
            held=lambda: list(held),
            uid_of=held.get,
            forget=lambda key: None,
        )
        assert await relisting.count(ns) == in_ns
        assert not await relisting.missing_any([ns])
        held[(ns, "gone")] = "uid-of-a-config-map-deleted-meanwhile"
        assert await relisting.missing_any([ns])  # one more held than the server has
        everywhere = await relisting.count(None)
        assert everywhere is not None and everywhere >= in_ns
