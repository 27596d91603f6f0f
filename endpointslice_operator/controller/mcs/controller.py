"""The multi-cluster controller: this cluster's and the peers' watches, the peers' Leases, and
a work queue of import keys (``namespace/name``) synced by :class:`~.imports.ImportSyncer`.

It runs while this replica leads (its writes are the leader's), with the same
:class:`~endpointslice_operator.controller.queue.ServiceQueue` class as the slice controller (a
queue named ``mcs_import``: per-key backoff, global token bucket, retry budget) and the same
planner for the slices. Its queue starts once this cluster's listings are in; every import key
is queued once then (start-up cleanup: imports whose exports are gone are removed, those that
are right cost no write). Every ``probe_every`` seconds the peers are probed, their Leases
renewed or read, and when a peer's standing changes (listed, Lease expired) every key is
queued again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.events import EventRecorder
from endpointslice_operator.controller.mcs.cache import ClusterCache, Key, LocalCache
from endpointslice_operator.controller.mcs.clusters import LeaseBook, Peer, watch_cluster
from endpointslice_operator.controller.mcs.imports import ImportSyncer, MulticlusterSyncError
from endpointslice_operator.controller.queue import ServiceQueue
from endpointslice_operator.metrics import MulticlusterMetrics, WorkqueueMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.mcs import LABEL_SOURCE_CLUSTER

__all__ = ["MulticlusterController"]

log = logging.getLogger(__name__)


class MulticlusterController:
    def __init__(
        self,
        api_client: ApiClient,
        *,
        peers: tuple[Path, ...],
        config: ReconcilerConfig,
        lease_namespace: str,
        lease_prefix: str,
        lease_label: str,
        peer_timeout: float,
        namespaces: tuple[str, ...] = (),
        workers: int = 5,
        qps: float = 10.0,
        burst: int = 100,
        workqueue_metrics: WorkqueueMetrics | None = None,
        metrics: MulticlusterMetrics | None = None,
    ) -> None:
        self.api_client = api_client
        self.queue: ServiceQueue | None = None
        self.local = LocalCache(self._changed, config.controller_name)
        self.local.on_namespace = self._namespace_added
        self.peers = [Peer(path, ClusterCache(str(path), self._changed)) for path in peers]
        self.leases = LeaseBook(
            api_client,
            namespace=lease_namespace,
            prefix=lease_prefix,
            label=lease_label,
            timeout=peer_timeout,
        )
        self.metrics = metrics
        self.syncer = ImportSyncer(
            api_client,
            self.local,
            self.peers,
            self.leases,
            config,
            metrics=metrics,
            recorder=EventRecorder(api_client, component="multicluster-controller"),
        )
        self.namespaces = namespaces
        self.probe_every = max(0.5, min(10.0, peer_timeout / 3))
        self._queue_args = {"workers": workers, "qps": qps, "burst": burst}
        self._metrics = workqueue_metrics
        self._started = False

    # -- triggers -------------------------------------------------------------------------------

    def _changed(self, key: Key) -> None:
        if self.queue is not None and self._started:
            self.queue.add(f"{key[0]}/{key[1]}")

    def _namespace_added(self, namespace: str) -> None:
        for peer in self.peers:
            for key in peer.cache.exports:
                if key[0] == namespace:
                    self._changed(key)

    def all_keys(self) -> set[Key]:
        keys = set(self.local.exports) | self.local.keys()
        for peer in self.peers:
            keys |= set(peer.cache.exports)
        return keys

    def _queue_all(self) -> None:
        for key in sorted(self.all_keys()):
            self._changed(key)

    # -- running ------------------------------------------------------------------------------

    async def run(self, *, until: Callable[[], bool] | None = None) -> None:
        """Watch, probe and sync until cancelled."""
        self.queue = ServiceQueue(
            name="mcs_import",
            workers=int(self._queue_args["workers"]),
            qps=float(self._queue_args["qps"]),
            burst=int(self._queue_args["burst"]),
            metrics=self._metrics,
        )
        tasks = [
            asyncio.create_task(
                watch_cluster(self.api_client, self.local, namespaces=self.namespaces),
                name="mcs-local-watch",
            ),
            *(
                asyncio.create_task(
                    peer.run(self.leases, probe_every=self.probe_every),
                    name=f"mcs-peer-{peer.kubeconfig}",
                )
                for peer in self.peers
            ),
            asyncio.create_task(self._standing(), name="mcs-peer-standing"),
        ]
        runner: asyncio.Task[None] | None = None
        try:
            while not self.local.complete:
                await asyncio.sleep(0.1)
            try:
                await self.leases.refresh()
            except Exception as exc:
                log.warning("cannot read the peer Leases yet: %s", exc)
            log.info(
                "multi-cluster: this cluster is %s; %d peer(s)",
                self.local.cluster_id or "(no cluster id)",
                len(self.peers),
            )
            self._started = True
            self._queue_all()
            runner = asyncio.create_task(self.queue.run(self._sync), name="mcs_import-workers")
            await asyncio.gather(runner, *tasks)
        finally:
            self._started = False
            await self.queue.stop(timeout=10.0)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, *([runner] if runner else []), return_exceptions=True)

    async def _sync(self, key: str) -> None:
        try:
            await self.syncer.sync(key)
        except MulticlusterSyncError as exc:
            log.warning("import %s: %s; retrying", key, exc)
            raise

    def _standing_of(self) -> tuple[tuple[str | None, bool, bool], ...]:
        return tuple(
            (
                peer.cache.cluster_id,
                peer.cache.complete,
                peer.cache.cluster_id is not None and self.leases.expired(peer.cache.cluster_id),
            )
            for peer in self.peers
        ) + tuple((cluster, True, self.leases.expired(cluster)) for cluster in self._imported_ids())

    def _imported_ids(self) -> list[str]:
        ids = set()
        for by_name in self.local.imported.values():
            for body in by_name.values():
                labels = (body.get("metadata") or {}).get("labels") or {}
                value = labels.get(LABEL_SOURCE_CLUSTER)
                if isinstance(value, str):
                    ids.add(value)
        return sorted(ids)

    async def _standing(self) -> None:
        """Queue every key again when a peer's standing changes (listed, Lease expired)."""
        before = self._standing_of()
        while True:
            await asyncio.sleep(self.probe_every)
            try:
                await self.leases.refresh()
            except Exception as exc:
                log.debug("cannot read the peer Leases: %s", exc)
            self._publish()
            now = self._standing_of()
            if now != before and self._started:
                log.info("multi-cluster: peers changed standing; syncing every import")
                self._queue_all()
            before = now

    def _publish(self) -> None:
        """Refresh the ``endpointslice_operator_mcs_*`` gauges."""
        metrics = self.metrics
        if metrics is None:
            return
        now = datetime.now(UTC)
        reachable: dict[tuple[str, ...], float] = {}
        age: dict[tuple[str, ...], float] = {}
        for peer in self.peers:
            name = peer.cache.cluster_id or str(peer.kubeconfig)
            reachable[(name,)] = 1.0 if peer.reachable else 0.0
            renewed = self.leases.renewed.get(peer.cache.cluster_id or "")
            if renewed is not None:
                age[(name,)] = max(0.0, (now - renewed).total_seconds())
        metrics.replace(metrics.peer_reachable, reachable)
        metrics.replace(metrics.peer_sync_age, age)
        slices: dict[tuple[str, ...], float] = {}
        for by_name in self.local.imported.values():
            for body in by_name.values():
                labels = (body.get("metadata") or {}).get("labels") or {}
                source = str(labels.get(LABEL_SOURCE_CLUSTER) or "")
                slices[(source,)] = slices.get((source,), 0.0) + 1
        metrics.replace(metrics.imported_slices, slices)
        exports: dict[tuple[str, ...], float] = {}
        for export in self.local.exports.values():
            for condition in (export.get("status") or {}).get("conditions") or ():
                if isinstance(condition, dict):
                    labels_ = (str(condition.get("type")), str(condition.get("status")))
                    exports[labels_] = exports.get(labels_, 0.0) + 1
        metrics.replace(metrics.exports, exports)
