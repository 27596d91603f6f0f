"""The ``core/v1`` Endpoints object of a managed Service, as kube-controller-manager's controller
writes it (:func:`~endpointslice_operator.reconciler.core_endpoints.plan_endpoints`).

Written when the Service is managed and ``--write-endpoints`` or ``<prefix>/endpoints: "true"``
asks for it (docs/operator.md), with our managed-by under both keys (KEP-4974's
``endpoints.kubernetes.io/managed-by`` too) and ``skip-mirror``. An Endpoints object without our
label is never touched (``ConflictingEndpoints``, once). Deleted when no longer asked for; writes
spend the write budget and fail as upstream's (``FailedToCreateEndpoint`` /
``FailedToUpdateEndpoint``). Until the on-demand watch's first listing is in, nothing is written.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NoReturn

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.writer import EndpointsWriter
from endpointslice_operator.controller.cache.endpoints_index import EndpointsIndex
from endpointslice_operator.controller.cache.indexes import Indexes, ServiceEntry, split_key
from endpointslice_operator.controller.sync.events import WARNING, EventRecorder
from endpointslice_operator.controller.work.budget import WriteBudget, spend
from endpointslice_operator.reconciler.core_endpoints import (
    our_endpoints_labels,
    plan_endpoints,
)
from endpointslice_operator.reconciler.sources import AddressSource
from endpointslice_operator.reconciler.tracking.trigger_time import TriggerTimeTracker, parse_time

__all__ = [
    "REASON_CONFLICTING_ENDPOINTS",
    "REASON_FAILED_TO_CREATE",
    "REASON_FAILED_TO_UPDATE",
    "EndpointsSyncError",
    "EndpointsSyncer",
]

log = logging.getLogger(__name__)

REASON_CONFLICTING_ENDPOINTS = "ConflictingEndpoints"
REASON_FAILED_TO_CREATE = "FailedToCreateEndpoint"
REASON_FAILED_TO_UPDATE = "FailedToUpdateEndpoint"


class EndpointsSyncError(Exception):
    """An Endpoints write failed: the Service's sync is retried."""


def _endpoints_ref(namespace: str, name: str, uid: str = "") -> dict[str, Any]:
    metadata = {"namespace": namespace, "name": name}
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}


