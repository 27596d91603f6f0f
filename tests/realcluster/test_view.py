"""The endpoint view against a real kube-apiserver and kube-controller-manager: KCM's slices
for a selector Service and a foreign slice, merged as kube-proxy merges them, through a port
rename, a readiness change and a slice deletion."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from endpointslice_operator.view import (
    Endpoint,
    EndpointKey,
    list_endpoints,
    open_api_client,
    watch_endpoints,
)
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import KCM, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, Kube, eventually

pytestmark = pytest.mark.realcluster

VIEW = "endpointslice-operator.io/view"
FOREIGN = "load-balancer.example.com"


class Shown:
    """The view as the changes of ``watch_endpoints`` add it up."""

    def __init__(self) -> None:
        self.endpoints: dict[EndpointKey, Endpoint] = {}
        self.synced = False


@contextlib.asynccontextmanager
async def watching(kube: Kube, ns: str) -> AsyncIterator[Shown]:
    shown = Shown()
    api = await open_api_client(kube.kubeconfig)

    async def run() -> None:
        async for change in watch_endpoints(api, namespace=ns):
            if change.type == "synced":
                shown.synced = True
            elif change.type == "removed":
                assert isinstance(change.key, EndpointKey)
                del shown.endpoints[change.key]
            else:
                assert isinstance(change.key, EndpointKey)
                assert isinstance(change.endpoint, Endpoint)
                shown.endpoints[change.key] = change.endpoint

    task = asyncio.create_task(run())
    try:
        yield shown
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api.close()


async def test_kcm_slices_and_a_foreign_slice(cluster: Cluster, kube: Kube, ns: str) -> None:
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager")
    await o.node(kube, "node-a", "zone-a")
    await o.service(
        kube, ns, "web", selector={"app": "web"}, opt_in=False, annotations={VIEW: "true"}
    )
    await o.service(kube, ns, "other", selector={"app": "web"}, opt_in=False)  # not annotated
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "web-1", "10.1.0.2", ready=False)
    # Another manager lists web-1's address as ready, and one address of its own.
    await kube.create(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "web-lb",
                "labels": {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: FOREIGN},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [
                {"addresses": ["10.1.0.2"], "conditions": {"ready": True}},
                {"addresses": ["10.1.0.9"], "conditions": {"ready": True}, "nodeName": "node-a"},
            ],
        },
    )

    def key(address: str, port_name: str = "http") -> EndpointKey:
        return EndpointKey(ns, "web", port_name, 80, "TCP", address)

    async with watching(kube, ns) as shown:

        async def merged() -> bool:
            assert shown.synced
            assert {
                k: (e.slice.startswith("web-lb"), e.ready) for k, e in shown.endpoints.items()
            } == {
                key("10.1.0.1"): (False, True),  # KCM's slice
                key("10.1.0.2"): (True, True),  # not ready in KCM's slice: the ready copy wins
                key("10.1.0.9"): (True, True),
            }
            return True

        await eventually(merged, timeout=60)
        kcm_record = shown.endpoints[key("10.1.0.1")]
        assert (kcm_record.target_port, kcm_record.node, kcm_record.zone, kcm_record.pod) == (
            8080,
            "node-a",
            "zone-a",
            "web-0",
        )
        # Only KCM's slices: web-1 is not ready there.
        only_kcm = await asyncio.to_thread(
            list_endpoints, kube.kubeconfig, namespace=ns, services="web", managed_by=KCM
        )
        assert list(only_kcm) == [key("10.1.0.1")]
        everything = await asyncio.to_thread(
            list_endpoints, kube.kubeconfig, namespace=ns, services="web", policy="all"
        )
        assert everything[key("10.1.0.2")].ready  # still one record per address

        # The Service's port renamed: KCM renames its slice's port; the foreign slice still
        # names the old one, which no service port joins any more.
        await kube.patch(
            f"/api/v1/namespaces/{ns}/services/web",
            {"spec": {"ports": [{"name": "web", "port": 80, "targetPort": 8080}]}},
        )

        async def renamed() -> bool:
            assert set(shown.endpoints) == {key("10.1.0.1", "web")}
            return True

        await eventually(renamed, timeout=60)
        # The other manager follows: its ready copy of 10.1.0.2 wins again.
        await kube.patch(
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/web-lb",
            {"ports": [{"name": "web", "port": 8080, "protocol": "TCP"}]},
        )

        async def both() -> bool:
            assert set(shown.endpoints) == {
                key("10.1.0.1", "web"),
                key("10.1.0.2", "web"),
                key("10.1.0.9", "web"),
            }
            assert shown.endpoints[key("10.1.0.2", "web")].slice == "web-lb"
            return True

        await eventually(both, timeout=60)

        # web-0 stops being ready: KCM updates its slice, and the view follows.
        await o.set_ready(kube, ns, "web-0", False, at="2026-01-01T00:01:00Z")

        async def gone() -> bool:
            assert set(shown.endpoints) == {key("10.1.0.2", "web"), key("10.1.0.9", "web")}
            return True

        await eventually(gone, timeout=60)
        # The foreign slice deleted: what only it listed goes.
        await kube.delete(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/web-lb")

        async def empty() -> bool:
            assert shown.endpoints == {}
            return True

        await eventually(empty, timeout=60)
