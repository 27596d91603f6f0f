"""The multi-cluster controller: this cluster's and the peers' watches, the peers' Leases, and
the import keys (``serviceimport:namespace/name``) it queues into the operator's one work queue.

It runs while this replica leads (its writes are the leader's). It has no queue of its own:
ServiceImport is an owner kind (:data:`~endpointslice_operator.controller.cache.owner_kinds.
SERVICE_IMPORT`), and its :class:`~.imports.ImportSyncer` is that kind's syncer, so import keys
get the same workers, per-key backoff, retry budget, write budget and workqueue metrics
(``name="endpoint_slice"``) as Service keys, and the same planner for the slices. Once this
cluster's listings are in, every import key is queued (start-up cleanup: imports whose exports
are gone are removed, those that are right cost no write). Every ``probe_every`` seconds the
peers are probed, their Leases renewed or read, and when a peer's standing changes (listed,
Lease expired) every key is queued again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.api.writer import SliceWriter
from endpointslice_operator.controller.cache.owner_kinds import SERVICE_IMPORT
from endpointslice_operator.controller.mcs.cache import ClusterCache, Key, LocalCache
from endpointslice_operator.controller.mcs.clusters import LeaseBook, Peer, watch_cluster
from endpointslice_operator.controller.mcs.imports import ImportSyncer
from endpointslice_operator.controller.mcs.kopf_handlers import (
    KOPF_KINDS,
    serve_exports_and_imports,
)
from endpointslice_operator.controller.sync.events import EventRecorder
from endpointslice_operator.controller.work.budget import WriteBudget
from endpointslice_operator.metrics import ApiServingMetrics, MulticlusterMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.mcs import LABEL_SOURCE_CLUSTER
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

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
        requeue: Callable[[list[str]], None],
        namespaces: tuple[str, ...] = (),
        metrics: MulticlusterMetrics | None = None,
        api_serving: ApiServingMetrics | None = None,
        writer: SliceWriter | None = None,
        budget: WriteBudget | None = None,
        tracker: EndpointSliceTracker | None = None,
        recorder: EventRecorder | None = None,
        configuration: Configuration | None = None,
        on_signal: Callable[[], None] | None = None,
    ) -> None:
        self.api_client = api_client
        self.configuration = configuration
        """With it, this cluster's ServiceExports and ServiceImports are handled through Kopf
        (:mod:`.kopf_handlers`); without it (an embedding without Kopf) list-watched."""
        self.on_signal = on_signal
        self.requeue = requeue
        """Queues owner keys into the operator's work queue (``EventRouter.requeue``)."""
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
        self.api_serving = api_serving
        self.syncer = ImportSyncer(
            api_client,
            self.local,
            self.peers,
            self.leases,
            config,
            metrics=metrics,
            recorder=recorder or EventRecorder(api_client, component="multicluster-controller"),
            writer=writer,
            budget=budget,
            tracker=tracker,
        )
        self.syncer.keys = self.owner_keys
        self.namespaces = namespaces
        self.probe_every = max(0.5, min(10.0, peer_timeout / 3))
        self._started = False

    # -- triggers -------------------------------------------------------------------------------

    def _changed(self, key: Key) -> None:
        if self._started:
            self.requeue([SERVICE_IMPORT.key(*key)])

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

    def owner_keys(self) -> Iterable[str]:
        """:meth:`all_keys` as owner keys (``serviceimport:namespace/name``)."""
        return [SERVICE_IMPORT.key(*key) for key in sorted(self.all_keys())]

    def _queue_all(self) -> None:
        if self._started:
            self.requeue([*self.owner_keys(), *sorted(self.syncer.waiting)])
            self.syncer.waiting.clear()

    # -- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """:meth:`watch` and :meth:`lead` together, until cancelled."""
        watching = asyncio.create_task(self.watch(), name="mcs-watch")
        try:
            await self.lead()
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

    async def watch(self) -> None:
        """This cluster's and the peers' watches, until cancelled. Every replica runs them
        (standbys too), so that a new leader starts with warm caches."""
        kopf_kinds = KOPF_KINDS if self.configuration is not None else ()
        tasks = [
            asyncio.create_task(
                watch_cluster(
                    self.api_client, self.local, namespaces=self.namespaces, skip=kopf_kinds
                ),
                name="mcs-local-watch",
            ),
            *(
                asyncio.create_task(peer.watch(), name=f"mcs-peer-{peer.kubeconfig}")
                for peer in self.peers
            ),
        ]
        if self.configuration is not None:
            tasks.append(
                asyncio.create_task(
                    serve_exports_and_imports(
                        self.api_client,
                        self.configuration,
                        self.local,
                        namespaces=self.namespaces,
                        on_signal=self.on_signal,
                        api_serving=self.api_serving,
                    ),
                    name="mcs-local-kopf",
                )
            )
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def lead(self) -> None:
        """While this replica leads, until cancelled: once this cluster's listings are in,
        queue every import key, probe the peers (renewing their Leases: writes), and queue
        every key again when a peer's standing changes."""
        tasks: list[asyncio.Task[None]] = []
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
            self.syncer.ready = True
            self._queue_all()
            tasks = [
                *(
                    asyncio.create_task(
                        peer.probe(self.leases, probe_every=self.probe_every),
                        name=f"mcs-probe-{peer.kubeconfig}",
                    )
                    for peer in self.peers
                ),
                asyncio.create_task(self._standing(), name="mcs-peer-standing"),
            ]
            await asyncio.gather(*tasks)
        finally:
            self._started = False
            self.syncer.ready = False
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _standing_of(self) -> tuple[tuple[str | None, bool, bool], ...]:
        now = asyncio.get_running_loop().time()
        timeout = self.leases.timeout
        return tuple(
            (
                peer.cache.cluster_id,
                peer.listed or peer.unlisted_too_long(now, timeout),
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
            # The kubeconfig names a peer from the start (its cluster id is known only once it
            # answers): one series per peer for its whole life, so an alert can fire for a peer
            # that was never reachable.
            name = str(peer.kubeconfig)
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
