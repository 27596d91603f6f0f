"""One import's sync: the ServiceImport, its derived Service, the imported slices of every
source cluster, and the status of this cluster's ServiceExport.

:class:`ImportSyncer` is the owner syncer of the ``ServiceImport`` kind (see
:mod:`endpointslice_operator.controller.cache.owner_kinds`): its keys
(``serviceimport:namespace/name``) go through the operator's one work queue, with the same workers,
per-key backoff, retry budget and workqueue metrics as every other key, and its writes take tokens
from the same write budget and pass the same write fence. The slices it writes are recorded in the
same tracker, so the echo of its own write queues nothing, while a change or deletion by anyone else
queues the import key again.

Which clusters count. This cluster always does. A peer counts with what its cache holds while
its Lease in this cluster is fresh and its listings are in ("live", even if it stopped
answering a moment ago: its slices stay until the Lease expires). A source cluster whose Lease
expired, or that has none, is gone: its slices are deleted and it leaves the import. A peer
whose listings are not in yet while its Lease is fresh is unknown: nothing of it is changed,
and no import is deleted while some peer is unknown (a failed or partial listing is never
taken as empty).

Only objects of ours are written: a ServiceImport labelled with our managed-by value, a derived
Service whose controller reference is that ServiceImport, slices with our managed-by label.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.writer import ObjectWriter, SliceWriter
from endpointslice_operator.controller.cache.owner_kinds import SERVICE_IMPORT, split_owner_key
from endpointslice_operator.controller.mcs.cache import ClusterCache, Key, LocalCache
from endpointslice_operator.controller.mcs.clusters import API_TIMEOUT, LeaseBook, Peer
from endpointslice_operator.controller.sync.events import NORMAL, WARNING, EventRecorder
from endpointslice_operator.controller.work.budget import WriteBudget, spend
from endpointslice_operator.metrics import MulticlusterMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY
from endpointslice_operator.reconciler.mcs import (
    CONDITION_CONFLICT,
    CONDITION_READY,
    CONDITION_VALID,
    LABEL_SOURCE_CLUSTER,
    MCS_API_VERSION,
    ExportedService,
    ImportResolution,
    derived_service,
    derived_service_change,
    derived_service_name,
    endpoint_slice_objects,
    export_conditions,
    merge_conditions,
    owned_by_import,
    plan_import_slices,
    read_export,
    resolve_import,
    same_conditions,
    service_import,
    service_import_change,
)
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

__all__ = ["ImportSyncer", "MulticlusterSyncError"]

log = logging.getLogger(__name__)

IMPORTS = f"/apis/{MCS_API_VERSION}/namespaces/{{namespace}}/serviceimports"
EXPORTS = f"/apis/{MCS_API_VERSION}/namespaces/{{namespace}}/serviceexports"
SERVICES = "/api/v1/namespaces/{namespace}/services"


class MulticlusterSyncError(Exception):
    """A write of an import failed: the key is retried with backoff."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


@dataclass
class SyncCounts:
    """Writes made, by resource (also counted in ``endpointslice_operator_mcs_writes_total``)."""

    writes: dict[str, int] = field(default_factory=dict)
    metrics: MulticlusterMetrics | None = None

    def add(self, kind: str, n: int = 1) -> None:
        self.writes[kind] = self.writes.get(kind, 0) + n
        if self.metrics is not None:
            self.metrics.writes.labels(kind).inc(n)

    @property
    def total(self) -> int:
        return sum(self.writes.values())


