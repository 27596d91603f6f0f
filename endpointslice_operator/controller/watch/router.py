"""Kopf event handlers: keep the indexes current and turn events into queue keys.

Only ``@kopf.on.event`` handlers (on a private registry), so Kopf writes nothing onto watched
objects. After updating its index each handler applies upstream's event -> key rules
(reference C.2): a Service at once (skipped if never ours); a Pod's selecting Services at once,
held while the write budget is short (``coalesce=False``: upstream's fixed batch delay), a pod
update by ``pod_changed``/``labels_changed`` as upstream; an EndpointSlice or Endpoints change
that is not our own echo after max(1 s, batch period), a kube-controller-manager slice at once
(``ConflictingController``); a Node's readiness or zone change refreshes the topology cache.
Nothing here raises: a malformed object is logged and skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any

import kopf
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.reset import Watermark
from endpointslice_operator.controller.cache.endpoints_index import endpoints_key
from endpointslice_operator.controller.cache.indexes import (
    Indexes,
    identity,
    node_ready,
    node_zone,
    replaced_by_newer,
    service_key,
    slice_ref,
)
from endpointslice_operator.controller.cache.optin import UPSTREAM_CONTROLLER_NAME
from endpointslice_operator.controller.cache.owner_kinds import split_owner_key, tracker_name
from endpointslice_operator.controller.watch.relist import Relisting
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.reconciler.mirroring import MIRRORING_CONTROLLER_NAME
from endpointslice_operator.reconciler.records import PodRecord, pod_record
from endpointslice_operator.reconciler.sources import (
    NETWORK_STATUS_ANNOTATION,
    claim_statuses_of,
    network_status_of,
)
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

__all__ = ["ENDPOINT_SLICE_MIN_SYNC_DELAY", "EventRouter", "register_handlers"]

log = logging.getLogger(__name__)

ENDPOINT_SLICE_MIN_SYNC_DELAY = 1.0
"""Upstream's ``endpointSliceChangeMinSyncDelay``."""
QUIET_RELEASE = 0.1
"""Seconds without a pod change after which Services held back to coalesce are let go."""


def pod_changed(old: PodRecord, new: PodRecord) -> bool:
    """Upstream ``podEndpointsChanged`` minus the label part.

    Upstream compares the deletionTimestamp *pointers*, which differ for any two informer
    objects that carry one, so any update of a terminating pod counts as a change.
    """
    return (
        old.terminating or new.terminating or old.ready != new.ready or old.pod_ips != new.pod_ips
    )


def labels_changed(old: PodRecord, new: PodRecord) -> bool:
    """Labels, or hostname/subdomain (they change the endpoint identity), differ."""
    return (
        dict(old.labels) != dict(new.labels)
        or old.hostname != new.hostname
        or old.subdomain != new.subdomain
    )


def _other_object(held: tuple[str, str], incoming: tuple[str, str], event_type: str | None) -> bool:
    """Whether an event concerns another object than the one indexed under its name, and must
    be ignored: the deletion of a predecessor, or a late event of one (see replaced_by_newer)."""
    if event_type == "DELETED":
        return bool(held[0] and incoming[0] and held[0] != incoming[0])
    return replaced_by_newer(held, incoming)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


_RELISTED = (
    ("services", "/api/v1"),
    ("pods", "/api/v1"),
    ("nodes", "/api/v1"),
    ("endpoints", "/api/v1"),
    ("endpointslices", "/apis/discovery.k8s.io/v1"),
)
"""The kinds the router holds, and where the API server serves them."""

_FOREIGN_WATCHED = frozenset({UPSTREAM_CONTROLLER_NAME, MIRRORING_CONTROLLER_NAME})
"""kube-controller-manager's slice controllers: their slices coming or going re-checks a
Service we manage (for the ConflictingController warning)."""


