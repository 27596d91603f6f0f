"""The one write pipeline every owner kind uses: a plan's writes, in order, on the API.

Creates, then updates, then deletes, and the first failure stops the rest (upstream's
``finalize``). Each write takes a token of the write budget (the first one possibly before the
caches were read: :meth:`SliceWrites.budgeted`), is recorded in the tracker (so its watch echo
is known for ours) and counted in the metrics; a failure becomes a
``FailedToUpdateEndpointSlices`` Warning Event on the owner (``<Kind> namespace/name``) and an
error for the work queue to retry. The slice gauges (:class:`MetricsCache`) are kept here too.
Services, EndpointSelectors and the mirroring controller write through one instance per round;
the mirroring controller counts its writes in its own metrics (:class:`Reporting`), as upstream.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.writer import SliceWriter
from endpointslice_operator.controller.cache.owner_kinds import split_owner_key, tracker_for_owners
from endpointslice_operator.controller.sync.events import WARNING, EventRecorder
from endpointslice_operator.controller.work.budget import WriteBudget, spend
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.reconciler.plan import Plan
from endpointslice_operator.reconciler.tracking.metrics_cache import MetricsCache

__all__ = [
    "REASON_FAILED_TO_UPDATE",
    "OwnerEntry",
    "Reporting",
    "SliceWrites",
    "SyncError",
    "WriteToken",
    "is_deleting",
    "owner_text",
    "slice_name",
]

log = logging.getLogger(__name__)

REASON_FAILED_TO_UPDATE = "FailedToUpdateEndpointSlices"


class SyncError(Exception):
    """A sync that must be retried (a failed write, or pods skipped for a missing node)."""


class OwnerEntry(Protocol):
    """What the write path reads of an owner: its queue key and (slim) body."""

    @property
    def key(self) -> str: ...

    @property
    def body(self) -> dict[str, Any]: ...


def owner_text(key: str) -> str:
    """``Service ns/name`` or ``EndpointSelector ns/name``: an owner key for messages."""
    kind, namespace, name = split_owner_key(key)
    return f"{kind.kind} {namespace}/{name}"


def is_deleting(endpoint_slice: Mapping[str, Any]) -> bool:
    """Whether the slice carries a ``deletionTimestamp`` (no longer one to plan with)."""
    metadata = endpoint_slice.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("deletionTimestamp") is not None


def slice_name(endpoint_slice: Mapping[str, Any]) -> str:
    metadata = endpoint_slice.get("metadata") or {}
    return str(metadata.get("name") or metadata.get("generateName") or "")


def _failure(operation: str, endpoint_slice: Mapping[str, Any], key: str, exc: ApiError) -> str:
    owner = owner_text(key)
    if operation == "create":
        return f"failed to create EndpointSlice for {owner}: {exc}"
    return f"failed to {operation} {slice_name(endpoint_slice)} EndpointSlice for {owner}: {exc}"


@dataclass(frozen=True, slots=True)
class Reporting:
    """How a controller's writes are counted and worded: the slice controller's by default."""

    change: Callable[[str], None] | None = None
    """Counts one write (``create``, ``update``, ``delete``); None: the slice controller's."""
    failure: Callable[[str, Mapping[str, Any], str, ApiError], str] = _failure
    """The message of a failed write: (operation, slice, owner key, error)."""
    error: Callable[[str, ApiError], Exception] = lambda message, _: SyncError(message)
    """What the sync raises for it (the work queue retries)."""
    observe: bool = True
    """Observe the changed slices (``endpoint_slice_controller_changes``) after a plan."""
    recorder: EventRecorder | None = None
    """Who posts the failure Events; None: the slice controller's recorder."""


SLICE_CONTROLLER = Reporting()


