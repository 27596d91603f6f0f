"""What the fast multi-cluster controller tests share: this cluster and one peer, each an API
emulator (real HTTP) serving the Multi-Cluster Services CRDs, and the caches filled from them
as a complete listing would (no watch streams: each test says when the caches catch up)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration
from prometheus_client import CollectorRegistry

from endpointslice_operator.controller.mcs.cache import ClusterCache, Key, LocalCache
from endpointslice_operator.controller.mcs.clusters import LeaseBook, Peer
from endpointslice_operator.controller.mcs.imports import ImportSyncer
from endpointslice_operator.controller.sync.events import EventRecorder
from endpointslice_operator.metrics import MulticlusterMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker
from endpointslice_operator.testing import Emulator, run_emulator

ME = "endpointslice-operator.io"
NS = "shop"
LEASES_NS = "ops"
LEASE_LABEL = "endpointslice-operator.io/mcs-peer"
KEY = f"serviceimport:{NS}/web"
MCS = "multicluster.x-k8s.io/v1beta1"
SOURCE = "multicluster.kubernetes.io/source-cluster"
MCS_NAME = "multicluster.kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
DERIVED = derived_service_name(NS, "web")
MCS_GROUPS = ("multicluster.x-k8s.io", "about.k8s.io")


async def api_client(emu: Emulator) -> ApiClient:
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(emu.kubeconfig_path), client_configuration=configuration
    )
    return ApiClient(configuration)


def serve_mcs(emu: Emulator) -> None:
    for group in MCS_GROUPS:
        emu.store.registry.unserved.discard(group)  # the CRDs installed


def name_cluster(emu: Emulator, value: str) -> None:
    emu.store.create(
        {
            "apiVersion": "about.k8s.io/v1beta1",
            "kind": "ClusterProperty",
            "metadata": {"name": "cluster.clusterset.k8s.io"},
            "spec": {"value": value},
        }
    )


def service(name: str = "web", port: int = 80, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": port}], **spec},
    }


def export(name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": MCS,
        "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": NS},
    }


def source_slice(name: str, ip: str, service_name: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": service_name, MANAGED_BY: "kcm"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }


def load(emu: Emulator, cache: ClusterCache) -> None:
    """One complete listing of every kind the cache holds (what is gone is pruned)."""
    for kind in cache.kinds:
        cache.listing(kind)(None)
        handler = cache.handler(kind)
        for obj in emu.store.list(kind):
            handler(None, obj)
        cache.listed_callback(kind)(None)


class World:
    """This cluster ``west`` (``local``) and the peer ``east`` (``remote``)."""

    def __init__(
        self, local: Emulator, remote: Emulator, api: ApiClient, others: tuple[Peer, ...] = ()
    ) -> None:
        self.emu = local
        self.remote = remote
        self.api = api
        self.changed: list[Key] = []
        self.cache = LocalCache(self.changed.append, ME)
        self.peer = Peer(Path("east.kubeconfig"), ClusterCache("east", self.changed.append))
        self.others = others
        """Peers listed before ``peer`` (an unknown one, a gone one: they must not hide it)."""
        self.leases = LeaseBook(
            api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=60.0
        )
        self.registry = CollectorRegistry()
        self.metrics = MulticlusterMetrics(self.registry)
        self.tracker = EndpointSliceTracker()
        self.recorder = EventRecorder(api, component="multicluster-controller")
        self.syncer = ImportSyncer(
            api,
            self.cache,
            [*others, self.peer],
            self.leases,
            ReconcilerConfig(controller_name=ME),
            metrics=self.metrics,
            recorder=self.recorder,
            tracker=self.tracker,
        )
        self.syncer.ready = True

    def load(self) -> None:
        load(self.emu, self.cache)
        load(self.remote, self.peer.cache)

    async def lease(self, cluster: str = "east", age: float = 0.0) -> None:
        """The peer's Lease in this cluster, renewed ``age`` seconds ago; read back."""
        await self.leases.renew(cluster)
        stored = self.emu.store.get("leases", LEASES_NS, f"eso-mcs-{cluster}")
        assert stored is not None
        moment = datetime.now(UTC) - timedelta(seconds=age)
        stored["spec"]["renewTime"] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.emu.store.update(stored)
        await self.leases.refresh()

    async def sync(self) -> None:
        self.load()
        await self.syncer.sync(KEY)
        self.load()

    def exported_both(self, remote_port: int = 80, **remote_spec: Any) -> None:
        """``web`` exported here (one endpoint) and in the peer (one endpoint)."""
        self.emu.store.create(service())
        self.emu.store.create(export())
        self.emu.store.create(source_slice("web-w", "10.1.0.1"))
        self.remote.store.create(service(port=remote_port, **remote_spec))
        self.remote.store.create(export())
        self.remote.store.create(source_slice("web-e", "10.2.0.1"))

    def slices(self) -> dict[str, set[str]]:
        """Imported slices here: source cluster -> addresses."""
        found: dict[str, set[str]] = {}
        for item in self.emu.store.list("endpointslices", NS, label_selector=MCS_NAME + "=web"):
            cluster = item["metadata"]["labels"][SOURCE]
            found.setdefault(cluster, set()).update(
                a for e in item.get("endpoints") or [] for a in e["addresses"]
            )
        return found

    def imported(self) -> dict[str, Any] | None:
        return self.emu.store.get("serviceimports", NS, "web")

    def derived(self) -> dict[str, Any] | None:
        return self.emu.store.get("services", NS, DERIVED)

    def export_here(self) -> dict[str, Any]:
        found = self.emu.store.get("serviceexports", NS, "web")
        assert found is not None
        return found

    def conditions(self) -> dict[str, tuple[str, str]]:
        return {
            c["type"]: (c["status"], c["reason"])
            for c in (self.export_here().get("status") or {}).get("conditions") or []
        }

    def events(self) -> list[tuple[str, str]]:
        return [
            (e["type"], e["reason"])
            for e in self.emu.store.list("events", NS)
            if e["involvedObject"].get("kind") == "ServiceExport"
            for _ in range(int(e.get("count") or 1))
        ]

    def count(self, verb: str, resource: str) -> int:
        """Requests of this verb on this resource made to this cluster (``code`` any)."""
        return self.emu.requests.count(verb=verb, resource=resource)

    def metric(self, kind: str) -> float | None:
        return self.registry.get_sample_value(
            "endpointslice_operator_mcs_writes_total", {"resource": kind}
        )