class EventRouter:
    """Applies watch events to the indexes and queues the affected Services.

    ``queue`` is None while this replica is not the leader: the indexes stay warm and the
    keys are dropped (a new leader queues every Service once when it starts its workers).
    """

    def __init__(
        self,
        *,
        indexes: Indexes,
        tracker: EndpointSliceTracker,
        topology: TopologyCache | None,
        batch_period: float,
        coalesce: bool = True,
        pressed: Callable[[], bool] | None = None,
        backlog: Callable[[int], float] | None = None,
        watermark: Watermark | None = None,
        mirrors: Callable[[str], bool] | None = None,
    ) -> None:
        self.indexes = indexes
        self.tracker = tracker
        self.topology = topology
        self.batch_period = batch_period
        self.coalesce = coalesce
        self.pressed = pressed
        """Whether the write budget is short (None: never)."""
        self.backlog = backlog
        """Seconds the write budget needs for that many writes."""
        self.last_pod_change = 0.0
        """Loop time of the last pod change that queued a Service."""
        self.queue: ServiceQueue | None = None
        self.events_seen = 0
        self.watermark = watermark if watermark is not None else Watermark()
        """The highest resourceVersion delivered by any watch (see :mod:`..api.reset`)."""
        self.topology_live = False
        self.relistings: dict[str, Relisting] = {}
        """Per kind, once the initial listings are in (:meth:`track_relists`): a later listing
        means a watch expired (410), and objects deleted meanwhile get no DELETED event."""
        self.on_leftover: Callable[[], None] | None = None
        """Called when a slice labelled managed-by ours without a service-name label is seen
        (the leader then deletes such leftovers); None: not leading."""
        self.mirrors = mirrors
        """Whether a Service key mirrors its Endpoints object (every change of that object
        then queues the Service); None: no mirroring."""

    # -- re-listing (no DELETED for objects gone while nobody watched, see :mod:`.relist`) --

    def track_relists(self, api_client: ApiClient) -> None:
        """From now on (the initial listings are in), check what each re-listing leaves out."""
        for kind, api in _RELISTED:
            self.relistings[kind] = Relisting(
                api_client,
                api,
                kind,
                held=partial(self._names, kind),
                uid_of=partial(self._uid, kind),
                forget=partial(self._forget, kind),
            )

    def listing_began(self, kind: str, scope: str | None) -> None:
        """A list-watch began listing ``kind`` in ``scope`` (its ``on_listing``): after the
        initial listings, a re-listing, even one that delivers no object."""
        relisting = self.relistings.get(kind)
        if relisting is not None:
            relisting.begin(scope)

    def cancel_relists(self) -> None:
        """Stop the checks in progress (the round ends)."""
        for relisting in self.relistings.values():
            relisting.cancel()

    def _note(self, kind: str, event_type: str | None, namespace: str, name: str) -> None:
        relisting = self.relistings.get(kind)
        if relisting is not None:
            relisting.note(event_type, (namespace, name))

    def _names(self, kind: str) -> list[tuple[str, str]]:
        if kind == "services":
            return self.indexes.services.names()
        if kind == "pods":
            return self.indexes.pods.names()
        if kind == "nodes":
            return self.indexes.nodes.names()
        if kind == "endpoints":
            return self.indexes.endpoints.names()
        return self.indexes.slices.names()

    def _uid(self, kind: str, key: tuple[str, str]) -> str | None:
        """The UID held under ``key`` ("" when unknown), None when nothing is."""
        namespace, name = key
        if kind == "services":
            service = self.indexes.services.get(service_key(namespace, name))
            return None if service is None else service.uid
        if kind == "pods":
            pod = self.indexes.pods.get(namespace, name)
            return None if pod is None else pod.uid
        if kind == "endpointslices":
            ref = self.indexes.slices.ref(namespace, name)
            return None if ref is None else ref.uid
        body = (
            self.indexes.nodes.get(name)
            if kind == "nodes"
            else self.indexes.endpoints.get(namespace, name)
        )
        return None if body is None else identity(body)[0]

    def _forget(self, kind: str, key: tuple[str, str]) -> None:
        """Handle an object confirmed gone as if its DELETED event had arrived."""
        namespace, name = key
        metadata = {"namespace": namespace, "name": name}
        if kind == "services":
            self.on_service("DELETED", {"metadata": metadata})
        elif kind == "pods":
            self.on_pod("DELETED", {"metadata": metadata})
        elif kind == "nodes":
            self.on_node("DELETED", {"metadata": {"name": name}})
        elif kind == "endpoints":
            self.on_endpoints("DELETED", {"metadata": metadata})
        else:
            last = self.indexes.slices.last_seen(namespace, name)
            if last is not None:
                self.on_slice("DELETED", last)

    # -- queueing helpers ------------------------------------------------------------------

    def _add(self, key: str) -> None:
        if self.queue is not None:
            self.queue.add(key)

    def _add_after(self, key: str, delay: float) -> None:
        if self.queue is not None:
            self.queue.add_after(key, delay)

    def requeue(self, keys: list[str]) -> None:
        """Queue these Services now (no-op while not leading)."""
        for key in keys:
            self._add(key)

    def all_keys(self) -> list[str]:
        """Every Service a fresh leader must look at: opted-in ones and those with our slices."""
        keys = {
            key
            for key in self.indexes.services.keys()  # noqa: SIM118 (not a dict)
            if (entry := self.indexes.services.get(key)) is not None
            and (entry.decision.opted_in or entry.decision.near_miss is not None)
        }
        keys.update(self.indexes.slices.services_with_ours())
        keys.update(service_key(ns, name) for ns, name in self.indexes.endpoints.ours())
        return sorted(keys)

    # -- services --------------------------------------------------------------------------

    def on_service(self, event_type: str | None, service: Mapping[str, Any]) -> None:
        metadata = _metadata(service)
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name:
            log.warning("ignoring a Service event without a name")
            return
        self._note("services", event_type, namespace, name)
        key = service_key(namespace, name)
        held = self.indexes.services.get(key)
        held_identity = identity(held.body) if held is not None else ("", "")
        if _other_object(held_identity, identity(service), event_type):
            return
        if event_type == "DELETED":
            previous = self.indexes.services.remove(namespace, name)
            if previous is not None and (
                previous.decision.opted_in
                or previous.decision.near_miss is not None
                or self.indexes.slices.has_ours(key)
            ):
                self._add(key)
            return
        previous, entry = self.indexes.services.upsert(service)
        # A plain Service (not opted in, no near miss of the opt-in) costs no sync.
        if (
            entry.decision.opted_in
            or entry.decision.near_miss is not None
            or (
                previous is not None
                and (previous.decision.opted_in or previous.decision.near_miss is not None)
            )
            or self.indexes.slices.has_ours(key)
        ):
            self._add(key)

    # -- pods ------------------------------------------------------------------------------

    def on_pod(self, event_type: str | None, pod: Mapping[str, Any]) -> None:
        metadata = _metadata(pod)
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name:
            log.warning("ignoring a Pod event without a name")
            return
        self._note("pods", event_type, namespace, name)
        held = self.indexes.pods.get(namespace, name)
        held_identity = (held.uid, held.resource_version) if held is not None else ("", "")
        if _other_object(held_identity, identity(pod), event_type):
            return
        if event_type == "DELETED":
            old = self.indexes.pods.remove(namespace, name)
            if old is not None and self.queue is not None:
                self._queue_pod_services(
                    namespace, self.indexes.services.selecting(namespace, old.labels)
                )
            return
        new = pod_record(pod, held)  # held's parsed IPs are reused while podIPs are unchanged
        old = self.indexes.pods.put(new)
        extras_changed = self._put_extras(namespace, name, metadata, pod)
        if new.errors:
            log.debug("pod %s/%s: %s", namespace, name, "; ".join(new.errors))
        if self.queue is None:
            # Not leading (or not yet: the initial listings): nothing to queue, and a new
            # leader queues every Service anyway. Finding the Services that select each pod
            # was a tenth of the start-up at 100,000 pods.
            return
        if old is None:
            self._queue_pod_services(
                namespace, self.indexes.services.selecting(namespace, new.labels)
            )
            return
        if old.resource_version == new.resource_version:
            return
        changed = pod_changed(old, new) or extras_changed
        relabelled = labels_changed(old, new)
        if not changed and not relabelled:
            return
        services = self.indexes.services
        if not relabelled:
            keys = services.selecting(namespace, new.labels)
        else:
            old_keys = services.selecting(namespace, old.labels)
            new_keys = services.selecting(namespace, new.labels)
            keys = old_keys | new_keys if changed else old_keys ^ new_keys
        self._queue_pod_services(namespace, keys)

    def _put_extras(
        self, namespace: str, name: str, metadata: Mapping[str, Any], pod: Mapping[str, Any]
    ) -> bool:
        """Keep a pod's secondary-network data in the pod index's side tables (only for the
        pods that carry it); whether it changed. A pod without any, and not held there, costs
        two dict lookups: this runs for every pod event (see docs/performance.md)."""
        pods = self.indexes.pods
        annotations = metadata.get("annotations")
        status = pod.get("status")
        if not (
            (isinstance(annotations, dict) and NETWORK_STATUS_ANNOTATION in annotations)
            or (isinstance(status, dict) and "resourceClaimStatuses" in status)
            or (pods.network_statuses and (namespace, name) in pods.network_statuses)
            or (pods.claim_statuses and (namespace, name) in pods.claim_statuses)
        ):
            return False
        return pods.put_extras(namespace, name, network_status_of(pod), claim_statuses_of(pod))

    def _queue_pod_services(self, namespace: str, keys: set[str]) -> None:
        if self.queue is None:
            return
        if not self.coalesce:
            for key in keys:
                self.queue.add_after(key, self.batch_period)
            return
        # While the write budget has room, every change goes at once. While it is short, a
        # change is held back for as long as the budget needs to write every pending Service
        # once (at most the batch period): by then the budget would only just have reached it
        # anyway, and more of its changes ride in the same write. Every held Service is let go
        # as soon as pod changes stop (``release_when_quiet``), so the hold thins a burst's
        # writes without lengthening its tail.
        self.last_pod_change = asyncio.get_running_loop().time()
        # A burst lasts while Services are held: new changes join them even after the budget
        # has refilled, so that the refill is not spent on writes the burst makes stale.
        if self.pressed is not None and (self.queue.held or self.pressed()):
            hold = self.batch_period
            if self.backlog is not None:
                hold = min(hold, self.backlog(self.queue.pending + len(keys)))
            for key in keys:
                self.queue.hold(key, hold)
        else:
            for key in keys:
                self.queue.add(key)

    async def release_when_quiet(self, quiet: float = QUIET_RELEASE) -> None:
        """Let held Services go once no pod change came for ``quiet`` seconds (until
        cancelled)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(quiet / 2)
            queue = self.queue
            if queue is not None and queue.held and loop.time() - self.last_pod_change >= quiet:
                queue.release_held()

    # -- endpoint slices ----------------------------------------------------------------------

    def on_slice(self, event_type: str | None, endpoint_slice: Mapping[str, Any]) -> None:
        # An imported slice (Multi-Cluster Services) is filed under its ServiceImport's key
        # (``serviceimport:ns/name``, see controller/owners/), never under the derived Service
        # its ``kubernetes.io/service-name`` names: the Service path leaves it alone.
        namespace, name, ref = slice_ref(endpoint_slice)
        if not name:
            log.warning("ignoring an EndpointSlice event without a name")
            return
        self._note("endpointslices", event_type, namespace, name)
        held = self.indexes.slices.ref(namespace, name)
        held_identity = (held.uid, held.resource_version) if held is not None else ("", "")
        if _other_object(held_identity, (ref.uid, ref.resource_version), event_type):
            return
        managed_by = self.indexes.slices.managed_by
        if event_type == "DELETED":
            previous = self.indexes.slices.remove(endpoint_slice)
            if (
                ref.managed_by == managed_by
                and self.tracker.has(endpoint_slice)
                and not self.tracker.handle_deletion(endpoint_slice)
            ):
                self._requeue_for_slice(ref.service, name)
            elif ref.managed_by in _FOREIGN_WATCHED and previous is not None:
                self._requeue_managed(ref.service)
            if ref.managed_by == managed_by:
                self._release_tracking(ref.service)
            return
        previous = self.indexes.slices.put(endpoint_slice)
        if previous is None:
            if ref.managed_by == managed_by and self.tracker.should_sync(endpoint_slice):
                self._requeue_for_slice(ref.service, name)
            elif ref.managed_by in _FOREIGN_WATCHED:
                self._requeue_managed(ref.service)
            return
        if previous.managed_by == managed_by and (
            ref.managed_by != managed_by or previous.service != ref.service
        ):
            # The slice left our list for its Service (managed-by relabelled away, or moved to
            # another Service). For the tracker that Service lost it as if it were deleted;
            # otherwise every later sync of the Service would wait for it to come back and
            # report a stale cache until the retry budget dropped the key.
            self._forget_tracked(namespace, previous.service, ref.uid)
        if previous.service != ref.service:
            self._requeue_for_slice(ref.service, name)
            self._requeue_for_slice(previous.service, name)
        elif (previous.managed_by == managed_by) != (ref.managed_by == managed_by) or (
            ref.managed_by == managed_by and self.tracker.should_sync(endpoint_slice)
        ):
            self._requeue_for_slice(ref.service, name)
        if (previous.managed_by in _FOREIGN_WATCHED) != (ref.managed_by in _FOREIGN_WATCHED):
            self._requeue_managed(ref.service)

    def _forget_tracked(self, namespace: str, service: str | None, uid: str) -> None:
        if service is None or not uid:
            return
        kind, _, owner = split_owner_key(service)
        self.tracker.handle_deletion(
            {"metadata": {"namespace": namespace, "uid": uid, "labels": {kind.slice_label: owner}}}
        )
        self._release_tracking(service)

    def _release_tracking(self, service: str | None) -> None:
        """Drop a Service's tracker entry once it tracks no slice (the tracker keeps an empty
        one, as upstream's does; kept, it would cost an entry per Service ever opted out)."""
        if service is None:
            return
        namespace, name = tracker_name(service)
        generations = self.tracker.generations(namespace, name)
        if generations is not None and not generations:
            self.tracker.delete_service(namespace, name)

    def _requeue_for_slice(self, key: str | None, slice_name: str) -> None:
        if key is None:
            # Ours (the callers check managed-by) but no Service can claim it: a leftover.
            if self.on_leftover is not None:
                self.on_leftover()
            return
        self._add_after(key, self.slice_change_delay)

    @property
    def slice_change_delay(self) -> float:
        """Upstream's ``max(endpointSliceChangeMinSyncDelay, batch period)``, where upstream's
        batch period is the delay every pod change gets: here 0 while coalescing (changes go
        at once; only pod-driven bursts are held, for at most ``--batch-period``), else the
        fixed ``batch_period``. So a repair waits 1 s, as kube-controller-manager's does at
        its default batch period 0, not the burst hold's upper bound."""
        pod_delay = 0.0 if self.coalesce else self.batch_period
        return max(ENDPOINT_SLICE_MIN_SYNC_DELAY, pod_delay)

    def _requeue_managed(self, key: str | None) -> None:
        """A foreign controller's slice came or went: re-check a Service we manage (or that
        mirrors its Endpoints) at once."""
        if key is None:
            return
        entry = self.indexes.services.get(key)
        if entry is not None and entry.decision.opted_in:
            self._add(key)

    # -- resource claims (only watched while a Service uses a device network) ----------------

    def on_claim(self, event_type: str | None, claim: Mapping[str, Any]) -> None:
        """A ResourceClaim changed: sync the Services selecting the pods that use it."""
        metadata = _metadata(claim)
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        if not name:
            return
        claims = self.indexes.claims
        if event_type == "DELETED":
            if claims.remove(namespace, name) is None:
                return
        else:
            previous, current = claims.put(claim)
            if previous is not None and previous["status"] == current["status"]:
                return
            if not claims.synced:
                return  # the listing's end queues every device-network Service
        for pod in self.indexes.pods.claimed_by(namespace, name):
            self._queue_pod_services(
                namespace, self.indexes.services.selecting(namespace, pod.labels)
            )

    # -- endpoints (core/v1) ---------------------------------------------------------------

    def on_endpoints(self, event_type: str | None, endpoints: Mapping[str, Any]) -> None:
        """Keep the Endpoints index; queue the Service when its Endpoints object of ours was
        deleted or changed hands, or when someone else's appeared or went away (an Endpoints
        object is named after its Service). An update of ours is our own write coming back
        when its resourceVersion is the one our last write answered (the index holds that
        answer); any other was written by someone else and is repaired after the slice delay
        (:attr:`slice_change_delay`), as a slice of ours changed by hand is."""
        namespace, name = endpoints_key(endpoints)
        if not name:
            log.warning("ignoring an Endpoints event without a name")
            return
        self._note("endpoints", event_type, namespace, name)
        index = self.indexes.endpoints
        if event_type == "DELETED":
            previous = index.remove(endpoints)
            now_ours = False
        else:
            previous = index.put(endpoints)
            now_ours = index.is_ours(endpoints)
        was_ours = index.is_ours(previous)
        key = service_key(namespace, name)
        if self.mirrors is not None and self.mirrors(key):
            self._add(key)
        elif (
            was_ours
            and now_ours
            and previous is not None
            and _resource_version(previous) != _resource_version(endpoints)
        ):
            self._add_after(key, self.slice_change_delay)
        elif event_type == "DELETED" or was_ours != now_ours or (previous is None and not now_ours):
            entry = self.indexes.services.get(key)
            if was_ours or (entry is not None and entry.decision.managed):
                self._add(key)

    # -- nodes -----------------------------------------------------------------------------

    def on_node(self, event_type: str | None, node: Mapping[str, Any]) -> None:
        name = str(_metadata(node).get("name") or "")
        if not name:
            log.warning("ignoring a Node event without a name")
            return
        self._note("nodes", event_type, "", name)
        if _other_object(identity(self.indexes.nodes.get(name)), identity(node), event_type):
            return
        if event_type == "DELETED":
            relevant = self.indexes.nodes.remove(name) is not None
        else:
            previous, current = self.indexes.nodes.put(node)
            relevant = (
                previous is None
                or node_ready(previous) != node_ready(current)
                or node_zone(previous) != node_zone(current)
            )
            if previous is not None and node_zone(previous) != node_zone(current):
                # Deliberately beyond upstream (which treats zones as immutable): endpoints
                # carry their node's zone, so the Services with pods there are synced again.
                for pod in self.indexes.pods.on_node(name):
                    self._queue_pod_services(
                        pod.namespace, self.indexes.services.selecting(pod.namespace, pod.labels)
                    )
        if relevant and self.topology_live:
            self.refresh_topology()

    def refresh_topology(self) -> None:
        """Upstream's topology queue: SetNodes, then queue the overloaded Services."""
        if self.topology is None:
            return
        self.topology.set_nodes(self.indexes.nodes.all())
        for key in self.topology.get_overloaded_services():
            self._add(key)


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str(_metadata(obj).get("resourceVersion") or "")