class WriteToken:
    """Whether a sync still holds the write-budget token it took before planning."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = False


class SliceWrites:
    """A round's slice writes: the writer (its write fence), the budget, the tracker, the
    metrics and the failure Events, for every owner kind."""

    def __init__(
        self,
        *,
        writer: SliceWriter,
        recorder: EventRecorder,
        metrics: OperatorMetrics,
        max_endpoints_per_slice: int,
        budget: WriteBudget | None = None,
        plan_after_budget: bool = True,
    ) -> None:
        self.writer = writer
        self.recorder = recorder
        self.metrics = metrics
        self.budget = budget
        # True: the first token of a sync is taken before the caches are read (every write
        # carries the freshest state); False: kube-controller-manager's order, plan then wait
        # for the limiter before each request (the baseline the benchmarks compare with).
        self.plan_after_budget = plan_after_budget
        self.tracker = tracker_for_owners()
        self.metrics_cache = MetricsCache(max_endpoints_per_slice)

    def start_term(self) -> None:
        """Forget what earlier leader terms wrote (another leader may have replaced it)."""
        self.tracker = tracker_for_owners()

    async def spend(self) -> None:
        """Wait for one token of the write budget (if there is one)."""
        await spend(self.budget)

    async def budgeted(self, run: Callable[[WriteToken], Awaitable[None]]) -> None:
        """Run one sync's planning and writes, its first token taken before (with
        ``plan_after_budget``) and given back when no write used it."""
        held = WriteToken()
        if self.budget is not None and self.plan_after_budget:
            await self.spend()
            held.held = True
        try:
            await run(held)
        finally:
            if held.held and self.budget is not None:
                self.budget.refund()  # no write needed it (or none was made)

    def record_plan(self, key: str, plan: Plan) -> None:
        """The plan's numbers into the per-sync metrics and the slice gauges."""
        for address_type, numbers in plan.metrics.items():
            self.metrics.observe_endpoints_per_sync(numbers.added, numbers.removed)
            self.metrics_cache.update_service(key, address_type, numbers.port_cache)
        # An owner that stopped supporting a family (dual-stack -> single-stack) must not keep
        # that family's numbers in the gauges.
        for address_type in self.metrics_cache.address_types(key) - plan.metrics.keys():
            self.metrics_cache.remove_address_type(key, address_type)
        self.metrics_cache.update_traffic_distribution(key, plan.traffic_distribution_label or None)
        self.publish_gauges()

    def publish_gauges(self) -> None:
        cache = self.metrics_cache
        self.metrics.set_cache_gauges(
            cache.desired_endpoints,
            cache.actual_slices,
            cache.desired_slices,
            cache.services_by_traffic_distribution(),
        )

    async def apply(
        self,
        owner: OwnerEntry,
        plan: Plan,
        held: WriteToken | None = None,
        *,
        reporting: Reporting = SLICE_CONTROLLER,
    ) -> None:
        """Creates, then updates, then deletes; the first failure stops the rest."""
        change = reporting.change or self.metrics.record_change
        written: dict[str, Any]
        for endpoint_slice in plan.creates:
            await self._before_write(held)
            try:
                written = await self.writer.create(endpoint_slice)
            except ApiError as exc:
                if exc.namespace_terminating:
                    # Upstream: nothing to do in a namespace being deleted, and not an error.
                    log.info("Namespace of %s is terminating; not creating slices", owner.key)
                    return
                await self._write_failed(
                    owner.key, owner.body, "create", endpoint_slice, exc, reporting
                )
            self.tracker.update(written)
            change("create")
        for endpoint_slice in plan.updates:
            await self._before_write(held)
            try:
                written = await self.writer.replace(endpoint_slice)
            except ApiError as exc:
                await self._write_failed(
                    owner.key, owner.body, "update", endpoint_slice, exc, reporting
                )
            self.tracker.update(written)
            change("update")
        for existing in plan.deletes:
            await self._before_write(held)
            await self._delete(owner.key, owner.body, existing, reporting)
        if not reporting.observe:
            return
        self.metrics.observe_slices_changed(
            plan.changed_slices,
            topology=plan.topology_label,
            traffic_distribution=plan.traffic_distribution_label,
        )
        if plan.write_count:
            # Per sync: debug detail (the periodic summary counts these at info).
            log.debug(
                "Synced %s: %d created, %d updated, %d deleted",
                owner.key,
                len(plan.creates),
                len(plan.updates),
                len(plan.deletes),
                extra={"service": owner.key},
            )

    async def delete(
        self,
        key: str,
        body: Mapping[str, Any] | None,
        endpoint_slice: Mapping[str, Any],
        *,
        reporting: Reporting = SLICE_CONTROLLER,
    ) -> None:
        """Delete one slice of the owner ``key`` outside a plan (its owner gone or no longer
        managed): a token, the uid precondition, the tracker; ``body`` None: no Event."""
        await self.spend()
        await self._delete(key, body, endpoint_slice, reporting)

    async def failed(self, key: str, body: Mapping[str, Any] | None, message: str) -> None:
        """The ``FailedToUpdateEndpointSlices`` Warning Event on the owner (if it exists)."""
        await self._failed(key, body, message, self.recorder)

    async def _failed(
        self, key: str, body: Mapping[str, Any] | None, message: str, recorder: EventRecorder
    ) -> None:
        if body is None:
            return
        await recorder.record(
            body,
            WARNING,
            REASON_FAILED_TO_UPDATE,
            f"Error updating Endpoint Slices for {owner_text(key)}: {message}",
        )

    async def _before_write(self, held: WriteToken | None) -> None:
        """Use the token taken before planning, or wait for a new one."""
        if held is not None and held.held:
            held.held = False
        else:
            await self.spend()

    async def _delete(
        self,
        key: str,
        body: Mapping[str, Any] | None,
        endpoint_slice: Mapping[str, Any],
        reporting: Reporting,
    ) -> None:
        try:
            await self.writer.delete(endpoint_slice)
        except ApiError as exc:
            await self._write_failed(key, body, "delete", endpoint_slice, exc, reporting)
        self.tracker.expect_deletion(endpoint_slice)
        (reporting.change or self.metrics.record_change)("delete")

    async def _write_failed(
        self,
        key: str,
        body: Mapping[str, Any] | None,
        operation: str,
        endpoint_slice: Mapping[str, Any],
        exc: ApiError,
        reporting: Reporting,
    ) -> NoReturn:
        message = reporting.failure(operation, endpoint_slice, key, exc)
        await self._failed(key, body, message, reporting.recorder or self.recorder)
        raise reporting.error(message, exc) from exc