class ImportSyncer:
    """Syncs ``serviceimport:namespace/name`` keys (the owner syncer of ServiceImports, called
    by the operator's work queue through :class:`~..owners.OwnerSyncs`).

    ``writer``, ``budget`` and ``tracker`` are the slice controller's (its write fence, write
    budget and tracker); without them (a syncer of its own, in tests) writes go unfenced and
    unbudgeted. Until ``ready`` (this cluster's listings are in, set by the multi-cluster
    controller) a key is only remembered in ``waiting``: a missing object is not a gone one.
    """

    def __init__(
        self,
        api_client: ApiClient,
        local: LocalCache,
        peers: Sequence[Peer],
        leases: LeaseBook,
        config: ReconcilerConfig,
        metrics: MulticlusterMetrics | None = None,
        recorder: EventRecorder | None = None,
        *,
        writer: SliceWriter | None = None,
        budget: WriteBudget | None = None,
        tracker: EndpointSliceTracker | None = None,
    ) -> None:
        self.local = local
        self.recorder = recorder
        self.peers = peers
        self.leases = leases
        self.config = config
        self.managed_by = config.controller_name
        fence = writer.fence if writer is not None else None
        self._imports = ObjectWriter(api_client, IMPORTS, ("uid",), fence=fence)
        self._services = ObjectWriter(api_client, SERVICES, ("uid",), fence=fence)
        self._exports = ObjectWriter(api_client, EXPORTS, ("uid",), fence=fence)
        self._slices = writer if writer is not None else SliceWriter(api_client)
        self.budget = budget
        self.tracker = tracker
        self.counts = SyncCounts(metrics=metrics)
        self.ready = False
        self.waiting: set[str] = set()
        """Keys synced before ``ready`` (the controller queues every key once ready)."""
        self.keys: Callable[[], Iterable[str]] = lambda: ()
        """Every import key the multi-cluster controller knows (set by it)."""
        self._held: dict[Key, tuple[str, ...]] = {}
        """Imports whose removal waits for unknown peers -> those peers (told once)."""

    # -- the owner-syncer protocol -------------------------------------------------------------

    def start_term(self) -> None:
        self.waiting.clear()

    def all_keys(self) -> list[str]:
        return sorted(self.keys()) if self.ready else []

    # -- which clusters count ---------------------------------------------------------------

    def _live(self) -> tuple[list[tuple[str, ClusterCache]], list[Peer]]:
        """(live clusters as (id, cache), the unknown peers: not listed, for at most
        ``--mcs-peer-timeout``; one never listed for longer counts as gone)."""
        live: list[tuple[str, ClusterCache]] = []
        unknown: list[Peer] = []
        if self.local.cluster_id is not None:
            live.append((self.local.cluster_id, self.local))
        now = asyncio.get_running_loop().time()
        for peer in self.peers:
            cluster = peer.cache.cluster_id
            if not peer.listed or cluster is None:
                if not peer.unlisted_too_long(now, self.leases.timeout):
                    unknown.append(peer)
                continue
            if self.leases.expired(cluster):
                continue
            live.append((cluster, peer.cache))
        return live, unknown

    def _hold(self, key: Key, unknown: Sequence[Peer]) -> None:
        """Say once (per set of peers) that an import no cluster exports is kept for now."""
        names = tuple(str(peer.kubeconfig) for peer in unknown)
        if self._held.get(key) != names:
            self._held[key] = names
            log.info(
                "import %s/%s: no listed cluster exports it; kept until peer(s) %s are listed, "
                "or at most --mcs-peer-timeout (%g s) after they were last listed",
                *key,
                ", ".join(names),
                self.leases.timeout,
            )

    # -- the sync -----------------------------------------------------------------------------

    async def sync(self, owner_key: str) -> None:
        kind, namespace, name = split_owner_key(owner_key)
        if kind is not SERVICE_IMPORT:
            raise ValueError(f"not a ServiceImport key: {owner_key!r}")
        if not self.ready:
            self.waiting.add(owner_key)
            return
        async with asyncio.timeout(API_TIMEOUT * 4):
            await self._sync((namespace, name))

    async def _sync(self, key: Key) -> None:
        live, unknown = self._live()
        exports: list[ExportedService] = []
        sources: dict[str, list[Mapping[str, Any]]] = {}
        for cluster, cache in live:
            export = cache.export(key)
            if export is None:
                continue
            read = read_export(cluster, export, cache.services.get(key))
            if isinstance(read, ExportedService):
                exports.append(read)
                sources[cluster] = cache.source_slices(key)
        resolution = resolve_import(exports)
        live_ids = {cluster for cluster, _ in live}
        failure = None
        if resolution is None or key[0] not in self.local.namespaces:
            if not unknown:
                self._held.pop(key, None)
                await self._remove(key)
            elif resolution is None:
                self._hold(key, unknown)
        else:
            self._held.pop(key, None)
            failure = await self._apply(key, resolution, sources, live_ids, bool(unknown))
        await self._export_status(key, resolution, failure)

    async def _apply(
        self,
        key: Key,
        resolution: ImportResolution,
        sources: Mapping[str, list[Mapping[str, Any]]],
        live_ids: set[str],
        unknown: bool,
    ) -> str | None:
        """Write the import, its derived Service and slices; a message when this cluster's
        import side cannot be served (for this cluster's ServiceExport's Ready condition)."""
        imported = await self._ensure_import(key, resolution)
        if imported is None:
            return None
        derived = await self._ensure_derived(key, resolution, imported)
        if derived is None:
            # A Service not ours holds the derived name: slices of ours would give it the
            # clusterset's endpoints (kube-proxy reads their kubernetes.io/service-name).
            stale = self.local.imported_slices(key)
            if stale:
                await self._write_slices(key, [], [], stale)
            await self._import_status(key, resolution, imported)
            name = derived_service_name(*key)
            return f"Service {key[0]}/{name} (the derived Service's name) is not ours"
        imported = await self._ensure_import(key, resolution, derived) or imported
        existing = self.local.imported_slices(key)
        clusters = set(resolution.clusters) | {
            str((_meta(s).get("labels") or {}).get(LABEL_SOURCE_CLUSTER)) for s in existing
        }
        for cluster in sorted(clusters):
            if cluster not in live_ids and (unknown or not self.leases.expired(cluster)):
                continue  # not gone for sure: its slices stay as they are
            plan = plan_import_slices(
                imported,
                cluster,
                sources.get(cluster),
                existing,
                self.config,
                served_ports=resolution.cluster_ports.get(cluster, ()),
            )
            await self._write_slices(key, plan.creates, plan.updates, plan.deletes)
        await self._import_status(key, resolution, imported)
        return None

    # -- ServiceImport ------------------------------------------------------------------------

    async def _ensure_import(
        self,
        key: Key,
        resolution: ImportResolution,
        derived: Mapping[str, Any] | None = None,
    ) -> Mapping[str, Any] | None:
        """Create the ServiceImport, or update its spec, labels and annotations (its status is
        :meth:`_import_status`'s, once the slices are written)."""
        current = self.local.imports.get(key)
        if derived is None and current is not None:
            derived = self.local.services.get((key[0], resolution.derived_name))
        desired = service_import(resolution, derived)
        desired["metadata"]["labels"][LABEL_MANAGED_BY] = self.managed_by
        status = desired.pop("status")
        if current is None:
            await spend(self.budget)
            try:
                written = await self._imports.create(desired)
            except ApiError as exc:
                if exc.conflict:  # created meanwhile: wait for its event
                    raise MulticlusterSyncError(f"ServiceImport {key} exists") from exc
                raise MulticlusterSyncError(f"creating ServiceImport {key}: {exc}") from exc
            self.counts.add("serviceimports")
            self.local.put_import(written)
            current = written
        elif (_meta(current).get("labels") or {}).get(LABEL_MANAGED_BY) != self.managed_by:
            log.warning("ServiceImport %s/%s is not ours: left alone", *key)
            return None
        elif service_import_change(current, {**desired, "status": status})[0]:
            body = dict(current)
            body["metadata"] = {
                **_meta(current),
                "labels": desired["metadata"]["labels"],
                "annotations": desired["metadata"]["annotations"],
            }
            body["spec"] = desired["spec"]
            current = await self._replace_import(key, body)
        return current

    async def _import_status(
        self, key: Key, resolution: ImportResolution, imported: Mapping[str, Any]
    ) -> None:
        """Write the ServiceImport's ``status.clusters`` and ``status.endpointSliceObjects``
        (whether this cluster holds imported slices of it, after this sync's slice writes)."""
        current = self.local.imports.get(key) or imported
        presence = endpoint_slice_objects(self.local.imported_slices(key))
        desired = service_import(resolution, endpoint_slices=presence)
        desired["metadata"]["labels"][LABEL_MANAGED_BY] = self.managed_by
        if not service_import_change(current, desired)[1]:
            return
        body = dict(current)
        body["status"] = {**(current.get("status") or {}), **desired["status"]}
        written = await self._put_status(self._imports, body, "serviceimports/status")
        self.local.put_import(written)

    async def _replace_import(self, key: Key, body: Mapping[str, Any]) -> Mapping[str, Any]:
        await spend(self.budget)
        try:
            written = await self._imports.replace(body)
        except ApiError as exc:
            raise MulticlusterSyncError(f"updating ServiceImport {key}: {exc}") from exc
        self.counts.add("serviceimports")
        self.local.put_import(written)
        return written

    async def _put_status(
        self, writer: ObjectWriter, body: Mapping[str, Any], what: str
    ) -> dict[str, Any]:
        """PUT of a ``status`` subresource (a budget token, the write fence)."""
        await spend(self.budget)
        try:
            async with asyncio.timeout(API_TIMEOUT):
                written = await writer.replace_status(body)
        except ApiError as exc:
            raise MulticlusterSyncError(f"writing {what}: {exc}") from exc
        self.counts.add(what)
        return written

    # -- derived Service ----------------------------------------------------------------------

    async def _ensure_derived(
        self, key: Key, resolution: ImportResolution, imported: Mapping[str, Any]
    ) -> Mapping[str, Any] | None:
        name = derived_service_name(*key)
        uid = str(_meta(imported).get("uid") or "")
        desired = derived_service(resolution, uid, managed_by=self.managed_by)
        current = self.local.services.get((key[0], name))
        if current is not None and not owned_by_import(current, uid):
            log.warning(
                "Service %s/%s (the derived name of import %s) is not ours: left alone",
                key[0],
                name,
                key[1],
            )
            return None
        change = "create" if current is None else derived_service_change(current, desired)
        if change == "none":
            return current
        try:
            if change == "replace" and current is not None:
                await spend(self.budget)
                await self._services.delete(current)
                self.counts.add("services")
                self.local.drop_service((key[0], name))
                change = "create"
            await spend(self.budget)
            if change == "create":
                written = await self._services.create(desired)
            else:
                assert current is not None
                body = dict(current)
                body["spec"] = {**(current.get("spec") or {}), **desired["spec"]}
                body["metadata"] = {**_meta(current), "labels": desired["metadata"]["labels"]}
                written = await self._services.replace(body)
        except ApiError as exc:
            raise MulticlusterSyncError(f"writing derived Service {key[0]}/{name}: {exc}") from exc
        self.counts.add("services")
        self.local.put_service(written)
        return written

    # -- slices -------------------------------------------------------------------------------

    async def _write_slices(
        self,
        key: Key,
        creates: Sequence[Mapping[str, Any]],
        updates: Sequence[Mapping[str, Any]],
        deletes: Sequence[Mapping[str, Any]],
    ) -> None:
        try:
            for body in creates:
                await spend(self.budget)
                async with asyncio.timeout(API_TIMEOUT):
                    written = await self._slices.create(body)
                self.counts.add("endpointslices")
                self._track(written)
                self.local.put_imported(key, written)
            for body in updates:
                await spend(self.budget)
                async with asyncio.timeout(API_TIMEOUT):
                    written = await self._slices.replace(body)
                self.counts.add("endpointslices")
                self._track(written)
                self.local.put_imported(key, written)
            for body in deletes:
                await spend(self.budget)
                async with asyncio.timeout(API_TIMEOUT):
                    await self._slices.delete(body)
                self.counts.add("endpointslices")
                if self.tracker is not None:
                    self.tracker.expect_deletion(body)
                self.local.drop_imported(key, str(_meta(body).get("name") or ""))
        except ApiError as exc:
            raise MulticlusterSyncError(f"writing imported slices of {key}: {exc}") from exc

    def _track(self, written: Mapping[str, Any]) -> None:
        """Our write's generation, so that its watch echo queues nothing."""
        if self.tracker is not None:
            self.tracker.update(written)

    # -- removal ------------------------------------------------------------------------------

    async def _remove(self, key: Key) -> None:
        """No cluster exports the Service (or its namespace is not here): remove the import,
        its derived Service and its slices (ours only)."""
        slices = self.local.imported_slices(key)
        if slices:
            await self._write_slices(key, [], [], slices)
        current = self.local.imports.get(key)
        if current is None:
            return
        if (_meta(current).get("labels") or {}).get(LABEL_MANAGED_BY) != self.managed_by:
            return
        uid = str(_meta(current).get("uid") or "")
        derived = self.local.services.get((key[0], derived_service_name(*key)))
        try:
            if derived is not None and owned_by_import(derived, uid):
                await spend(self.budget)
                async with asyncio.timeout(API_TIMEOUT):
                    await self._services.delete(derived)
                self.counts.add("services")
                self.local.drop_service(_key_of(derived))
            await spend(self.budget)
            async with asyncio.timeout(API_TIMEOUT):
                await self._imports.delete(current)
        except ApiError as exc:
            raise MulticlusterSyncError(f"removing ServiceImport {key}: {exc}") from exc
        self.counts.add("serviceimports")
        self.local.drop_import(key)
        log.info("import %s/%s removed: no cluster exports it", *key)

    # -- this cluster's ServiceExport ---------------------------------------------------------

    async def _export_status(
        self, key: Key, resolution: ImportResolution | None, failure: str | None = None
    ) -> None:
        export = self.local.export(key)
        if export is None:
            return
        cluster = self.local.cluster_id
        if cluster is None:
            read: Any = read_export("unknown", export, self.local.services.get(key))
            failure = "this cluster has no cluster.clusterset.k8s.io ClusterProperty"
        else:
            read = read_export(cluster, export, self.local.services.get(key))
        imported = key in self.local.imports and key[0] in self.local.namespaces
        desired = export_conditions(read, resolution, imported=imported, failure=failure)
        current = (export.get("status") or {}).get("conditions")
        merged = merge_conditions(
            current,
            desired,
            now=datetime.now(UTC),
            generation=_meta(export).get("generation"),
        )
        if same_conditions(current, merged):
            return
        body = dict(export)
        body["status"] = {**(export.get("status") or {}), "conditions": merged}
        written = await self._put_status(self._exports, body, "serviceexports/status")
        self.local.exports[key] = written
        await self._announce(written, current, merged)

    async def _announce(
        self, export: Mapping[str, Any], before: object, after: list[dict[str, Any]]
    ) -> None:
        """Events on the ServiceExport for the condition changes users act on: Valid turning
        False, a conflict appearing or changing (Warning, the condition's reason), Ready turning
        True and a conflict resolved (Normal)."""
        if self.recorder is None:
            return
        old = {
            str(c.get("type")): (c.get("status"), c.get("reason"))
            for c in (before if isinstance(before, list) else ())
            if isinstance(c, Mapping)
        }
        target = {**export, "apiVersion": MCS_API_VERSION, "kind": "ServiceExport"}
        for condition in after:
            kind, status, reason = condition["type"], condition["status"], condition["reason"]
            if old.get(kind) == (status, reason):
                continue
            message = str(condition.get("message") or "")
            invalid = kind == CONDITION_VALID and status == "False"
            conflict = kind == CONDITION_CONFLICT and status == "True"
            resolved = kind == CONDITION_CONFLICT and old.get(kind, ("",))[0] == "True"
            ready = kind == CONDITION_READY and status == "True"
            if invalid or conflict:
                await self.recorder.record(target, WARNING, reason, message)
            elif resolved or ready:
                await self.recorder.record(target, NORMAL, reason, message)


def _key_of(obj: Mapping[str, Any]) -> Key:
    return (str(_meta(obj).get("namespace") or ""), str(_meta(obj).get("name") or ""))
