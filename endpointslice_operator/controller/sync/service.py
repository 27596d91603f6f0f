"""One Service sync: indexes -> reconciler plan -> API writes -> tracker, metrics, Events.

This is upstream's ``syncService`` (reference C.1) plus ``finalize`` (B.6), reading only the
in-memory indexes. Errors propagate to the work queue, which retries with backoff; the result
of every sync is counted in ``endpoint_slice_controller_syncs{result}``.

Deliberate differences from upstream:

* **Opt-out cleanup.** Upstream leaves existing slices alone for ExternalName and selectorless
  Services (C.1 steps 2-3). Here a Service that stops qualifying (annotation or label removed,
  switched to ExternalName, selector gone) gets the slices *we* manage deleted, because nobody
  else would ever clean them up.
* **Invalid selectors** (only possible through our selector annotation) produce a Warning Event
  ``InvalidSelector`` and no writes at all; the slices stay as they are until it is fixed.
* **ConflictingController.** A Warning Event, once per Service, when kube-controller-manager's
  EndpointSlice controller also publishes slices for a Service we manage (kube-proxy would
  merge both sets).
* **LeftoverEndpoints** (:mod:`.kcm_leftovers`). A Warning Event, once per Service and state,
  when kube-controller-manager left slices or an Endpoints object for a Service we publish
  (after ``spec.selector`` was removed); never deleted here.
* **SelectorAnnotationIgnored.** A Warning Event, once per Service, when a Service has both
  ``spec.selector`` and the selector annotation: ``spec.selector`` wins.
* **Malformed input** (a pod IP that does not parse, a Service port without a usable
  targetPort; the API server would normally refuse these) is skipped with a Warning Event
  ``InvalidInput`` and is not retried, since retrying cannot fix it. Pods on a node missing
  from the cache are retried, as upstream does.
* **Secondary networks** (:mod:`.networks`): a Service's ``<prefix>/network`` or
  ``<prefix>/device-network`` annotation picks the pods' address source; pods without an
  address there are left out (a gauge and a rate-limited ``PodsLeftOut`` Warning Event), an
  unusable annotation gives ``InvalidNetwork`` and no writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.cache.indexes import Indexes, ServiceEntry, split_key
from endpointslice_operator.controller.sync.apply import (
    SliceWrites,
    SyncError,
    WriteToken,
    is_deleting,
)
from endpointslice_operator.controller.sync.decision import (
    REASON_OPT_IN_IGNORED,
    Route,
    Verdict,
    decide,
)
from endpointslice_operator.controller.sync.endpoints import EndpointsSyncer
from endpointslice_operator.controller.sync.events import WARNING, EventRecorder
from endpointslice_operator.controller.sync.kcm_leftovers import LeftoverReporter
from endpointslice_operator.controller.sync.mirroring import MirroringSyncer
from endpointslice_operator.controller.sync.networks import (
    REASON_INVALID_NETWORK,
    REASON_PODS_LEFT_OUT,
    SOURCE_DEVICE_NETWORK,
    LeftOutReporter,
    NetworkAnnotations,
    NetworkChoice,
    source_for,
)
from endpointslice_operator.metrics import OperatorMetrics, SyncResult
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.reconciler.plan import Plan
from endpointslice_operator.reconciler.service import plan_service
from endpointslice_operator.reconciler.sources import AddressSource
from endpointslice_operator.reconciler.tracking.tracker import StaleInformerCache
from endpointslice_operator.reconciler.tracking.trigger_time import TriggerTimeTracker, parse_time

__all__ = ["ServiceSyncer", "recorded_sync"]

log = logging.getLogger(__name__)

REASON_INVALID_SELECTOR = "InvalidSelector"
REASON_CONFLICTING_CONTROLLER = "ConflictingController"
REASON_SELECTOR_ANNOTATION_IGNORED = "SelectorAnnotationIgnored"
REASON_INVALID_INPUT = "InvalidInput"
NODE_NOT_FOUND_SUFFIX = " Not Found"
"""How the reconciler's "skipping Pod ... Node <name> Not Found" errors end."""