class EndpointsSyncer:
    """Writes, rewrites and deletes our Endpoints objects; called from each Service sync."""

    def __init__(
        self,
        *,
        indexes: Indexes,
        index: EndpointsIndex,
        writer: EndpointsWriter,
        recorder: EventRecorder,
        managed_by: str,
        annotation: str,
        write_all: bool,
        budget: WriteBudget | None = None,
        source_annotation: str | None = None,
    ) -> None:
        self.indexes = indexes
        self.index = index
        self.writer = writer
        self.recorder = recorder
        self.annotation = annotation
        self.write_all = write_all
        self.budget = budget
        self.source_annotation = source_annotation
        """``<prefix>/source``: a Service whose source is not ``pods`` gets no Endpoints of
        ours (its Endpoints object is the mirroring's input)."""
        self.labels = our_endpoints_labels(managed_by)
        self.trigger_times = TriggerTimeTracker()
        self._conflicts: set[str] = set()
        self.writes = 0
        """Endpoints writes made (creates, updates, deletes), for tests and logs."""

    def start_term(self) -> None:
        self.trigger_times = TriggerTimeTracker()
        self._conflicts.clear()

    def wanted(self, entry: ServiceEntry) -> bool:
        """Whether this Service should have Endpoints of ours."""
        if not entry.decision.managed:
            return False
        annotations = entry.body["metadata"].get("annotations")
        annotations = annotations if isinstance(annotations, Mapping) else {}
        if (
            self.source_annotation is not None
            and annotations.get(self.source_annotation, "pods") != "pods"
            and entry.decision.opted_in
        ):
            return False
        return self.write_all or annotations.get(self.annotation) == "true"

    async def sync(self, entry: ServiceEntry, source: AddressSource | None = None) -> None:
        """Create, update or delete the Endpoints object of ``entry``'s Service; ``source`` is
        the address source its slices use (None: the cluster network)."""
        namespace, name = split_key(entry.key)
        wanted = self.wanted(entry)
        if wanted and not self.index.want(entry.key):
            # The Endpoints watch starts now (the first Service that asks) or is still listing:
            # write nothing over Endpoints not seen yet; the listing's end queues it again.
            return
        existing = self.index.get(namespace, name)
        if existing is not None and not self.index.is_ours(existing):
            if wanted and entry.key not in self._conflicts:
                self._conflicts.add(entry.key)
                await self.recorder.record(
                    entry.body,
                    WARNING,
                    REASON_CONFLICTING_ENDPOINTS,
                    f"An Endpoints object {entry.key} not written by this operator exists; "
                    f"not writing Endpoints for this Service (delete it, or remove "
                    f"spec.selector, or the annotation {self.annotation}).",
                )
            elif not wanted:
                self._conflicts.discard(entry.key)
            return
        self._conflicts.discard(entry.key)
        if not wanted:
            self.trigger_times.delete_service(namespace, name)
            if existing is not None:
                await self._delete(entry.key, existing)
            return
        selector = entry.decision.selector
        assert selector is not None
        pods = self.indexes.pods.select(namespace, selector)
        trigger_time = self.trigger_times.compute_trigger_time(
            namespace,
            name,
            parse_time(entry.body["metadata"].get("creationTimestamp")),
            {pod.name: parse_time(pod.ready_transition) for pod in pods},
        )
        plan = plan_endpoints(
            entry.body,
            pods,
            existing,
            trigger_time=trigger_time,
            extra_labels=self.labels,
            source=source,
        )
        if plan.endpoints is None:
            return
        await spend(self.budget)
        try:
            if plan.action == "create":
                written = await self.writer.create(plan.endpoints)
            else:
                written = await self.writer.replace(plan.endpoints)
        except ApiError as exc:
            if plan.action == "create" and exc.namespace_terminating:
                log.info("Namespace of %s is terminating; not creating Endpoints", entry.key)
                return
            await self._write_failed(entry.key, plan.action, plan.endpoints, exc)
        self.writes += 1
        self.index.put(written)
        log.debug("%s Endpoints %s", "Created" if plan.action == "create" else "Updated", entry.key)

    async def service_gone(self, key: str) -> None:
        """The Service was deleted: delete our Endpoints object of the same name, as upstream's
        controller deletes the Endpoints of a deleted Service (ours only)."""
        namespace, name = split_key(key)
        self.trigger_times.delete_service(namespace, name)
        self._conflicts.discard(key)
        existing = self.index.get(namespace, name)
        if existing is not None and self.index.is_ours(existing):
            await self._delete(key, existing)

    async def _delete(self, key: str, existing: Mapping[str, Any]) -> None:
        await spend(self.budget)
        try:
            await self.writer.delete(existing)
        except ApiError as exc:
            if exc.conflict:
                # Changed meanwhile (the precondition failed): look again on the retry.
                raise EndpointsSyncError(f"Endpoints {key} changed; retrying") from exc
            raise EndpointsSyncError(
                f"failed to delete Endpoints {key}: {exc}{self._rbac_hint(exc)}"
            ) from exc
        self.writes += 1
        self.index.remove(existing)
        log.info("Deleted Endpoints %s", key)

    @staticmethod
    def _rbac_hint(exc: ApiError) -> str:
        """What to change when the operator may not write Endpoints (the chart grants only
        get/list/watch on them unless ``endpoints.write`` is set)."""
        if exc.status != 403:
            return ""
        return (
            " (the operator may not write Endpoints: set the chart value endpoints.write=true, "
            "or grant its ServiceAccount create, update and delete on endpoints)"
        )

    async def _write_failed(
        self, key: str, action: str, endpoints: Mapping[str, Any], exc: ApiError
    ) -> NoReturn:
        namespace, name = split_key(key)
        metadata = endpoints.get("metadata")
        uid = metadata.get("uid") if isinstance(metadata, Mapping) else None
        ref = _endpoints_ref(namespace, name, uid if isinstance(uid, str) else "")
        hint = self._rbac_hint(exc)
        if action == "create":
            await self.recorder.record(
                ref,
                WARNING,
                REASON_FAILED_TO_CREATE,
                f"Failed to create endpoint for service {namespace}/{name}: {exc}{hint}",
            )
        else:
            await self.recorder.record(
                ref,
                WARNING,
                REASON_FAILED_TO_UPDATE,
                f"Failed to update endpoint {namespace}/{name}: {exc}{hint}",
            )
        raise EndpointsSyncError(f"failed to {action} Endpoints {key}: {exc}{hint}") from exc