WatchHandler = Callable[[str | None, Mapping[str, Any]], None]


def _guarded(kind: str, handler: WatchHandler, router: EventRouter) -> Any:
    async def on_event(event: Mapping[str, Any], **_: Any) -> None:
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return
        router.events_seen += 1
        router.watermark.observe(_metadata(obj).get("resourceVersion"))
        try:
            handler(event.get("type"), obj)
        except Exception:
            metadata = _metadata(obj)
            log.exception(
                "failed to handle a %s event for %s/%s",
                kind,
                metadata.get("namespace"),
                metadata.get("name"),
            )

    on_event.__name__ = f"on_{kind}_event"
    return on_event


def register_handlers(
    registry: kopf.OperatorRegistry,
    router: EventRouter,
    *,
    skip: Collection[str] = (),
) -> None:
    """Register the watch handlers on ``registry`` (and nothing else): Services, Pods, Nodes and
    EndpointSlices, except the plural resource names in ``skip`` (the operator lists and
    watches Pods, Services and EndpointSlices itself, see ``controller.list_watch``)."""
    for group_version, plural, kind, handler in (
        ("v1", "services", "service", router.on_service),
        ("v1", "pods", "pod", router.on_pod),
        ("v1", "nodes", "node", router.on_node),
        ("discovery.k8s.io/v1", "endpointslices", "endpointslice", router.on_slice),
    ):
        if plural in skip:
            continue
        group, _, version = group_version.rpartition("/")
        kopf.on.event(group, version, plural, id=f"index-{kind}", registry=registry)(
            _guarded(kind, handler, router)
        )