@contextlib.asynccontextmanager
async def world(
    *, local_id: str | None = "west", others: tuple[Peer, ...] = ()
) -> AsyncIterator[World]:
    async with run_emulator() as local, run_emulator() as remote:
        for emu, cluster in ((local, local_id), (remote, "east")):
            serve_mcs(emu)
            emu.store.create_namespace(NS)
            if cluster is not None:
                name_cluster(emu, cluster)
        local.store.create_namespace(LEASES_NS)
        async with await api_client(local) as api:
            yield World(local, remote, api, others)


def unknown_peer() -> Peer:
    """A peer whose listings never came in."""
    return Peer(Path("south.kubeconfig"), ClusterCache("south", lambda _key: None))


@contextlib.asynccontextmanager
async def gone_peer() -> AsyncIterator[Peer]:
    """A peer ``north`` that is listed and exports ``web`` but has no Lease here (gone)."""
    async with run_emulator() as emu:
        serve_mcs(emu)
        emu.store.create_namespace(NS)
        name_cluster(emu, "north")
        emu.store.create(service())
        emu.store.create(export())
        emu.store.create(source_slice("web-n", "10.3.0.1"))
        peer = Peer(Path("north.kubeconfig"), ClusterCache("north", lambda _key: None))
        load(emu, peer.cache)
        yield peer
