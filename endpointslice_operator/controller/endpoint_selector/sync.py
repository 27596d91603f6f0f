"""The EndpointSelector owner kind's sync (:class:`EndpointSelectorSyncer`), the work queue's
handler for ``endpointselector:`` keys: an invalid spec gets a Warning Event and no writes; a
valid one is planned with ``reconciler.plan_endpoint_selector`` and written through the one
write pipeline (:mod:`..sync.apply`); a deleted one has its slices deleted by the operator (the
garbage collector does it on a real cluster through their ownerReference; where none runs,
nobody else would).
"""

from __future__ import annotations

from collections.abc import Iterable

from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR, split_owner_key
from endpointslice_operator.controller.endpoint_selector.index import (
    REASON_UNRESOLVED_PORT,
    EndpointSelectorEntry,
    EndpointSelectorIndex,
    endpoint_counts,
    published_slices,
)
from endpointslice_operator.controller.sync.apply import SyncError, WriteToken, is_deleting
from endpointslice_operator.controller.sync.events import WARNING
from endpointslice_operator.controller.sync.service import ServiceSyncer, recorded_sync
from endpointslice_operator.reconciler.endpoint_selector import (
    plan_endpoint_selector,
    unresolved_ports,
)
from endpointslice_operator.reconciler.records import PodRecord
from endpointslice_operator.reconciler.tracking.tracker import StaleInformerCache
from endpointslice_operator.reconciler.tracking.trigger_time import TriggerTimeTracker, parse_time

__all__ = ["EndpointSelectorSyncer"]


class EndpointSelectorSyncer:
    """Syncs ``endpointselector:`` keys (an owner syncer, see :class:`.OwnerSyncs`)."""

    def __init__(
        self,
        index: EndpointSelectorIndex,
        services: ServiceSyncer,
        *,
        kep6116_labels: bool = True,
    ) -> None:
        self.index = index
        self.services = services
        """The Service syncer: its writer, budget, tracker, metrics and Events are shared."""
        self.kep6116_labels = kep6116_labels
        self.trigger_times = TriggerTimeTracker()
        self._warned: dict[str, int] = {}
        """Keys told about an invalid spec, and the generation told about."""
        self.waiting: set[str] = set()
        """Keys synced before the first listing was in (queued again once it is)."""

    def start_term(self) -> None:
        self.trigger_times = TriggerTimeTracker()
        self._warned.clear()
        self.index.counts.clear()  # an earlier term's: this term's syncs record them again
        self.index.unresolved.clear()  # reported again (once) by this term's syncs

    def all_keys(self) -> Iterable[str]:
        keys = set(self.index.keys())
        keys.update(
            key
            for key in self.services.indexes.slices.services_with_ours()
            if key.startswith(f"{ENDPOINT_SELECTOR.key_prefix}:")
        )
        return sorted(keys)

    async def sync(self, key: str) -> None:
        if not self.index.synced:
            # Not listed yet: a missing object is not a deleted one, and this is no sync.
            self.waiting.add(key)
            return
        await recorded_sync(self.services.metrics, self._sync(key))

    async def _sync(self, key: str) -> None:
        entry = self.index.get(key)
        if entry is None:
            await self._gone(key)
            return
        if entry.selector is None:
            if self._warned.get(key) != entry.generation:
                self._warned[key] = entry.generation
                reason, _ = entry.problems[0]
                await self.services.recorder.record(
                    entry.body,
                    WARNING,
                    reason,
                    "Not publishing EndpointSlices: "
                    + "; ".join(message for _, message in entry.problems),
                )
            return
        self._warned.pop(key, None)
        await self.services.writes.budgeted(lambda held: self._plan_and_apply(entry, held))

    async def _plan_and_apply(self, entry: EndpointSelectorEntry, held: WriteToken) -> None:
        services = self.services
        indexes = services.indexes
        assert entry.selector is not None
        pods = indexes.pods.select(entry.namespace, entry.selector)
        slices = [s for s in indexes.slices.ours(entry.key) if not is_deleting(s)]
        writes = services.writes
        if writes.tracker.stale_slices(entry.body, slices):
            raise StaleInformerCache()
        trigger_time = self.trigger_times.compute_trigger_time(
            entry.namespace,
            entry.name,
            parse_time(entry.body["metadata"].get("creationTimestamp")),
            {pod.name: parse_time(pod.ready_transition) for pod in pods},
        )
        nodes = indexes.nodes.subset({pod.node_name for pod in pods if pod.node_name})
        plan = plan_endpoint_selector(
            entry.body,
            pods,
            nodes,
            slices,
            services.config,
            trigger_time=trigger_time,
            kep6116_labels=self.kep6116_labels,
        )
        writes.record_plan(entry.key, plan)
        for event in plan.events:
            await services.recorder.record(entry.body, event.type, event.reason, event.message)
        await writes.apply(entry, plan, held)
        self.index.counts[entry.key] = endpoint_counts(published_slices(slices, plan))
        await self._check_ports(entry, pods)
        missing_nodes = [e for e in plan.errors if e.endswith(" Not Found")]
        if missing_nodes:
            message = "; ".join(missing_nodes)
            await writes.failed(entry.key, entry.body, message)
            raise SyncError(message)

    async def _check_ports(self, entry: EndpointSelectorEntry, pods: list[PodRecord]) -> None:
        """``Ready=False/UnresolvedPort`` and one Warning Event per message while a named port
        of ``spec.ports`` exists on no selected pod (the slices stay as planned: such a port is
        published for no endpoint, as kube-controller-manager does for a Service)."""
        missing = unresolved_ports(entry.body, pods)
        if not missing:
            self.index.unresolved.pop(entry.key, None)
            return
        message = (
            f"No selected pod has a container port named {', '.join(missing)} "
            f"(name/protocol, from spec.ports); the EndpointSlices publish "
            f"{'it' if len(missing) == 1 else 'them'} for no endpoint. Fix spec.ports[].port "
            f"or the pods' container port names."
        )
        if self.index.unresolved.get(entry.key) == message:
            return
        self.index.unresolved[entry.key] = message
        await self.services.recorder.record(entry.body, WARNING, REASON_UNRESOLVED_PORT, message)

    async def _gone(self, key: str) -> None:
        """The EndpointSelector is gone: delete the slices we manage for it (the garbage
        collector may be doing the same: a slice already gone is not an error)."""
        writes = self.services.writes
        _, namespace, name = split_owner_key(key)
        for endpoint_slice in self.services.indexes.slices.ours(key):
            if not is_deleting(endpoint_slice):
                await writes.delete(key, None, endpoint_slice)  # no object left for an Event
        self.trigger_times.delete_service(namespace, name)
        writes.metrics_cache.delete_service(key)
        writes.publish_gauges()
        self._warned.pop(key, None)