async def recorded_sync(metrics: OperatorMetrics, run: Awaitable[None]) -> None:
    """Await one owner's sync and record it as upstream's sync metrics do: its duration and
    its result (``success``; ``stale`` for a cache behind our own writes; ``error``)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = SyncResult.SUCCESS
    try:
        await run
    except StaleInformerCache:
        result = SyncResult.STALE
        raise
    except Exception:
        result = SyncResult.ERROR
        raise
    finally:
        metrics.record_sync(result, loop.time() - started)


class ServiceSyncer:
    """Syncs Services by key (``namespace/name``); the work queue's handler."""

    def __init__(
        self,
        *,
        indexes: Indexes,
        writes: SliceWrites,
        recorder: EventRecorder,
        metrics: OperatorMetrics,
        config: ReconcilerConfig,
        topology: TopologyCache | None,
        networks: NetworkAnnotations | None = None,
        want_claims: Callable[[], None] | None = None,
        endpoints: EndpointsSyncer | None = None,
        mirroring: MirroringSyncer | None = None,
    ) -> None:
        self.indexes = indexes
        self.mirroring = mirroring
        """Syncs the Services whose slices mirror their Endpoints object (None: never)."""
        self.endpoints = endpoints
        """Writes the core/v1 Endpoints of the Services that want them (None: never)."""
        self.writes = writes
        """The write pipeline (writer, budget, tracker, slice gauges) every owner kind shares."""
        self.recorder = recorder
        self.metrics = metrics
        self.config = config
        self.topology = topology
        self.trigger_times = TriggerTimeTracker()
        # Warning Events recorded once per Service and leader term: reason -> Service keys.
        self._reported: dict[str, set[str]] = {}
        # OptInIgnored: Service key -> the near miss last reported.
        self._near_misses: dict[str, str] = {}
        # What kube-controller-manager left for Services we publish (LeftoverEndpoints).
        self.leftovers = LeftoverReporter(indexes, recorder.record, indexes.slices.managed_by)
        # Secondary networks (controller.networks): the annotation names, the hook that starts
        # the ResourceClaim watch, and the left-out pod counts.
        self.networks = networks
        if want_claims is not None:
            indexes.claims.start = want_claims
        self.left_out = LeftOutReporter(
            metrics.set_pods_left_out, lambda: asyncio.get_running_loop().time()
        )

    def start_term(self) -> None:
        """Forget what earlier leader terms wrote, as a freshly started upstream controller would.

        While this replica stood by, another leader may have replaced or deleted the slices
        this tracker remembers; keeping those expectations would make every sync look stale.
        """
        self.writes.start_term()
        self.trigger_times = TriggerTimeTracker()
        self._reported.clear()
        self._near_misses.clear()
        self.leftovers.start_term()
        if self.endpoints is not None:
            self.endpoints.start_term()
        if self.mirroring is not None:
            self.mirroring.start_term()

    async def sync(self, key: str) -> None:
        """Sync one Service; raises to have the queue retry it."""
        await recorded_sync(self.metrics, self._sync(key))

    async def _sync(self, key: str) -> None:
        entry = self.indexes.services.get(key)
        if entry is None:
            self._forget(key)
            await self._delete_orphans(key)
            if self.mirroring is not None:
                await self.mirroring.service_gone(key)
            if self.endpoints is not None:
                await self.endpoints.service_gone(key)
            return
        verdict = decide(
            entry.body,
            entry.decision,
            source_annotation=None if self.mirroring is None else self.mirroring.source_annotation,
            networks=self.networks,
        )
        if self.mirroring is not None and verdict.route is Route.MIRROR:
            metrics_cache = self.writes.metrics_cache
            if metrics_cache.address_types(entry.key):
                # Its slices now mirror Endpoints: they leave the slice controller's gauges.
                metrics_cache.delete_service(entry.key)
                self.writes.publish_gauges()
            await self.mirroring.sync(entry, verdict.source)
            if self.endpoints is not None:
                await self.endpoints.sync(entry)  # deletes an Endpoints object of ours, if any
            return
        if self.mirroring is not None:
            self.mirroring.metrics.forget(entry.key)
        if verdict.route is Route.INVALID_SELECTOR:
            await self.recorder.record(
                entry.body,
                WARNING,
                REASON_INVALID_SELECTOR,
                f"Not publishing EndpointSlices: {verdict.error}",
            )
            return
        if verdict.route is Route.UNMANAGED:
            await self._clean_up(entry)
            await self._report_near_miss(entry, verdict.near_miss)
            if self.endpoints is not None:
                await self.endpoints.sync(entry)  # deletes the Endpoints of ours, if any
            return
        await self._check_conflict(entry)
        await self.leftovers.check(entry)
        await self._warn_once(
            entry,
            REASON_SELECTOR_ANNOTATION_IGNORED,
            entry.decision.ignored_annotation,
            f"The Service has spec.selector, so the annotation "
            f"{self.indexes.services.selector_annotation} is ignored; remove one of them.",
        )
        go_on, choice, source = await self._address_source(entry, verdict)
        if not go_on:
            return  # an unusable network annotation, or claims not listed yet: no writes
        try:
            await self.writes.budgeted(
                lambda held: self._plan_and_apply(entry, held, choice, source)
            )
        except Exception:
            # Upstream's Endpoints controller is independent of the slice controller (it never
            # reads Nodes, so a pod on a node not known yet fails only the slice sync): the
            # Endpoints object is written all the same, then the slice sync is retried.
            if self.endpoints is not None:
                await self.endpoints.sync(entry, source)
            raise
        if self.endpoints is not None:
            await self.endpoints.sync(entry, source)  # the same addresses as the slices

    def _forget(self, key: str) -> None:
        """The Service is gone: drop its in-memory state (the garbage collector removes its
        slices through their ownerReference)."""
        namespace, name = split_key(key)
        self.trigger_times.delete_service(namespace, name)
        self.writes.tracker.delete_service(namespace, name)
        self.writes.metrics_cache.delete_service(key)
        if self.topology is not None:
            self.topology.delete_service(key)
        self._forget_warnings(key)
        self._near_misses.pop(key, None)
        self.left_out.forget(key)
        self.writes.publish_gauges()

    async def _clean_up(self, entry: ServiceEntry) -> None:
        """The Service no longer qualifies: delete the slices we manage for it."""
        slices = [s for s in self.indexes.slices.ours(entry.key) if not is_deleting(s)]
        if slices:
            log.info(
                "Service %s is no longer managed (%s): deleting %d EndpointSlice(s)",
                entry.key,
                entry.decision.status.value,
                len(slices),
            )
        for endpoint_slice in slices:
            await self.writes.delete(entry.key, entry.body, endpoint_slice)
        namespace, name = split_key(entry.key)
        self.trigger_times.delete_service(namespace, name)
        self.writes.metrics_cache.delete_service(entry.key)
        if self.topology is not None:
            self.topology.delete_service(entry.key)
        self._forget_warnings(entry.key)
        self.left_out.forget(entry.key)
        self.writes.publish_gauges()

    async def _check_conflict(self, entry: ServiceEntry) -> None:
        await self._warn_once(
            entry,
            REASON_CONFLICTING_CONTROLLER,
            entry.has_spec_selector and self.indexes.slices.has_upstream(entry.key),
            "EndpointSlices managed by endpointslice-controller.k8s.io also exist for this "
            "Service; kube-proxy merges both sets. Remove spec.selector and use the selector "
            "annotation instead, or disable kube-controller-manager's EndpointSlice controller.",
        )

    async def _warn_once(
        self, entry: ServiceEntry, reason: str, condition: bool, message: str
    ) -> None:
        """A Warning Event the first time ``condition`` holds for this Service (again after it
        stopped holding, or in a new leader term)."""
        reported = self._reported.setdefault(reason, set())
        if not condition:
            reported.discard(entry.key)
            return
        if entry.key in reported:
            return
        reported.add(entry.key)
        await self.recorder.record(entry.body, WARNING, reason, message)

    async def _report_near_miss(self, entry: ServiceEntry, message: str | None) -> None:
        """One Warning Event ``OptInIgnored`` and one log line per Service and near miss (again
        once it changed, or in a new leader term); kept across the clean-ups of unmanaged
        syncs, forgotten when the Service goes or no longer misses."""
        if message is None:
            self._near_misses.pop(entry.key, None)
            return
        if self._near_misses.get(entry.key) == message:
            return
        self._near_misses[entry.key] = message
        await self.recorder.record(entry.body, WARNING, REASON_OPT_IN_IGNORED, message)

    def _forget_warnings(self, key: str) -> None:
        for reported in self._reported.values():
            reported.discard(key)
        self.leftovers.forget(key)

    async def _delete_orphans(self, key: str) -> None:
        """The Service does not exist: delete our slices of it that nothing else will, those
        without any ownerReference (the garbage collector removes the ones a Service owns,
        the mirroring the ones an Endpoints object owns). Each DELETE carries the slice's uid
        as a precondition: a slice replaced meanwhile is not touched."""
        for endpoint_slice in self.indexes.slices.ours(key):
            metadata = endpoint_slice.get("metadata") or {}
            if is_deleting(endpoint_slice) or metadata.get("ownerReferences"):
                continue
            await self._delete_leftover(
                endpoint_slice, "service_missing", f"its Service {key} does not exist"
            )

    async def delete_unlabelled(self) -> None:
        """Delete the slices labelled managed-by ours that carry no service-name label (no
        Service can ever claim them), each with its uid as a precondition."""
        for namespace, name, ref in self.indexes.slices.unlabelled_ours():
            stub = {"metadata": {"namespace": namespace, "name": name, "uid": ref.uid}}
            await self._delete_leftover(stub, "no_service_name", "it has no service-name label")

    async def _delete_leftover(
        self, endpoint_slice: Mapping[str, Any], reason: str, why: str
    ) -> None:
        metadata = endpoint_slice.get("metadata") or {}
        where = f"{metadata.get('namespace')}/{metadata.get('name')}"
        await self.writes.spend()
        try:
            deleted = await self.writes.writer.delete(endpoint_slice)
        except ApiError as exc:
            if exc.status != 409:
                raise
            # The uid precondition failed: the name now holds another object, whose own
            # watch event decides about it.
            log.debug("leftover EndpointSlice %s was replaced; not deleting it", where)
            return
        if deleted:
            log.info("deleted leftover EndpointSlice %s of ours: %s", where, why)
            self.metrics.record_leftover_deleted(reason)
            self.metrics.record_change("delete")

    async def _address_source(
        self, entry: ServiceEntry, verdict: Verdict
    ) -> tuple[bool, NetworkChoice | None, AddressSource | None]:
        """``(go on, choice, source)``: the Service's address source (None: the cluster
        network); ``go on`` is False when the sync must not write (an invalid annotation, or
        the ResourceClaims not listed yet: the listing's end queues the Service again)."""
        if verdict.route is Route.INVALID_NETWORK:
            self.left_out.forget(entry.key)
            await self.recorder.record(
                entry.body,
                WARNING,
                REASON_INVALID_NETWORK,
                f"Not publishing EndpointSlices: {verdict.error}",
            )
            return False, None, None
        choice = verdict.network
        if choice is None:
            return True, None, None
        claims = self.indexes.claims
        if choice.kind == SOURCE_DEVICE_NETWORK:
            claims.want()  # starts the claim watch, the first time
            if claims.unavailable is not None:
                self.left_out.forget(entry.key)
                await self._warn_once(
                    entry,
                    REASON_INVALID_NETWORK,
                    True,
                    f"Not publishing EndpointSlices: {claims.unavailable}",
                )
                return False, None, None
            # Readable now (RBAC granted, the API served): a later loss is reported again.
            await self._warn_once(entry, REASON_INVALID_NETWORK, False, "")
            if not claims.synced:
                return False, None, None
        pods = self.indexes.pods
        return (
            True,
            choice,
            source_for(choice, pods.network_statuses, pods.claim_statuses, claims.claims),
        )

    async def _plan_and_apply(
        self,
        entry: ServiceEntry,
        held: WriteToken,
        choice: NetworkChoice | None,
        source: AddressSource | None,
    ) -> None:
        selector = entry.decision.selector
        assert selector is not None
        namespace, name = split_key(entry.key)
        pods = self.indexes.pods.select(namespace, selector)
        slices = [s for s in self.indexes.slices.ours(entry.key) if not is_deleting(s)]
        if self.writes.tracker.stale_slices(entry.body, slices):
            raise StaleInformerCache()
        trigger_time = self.trigger_times.compute_trigger_time(
            namespace,
            name,
            parse_time(entry.body["metadata"].get("creationTimestamp")),
            {pod.name: parse_time(pod.ready_transition) for pod in pods},
        )
        nodes = self.indexes.nodes.subset({pod.node_name for pod in pods if pod.node_name})
        plan = plan_service(
            entry.body,
            pods,
            nodes,
            slices,
            self.config,
            trigger_time=trigger_time,
            topology=self.topology,
            source=source,
        )
        self.writes.record_plan(entry.key, plan)
        if choice is not None or self.left_out.tracks(entry.key):
            await self._report_left_out(entry, choice, plan)
        for event in plan.events:
            await self.recorder.record(entry.body, event.type, event.reason, event.message)
        await self.writes.apply(entry, plan, held)
        missing_nodes = [e for e in plan.errors if e.endswith(NODE_NOT_FOUND_SUFFIX)]
        malformed = [e for e in plan.errors if not e.endswith(NODE_NOT_FOUND_SUFFIX)]
        if malformed:
            # Retrying cannot fix a malformed object; say so once (aggregated) and carry on.
            await self.recorder.record(
                entry.body,
                WARNING,
                REASON_INVALID_INPUT,
                "Skipped malformed input: " + "; ".join(malformed),
            )
        if missing_nodes:
            # As upstream: the slices are written without those pods, and the sync is retried
            # (the node may just not be in the cache yet).
            message = "; ".join(missing_nodes)
            await self.writes.failed(entry.key, entry.body, message)
            raise SyncError(message)

    async def _report_left_out(
        self, entry: ServiceEntry, choice: NetworkChoice | None, plan: Plan
    ) -> None:
        if choice is None:
            message = self.left_out.update(entry.key, None, [])
        else:
            what = (
                f"network {choice.network}"
                if choice.kind != SOURCE_DEVICE_NETWORK
                else f"device network of claim {choice.claim}"
                + (f" request {choice.request}" if choice.request else "")
            )
            message = self.left_out.update(entry.key, choice.kind, plan.left_out, what)
        if message is not None:
            log.info("Service %s: %s", entry.key, message, extra={"service": entry.key})
            await self.recorder.record(entry.body, WARNING, REASON_PODS_LEFT_OUT, message)
