"""Mirroring: slices of a Service with ``<prefix>/source: endpoints`` from its own Endpoints object.

As kube-controller-manager's mirroring controller makes them, but with our managed-by and
packing. Rules (docs/operator.md): an unknown source is ``InvalidSource``; a Service with a
selector is ``ConflictingSource``; ``skip-mirror`` is ignored (it is addressed to upstream's
controller, whose slices give ``ConflictingController``); slices are owned by the Endpoints
object; bad or excess addresses get upstream's Warning Events. The Endpoints watch starts with
the first mirroring sync; only mirrored Endpoints are held whole (:mod:`..cache.endpoints_index`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient, CoreV1Api

from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.cache.indexes import Indexes, ServiceEntry, split_key
from endpointslice_operator.controller.sync.apply import Reporting, SliceWrites
from endpointslice_operator.controller.sync.decision import SOURCE_ENDPOINTS, SOURCE_PODS, source_of
from endpointslice_operator.controller.sync.events import WARNING, EventRecorder
from endpointslice_operator.metrics import MirroringMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.mirroring import plan_mirroring, should_mirror
from endpointslice_operator.reconciler.tracking.tracker import (
    StaleInformerCache,
)

__all__ = [
    "REASON_CONFLICTING_SOURCE",
    "REASON_INVALID_SOURCE",
    "MirroringSyncError",
    "MirroringSyncer",
]

log = logging.getLogger(__name__)

REASON_CONFLICTING_SOURCE = "ConflictingSource"
REASON_INVALID_SOURCE = "InvalidSource"
REASON_CONFLICTING_CONTROLLER = "ConflictingController"


class MirroringSyncError(Exception):
    """A mirrored-slice write failed: the Service's sync is retried."""


