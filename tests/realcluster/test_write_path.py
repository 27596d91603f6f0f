"""The writer's direct requests (``controller.direct_requests`` on ``controller.keepalive``)
against a real kube-apiserver: client-certificate authentication and ``tls-server-name`` (the
TLS set-up built from the configuration), chunked answers, a bearer token refreshed per request,
and the statuses ``ApiError`` reports."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.writer import EndpointsWriter, SliceWriter
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import LABEL_MANAGED_BY, LABEL_SERVICE_NAME, OURS

pytestmark = pytest.mark.realcluster


def endpoint_slice(ns: str, address: str = "10.1.0.1") -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "namespace": ns,
            "generateName": "web-",
            "labels": {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: OURS},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


def client_certificate_kubeconfig(cluster: Cluster, directory: Path, tls_server_name: str) -> Path:
    """A kubeconfig authenticating with a client certificate signed by the control plane's CA
    (``--client-ca-file``), in group ``system:masters``; no token."""
    plane = cluster.plane
    if plane is None:
        pytest.skip("needs the control plane this run started (its CA key signs the cert)")
    key, csr, cert = directory / "writer.key", directory / "writer.csr", directory / "writer.crt"
    subprocess.run(
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-subj", "/O=system:masters/CN=eso-writer", "-out", str(csr)],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(plane.ca_file),
         "-CAkey", str(plane.pki / "ca.key"), "-CAcreateserial", "-days", "1", "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    kubeconfig = directory / "kubeconfig"
    cluster_entry = {"server": plane.server, "certificate-authority": str(plane.ca_file)}
    cluster_entry["tls-server-name"] = tls_server_name
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "envtest", "cluster": cluster_entry}],
                "users": [
                    {
                        "name": "writer",
                        "user": {"client-certificate": str(cert), "client-key": str(key)},
                    }
                ],
                "contexts": [{"name": "w", "context": {"cluster": "envtest", "user": "writer"}}],
                "current-context": "w",
            }
        )
    )
    return kubeconfig


async def load(kubeconfig: Path) -> Configuration:
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    resolve_env_proxy(configuration)
    return configuration


async def test_slice_and_endpoints_writes_with_a_client_certificate(
    cluster: Cluster, ns: str, tmp_path: Path
) -> None:
    # The serving certificate names kubernetes.default, not the 127.0.0.1 of the URL only.
    kubeconfig = client_certificate_kubeconfig(cluster, tmp_path, "kubernetes.default")
    configuration = await load(kubeconfig)
    assert not configuration.api_key  # nothing but the certificate authenticates
    async with OperatorApiClient(configuration) as api:
        assert api.keepalive is not None  # the writers' own TLS connections
        writer = SliceWriter(api)
        created = await writer.create(endpoint_slice(ns))
        assert created["metadata"]["name"].startswith("web-")
        not_ready = [{"addresses": ["10.1.0.1"], "conditions": {"ready": False}}]
        replaced = await writer.replace({**created, "endpoints": not_ready})
        assert replaced["endpoints"][0]["conditions"]["ready"] is False

        with pytest.raises(ApiError) as stale:
            await writer.replace(created)  # the resourceVersion before the replace
        assert (stale.value.status, stale.value.reason, stale.value.conflict) == (
            409,
            "Conflict",
            True,
        )
        with pytest.raises(ApiError) as invalid:
            await writer.create(endpoint_slice(ns, address="not-an-ip"))
        assert (invalid.value.status, invalid.value.reason) == (422, "Invalid")
        assert "endpoints[0].addresses[0]" in {c.get("field") for c in invalid.value.causes}

        assert await writer.delete(replaced) is True
        assert await writer.delete(replaced) is False  # 404 from the real server

        # A large answer comes chunked from kube-apiserver (Transfer-Encoding: chunked).
        large = endpoint_slice(ns)
        large["endpoints"] = [
            {"addresses": [f"10.2.0.{i + 1}"], "conditions": {"ready": True}} for i in range(100)
        ]
        stored_large = await writer.create(large)
        assert len(stored_large["endpoints"]) == 100
        assert await writer.delete(stored_large) is True

        endpoints = EndpointsWriter(api)
        stored = await endpoints.create(
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"namespace": ns, "name": "web"},
                "subsets": [{"addresses": [{"ip": "10.1.0.1"}], "ports": [{"port": 80}]}],
            }
        )
        newer = await endpoints.replace({**stored, "subsets": []})
        with pytest.raises(ApiError) as precondition:
            await endpoints.delete(stored)  # resourceVersion precondition no longer holds
        assert precondition.value.conflict
        assert await endpoints.delete(newer) is True


async def test_tls_server_name_is_verified(cluster: Cluster, tmp_path: Path) -> None:
    kubeconfig = client_certificate_kubeconfig(cluster, tmp_path, "not-in-the-cert.example")
    async with OperatorApiClient(await load(kubeconfig)) as api:
        with pytest.raises(aiohttp.ClientConnectionError) as refused:
            await SliceWriter(api).create(endpoint_slice("default"))
    assert isinstance(refused.value.__cause__, ssl.SSLCertVerificationError)
    assert "not-in-the-cert.example" in str(refused.value.__cause__)


async def test_the_token_refresh_hook_runs_before_each_write(cluster: Cluster, ns: str) -> None:
    configuration = await load(cluster.kubeconfig)
    token = configuration.api_key.get("BearerToken")
    if not token:
        pytest.skip("the cluster's kubeconfig authenticates without a bearer token")
    configuration.api_key["BearerToken"] = "Bearer not-a-valid-token"
    async with OperatorApiClient(configuration) as api:
        with pytest.raises(ApiError) as refused:
            await SliceWriter(api).create(endpoint_slice(ns))
        assert (refused.value.status, refused.value.reason) == (401, "Unauthorized")

        refreshes: list[int] = []

        def refresh(config: Any) -> None:  # what in-cluster token files and exec plugins do
            refreshes.append(1)
            config.api_key["BearerToken"] = token

        configuration.refresh_api_key_hook = refresh
        writer = SliceWriter(api)
        created = await writer.create(endpoint_slice(ns))
        assert await writer.delete(created) is True
    assert len(refreshes) == 2