class MirroringSyncer:
    """Syncs the mirrored slices of Services with ``source: endpoints``."""

    def __init__(
        self,
        *,
        indexes: Indexes,
        api_client: ApiClient,
        writes: SliceWrites,
        recorder: EventRecorder,
        config: ReconcilerConfig,
        source_annotation: str,
        max_endpoints_per_subset: int,
        metrics: MirroringMetrics,
        network_annotations: tuple[str, ...] = (),
    ) -> None:
        self.indexes = indexes
        # The secondary-network annotations pick where *pods'* addresses come from: with
        # ``source: endpoints`` there are no pods, so either is a conflict (ConflictingSource).
        self.network_annotations = network_annotations
        self._core = CoreV1Api(api_client)
        self.writes = writes
        """The slice controller's write pipeline (writer, budget, tracker), with this
        controller's own metrics, failure messages and Event source (:attr:`reporting`)."""
        self.recorder = recorder
        self.config = config
        self.source_annotation = source_annotation
        self.max_endpoints_per_subset = max_endpoints_per_subset
        self.metrics = metrics
        self.reporting = Reporting(
            change=metrics.changes,
            failure=lambda operation, _, __, exc: f"failed to {operation} EndpointSlice: {exc}",
            error=lambda _, exc: MirroringSyncError(str(exc)),
            observe=False,
            recorder=recorder,
        )
        self._reported: dict[str, set[str]] = {}

    def start_term(self) -> None:
        self._reported.clear()

    def mirrors(self, key: str) -> bool:
        """Whether the Service ``key`` mirrors its Endpoints object (source ``endpoints``)."""
        entry = self.indexes.services.get(key)
        return (
            entry is not None
            and entry.decision.opted_in
            and source_of(entry.body, self.source_annotation) == SOURCE_ENDPOINTS
        )

    async def sync(self, entry: ServiceEntry, source: str) -> None:
        """Mirror the Service's slices (``source``: its ``<prefix>/source``, not ``pods``)."""
        if source != SOURCE_ENDPOINTS:
            await self._warn_once(
                entry,
                REASON_INVALID_SOURCE,
                f"Not publishing EndpointSlices: annotation {self.source_annotation} is "
                f"{source!r}, not {SOURCE_PODS!r} or {SOURCE_ENDPOINTS!r}",
            )
            return
        self._clear(entry.key, REASON_INVALID_SOURCE)
        spec = entry.body.get("spec") or {}
        selector_annotation = self.indexes.services.selector_annotation
        annotations = entry.body["metadata"].get("annotations") or {}
        if spec.get("selector") or selector_annotation in annotations:
            await self._warn_once(
                entry,
                REASON_CONFLICTING_SOURCE,
                f"Not publishing EndpointSlices: {self.source_annotation}: endpoints needs a "
                f"Service without spec.selector and without {selector_annotation}",
            )
            return
        network = next((a for a in self.network_annotations if a in annotations), None)
        if network is not None:
            await self._warn_once(
                entry,
                REASON_CONFLICTING_SOURCE,
                f"Not publishing EndpointSlices: {self.source_annotation}: endpoints mirrors the "
                f"Endpoints object, and {network} applies to addresses of pods; remove one of them",
            )
            return
        self._clear(entry.key, REASON_CONFLICTING_SOURCE)
        if self.indexes.slices.has_upstream_mirrored(entry.key):
            await self._warn_once(
                entry,
                REASON_CONFLICTING_CONTROLLER,
                "EndpointSlices managed by endpointslicemirroring-controller.k8s.io also exist "
                "for this Service; kube-proxy merges both sets. Label its Endpoints "
                "endpointslice.kubernetes.io/skip-mirror=true, or disable "
                "kube-controller-manager's mirroring controller.",
            )
        else:
            self._clear(entry.key, REASON_CONFLICTING_CONTROLLER)
        if not self.indexes.endpoints.want(entry.key):
            # The Endpoints watch starts now (the first mirroring Service) or is still listing:
            # without the source seen, the slices would be emptied; the listing's end queues
            # the Service again.
            return
        await self._mirror(entry)

    async def service_gone(self, key: str) -> None:
        """The Service was deleted: delete our slices of it that mirror an Endpoints object (the
        garbage collector only removes them with the Endpoints object, their owner)."""
        for reported in self._reported.values():
            reported.discard(key)
        self.metrics.forget(key)
        for endpoint_slice in self._ours(key):
            if _owner_kind(endpoint_slice) == "Endpoints":
                await self.writes.delete(key, None, endpoint_slice, reporting=self.reporting)

    # -- the work ---------------------------------------------------------------------------

    def _ours(self, key: str) -> list[Mapping[str, Any]]:
        return [
            s
            for s in self.indexes.slices.ours(key)
            if (s.get("metadata") or {}).get("deletionTimestamp") is None
        ]

    async def _source(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The Endpoints object to mirror, whole: from the index, or read once."""
        index = self.indexes.endpoints
        held = index.get(namespace, name)
        if held is None:
            return None
        if index.is_full(namespace, name):
            return held
        try:
            body = await raise_for_status(
                await self._core.read_namespaced_endpoints(name, namespace, _preload_content=False)
            )
        except ApiError as exc:
            if exc.not_found:
                return None
            raise MirroringSyncError(f"cannot read Endpoints {namespace}/{name}: {exc}") from exc
        index.put(body, full=True)
        return body

    async def _mirror(self, entry: ServiceEntry) -> None:
        namespace, name = split_key(entry.key)
        slices = self._ours(entry.key)
        if self.writes.tracker.stale_slices(entry.body, slices):
            raise StaleInformerCache()
        source = await self._source(namespace, name)
        if source is None or not should_mirror(source):
            # No Endpoints (or a leader-election record): nothing to mirror.
            source = {"metadata": {"namespace": namespace, "name": name}}
        loop_start = self.metrics.now()
        plan, mirrored = plan_mirroring(
            source,
            slices,
            self.config,
            max_endpoints_per_subset=self.max_endpoints_per_subset,
            adopt=False,
        )
        for event in plan.events:
            await self.recorder.record(
                _endpoints_ref(source), event.type, event.reason, event.message
            )
        self.metrics.observe(mirrored.added, mirrored.updated, mirrored.removed, mirrored.skipped)
        groups = [info for m in plan.metrics.values() for info in m.port_cache.values()]
        size = self.max_endpoints_per_subset  # upstream's packing: one slice per port group
        self.metrics.set_totals(
            entry.key,
            sum(info.endpoints for info in groups),
            sum(info.slices for info in groups),
            sum(math.ceil(info.endpoints / size) for info in groups),
        )
        await self.writes.apply(entry, plan, reporting=self.reporting)
        self.metrics.observe_duration(self.metrics.now() - loop_start)

    async def _warn_once(self, entry: ServiceEntry, reason: str, message: str) -> None:
        reported = self._reported.setdefault(reason, set())
        if entry.key in reported:
            return
        reported.add(entry.key)
        await self.recorder.record(entry.body, WARNING, reason, message)

    def _clear(self, key: str, reason: str) -> None:
        self._reported.get(reason, set()).discard(key)


def _owner_kind(endpoint_slice: Mapping[str, Any]) -> str | None:
    refs = (endpoint_slice.get("metadata") or {}).get("ownerReferences") or []
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller"):
            kind = ref.get("kind")
            return kind if isinstance(kind, str) else None
    return None


def _endpoints_ref(endpoints: Mapping[str, Any]) -> dict[str, Any]:
    metadata = endpoints.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {k: metadata[k] for k in ("namespace", "name", "uid") if k in metadata},
    }
