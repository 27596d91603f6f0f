"""The running operator: watches -> indexes -> work queue -> syncs, plus health and HA.

:class:`Operator` wires everything for one replica and can run in-process (tests, the demo):
list-watches for Pods, Services, EndpointSlices (and Endpoints on demand), Kopf for Nodes;
readiness once every index holds as many objects as the server reports; re-listing checks
(:mod:`.watch.relist`); leader election gating the workers only; and a reset API server
(:mod:`.api.reset`) ending the round: fence closed, workers cancelled, the Lease left alone,
indexes dropped, ``/readyz`` false, a new round from fresh listings (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import aiohttp
import kopf
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.api.reset import (
    StateReset,
    WriteFence,
)
from endpointslice_operator.controller.cache.endpoints_index import LABEL_MANAGED_BY, EndpointsIndex
from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.cache.owner_kinds import (
    OwnerSyncs,
)
from endpointslice_operator.controller.endpoint_selector.index import EndpointSelectorIndex
from endpointslice_operator.controller.mcs.controller import MulticlusterController
from endpointslice_operator.controller.mcs.imports import MulticlusterSyncError
from endpointslice_operator.controller.round import RoundNeeds, build_round
from endpointslice_operator.controller.runtime import heap
from endpointslice_operator.controller.runtime.health import HealthServer
from endpointslice_operator.controller.runtime.leader import LeaderElector
from endpointslice_operator.controller.runtime.probes import count_objects, probe_resets
from endpointslice_operator.controller.runtime.rivals import RivalLeases
from endpointslice_operator.controller.runtime.summary import run_summaries
from endpointslice_operator.controller.sync.apply import SyncError
from endpointslice_operator.controller.sync.endpoints import EndpointsSyncError
from endpointslice_operator.controller.sync.mirroring import MirroringSyncError
from endpointslice_operator.controller.sync.networks import NetworkAnnotations
from endpointslice_operator.controller.sync.service import ServiceSyncer
from endpointslice_operator.controller.watch.kopf_wiring import (
    WATCH_CLIENT_TIMEOUT,
    WATCH_SERVER_TIMEOUT,
    connection_info,
    load_client_configuration,
    run_kopf,
)
from endpointslice_operator.controller.watch.list_watch import KINDS, ListWatcher
from endpointslice_operator.controller.watch.router import EventRouter, register_handlers
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.reconciler.tracking.tracker import StaleInformerCache
from endpointslice_operator.settings import Settings

__all__ = ["Operator", "OperatorFailed"]

log = logging.getLogger(__name__)

READINESS_POLL_INTERVAL = 0.05
"""How often the index sizes are compared with the expected counts (in memory, cheap)."""
READINESS_RECOUNT_INTERVAL = 2.0
"""How often the expected counts are asked from the API server again."""
SHUTDOWN_TIMEOUT = 10.0
ALWAYS_WATCHED = ("pods", "services", "endpointslices")
"""The kinds of :data:`.watch.list_watch.KINDS` watched from the start (Endpoints: on demand)."""


class OperatorFailed(RuntimeError):
    """One of the operator's long-running parts (watches, readiness, workers) failed."""


class Operator:
    """One replica of the operator; ``await run()`` until :meth:`stop` (or SIGTERM/SIGINT)."""

    def __init__(
        self,
        settings: Settings,
        *,
        metrics: OperatorMetrics | None = None,
        identity: str | None = None,
        serve_health: bool = True,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        write_policy: str = "fresh",
        settle_heap: bool = False,
    ) -> None:
        if write_policy not in ("fresh", "kcm"):
            raise ValueError(f"write_policy must be 'fresh' or 'kcm', got {write_policy!r}")
        self.settings = settings
        # "fresh": the operator's write policy (budget taken before planning, bursts coalesced,
        # see controller/budget.py and EventRouter._queue_pod_services); "kcm": kube-controller-
        # manager's (plan, then wait for the limiter per request; a fixed batch delay), the
        # baseline the benchmarks measure against on the emulator.
        self.write_policy = write_policy
        # ``endpointslice-operator run`` freezes the heap once the caches are filled (see
        # controller/heap.py); an operator embedded in another program leaves its host's
        # garbage collector alone.
        self.settle_heap = settle_heap
        self.metrics = metrics if metrics is not None else OperatorMetrics()
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}_{id(self):x}"
        self.serve_health = serve_health
        # kube-controller-manager's leader-election timings (lease 15 s, renew 10 s, retry 2 s).
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.config = ReconcilerConfig(
            controller_name=settings.managed_by,
            max_endpoints_per_slice=settings.max_endpoints_per_slice,
            topology_hints=settings.topology_hints,
            prefer_same_traffic_distribution=settings.prefer_same_traffic_distribution,
        )
        self.networks = NetworkAnnotations(
            settings.network_annotation, settings.device_network_annotation
        )
        self.indexes: Indexes
        self.topology: TopologyCache | None
        self._fresh_state()
        self.router: EventRouter | None = None
        self.syncer: ServiceSyncer | None = None
        self.endpoint_selectors: EndpointSelectorIndex | None = None
        """EndpointSelectors (None with ``--no-endpoint-selectors``), fresh every round."""
        self.owners: OwnerSyncs | None = None
        """The queue's handler: Service keys to ``syncer``, other owner kinds to theirs."""
        self.queue: ServiceQueue | None = None
        self.multicluster: MulticlusterController | None = None
        """The multi-cluster controller of the current round (``--multicluster``)."""
        self.api_client: ApiClient | None = None
        self.health: HealthServer | None = None
        self._stop = asyncio.Event()
        self._round_over = asyncio.Event()
        """Set to end the current round: on :meth:`stop`, or when the API server was reset."""
        self._reset_reason: str | None = None
        self.resets = 0
        """Rounds ended because the API server's state was reset."""
        self._ready = asyncio.Event()
        self._leading = asyncio.Event()
        self._kopf_stop: asyncio.Future[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._fence: WriteFence | None = None
        """The current round's write fence (see :mod:`.api.reset`)."""

    # -- public control ---------------------------------------------------------------------

    def stop(self) -> None:
        """Ask :meth:`run` to shut down gracefully (idempotent)."""
        self._stop.set()
        self._round_over.set()

    def _fresh_state(self) -> None:
        self.indexes = Indexes(
            enabled_annotation=self.settings.enabled_annotation,
            selector_annotation=self.settings.selector_annotation,
            managed_by=self.settings.managed_by,
            extra_annotations=(
                self.settings.endpoints_annotation,
                self.settings.source_annotation,
                *self.networks.names,
            ),
        )
        self.topology = TopologyCache() if self.settings.topology_hints else None

    def _api_server_reset(self, reason: str) -> None:
        """End the round: the indexes describe a state the API server no longer has."""
        if self._reset_reason is not None or self._stop.is_set():
            return
        self._reset_reason = reason
        if self._fence is not None:
            self._fence.close(reason)  # first: no write of this round goes out any more
        log.warning("The API server's state was reset (%s); listing everything again", reason)
        self._ready.clear()
        if self.health is not None:
            self.health.set_ready(False)
        self._round_over.set()

    async def wait_ready(self) -> None:
        """Return once the initial listings are in the indexes."""
        await self._ready.wait()

    async def wait_leading(self) -> None:
        """Return once this replica runs the queue workers."""
        await self._leading.wait()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> None:
        configuration = await load_client_configuration(self.settings)
        resolve_env_proxy(configuration)
        async with OperatorApiClient(
            configuration, api_timeout=self.settings.api_timeout
        ) as api_client:
            self.api_client = api_client
            await self._start_health()
            try:
                while True:
                    await self._run_round(configuration, api_client)
                    if self._reset_reason is None or self._stop.is_set():
                        break
                    self.resets += 1
                    self.metrics.record_state_reset()
                    self._fresh_state()
                    self._reset_reason = None
                    self._round_over.clear()
            finally:
                await self._stop_health()

    async def _run_round(self, configuration: Configuration, api_client: ApiClient) -> None:
        """Watch, index and sync from fresh listings until stopped or the server is reset."""
        if self.settle_heap:
            # No cyclic collections while the listings fill the caches (see controller/heap.py).
            heap.pause()
            asyncio.get_running_loop().call_later(heap.PAUSE_LIMIT, heap.resume)
        parts = build_round(
            RoundNeeds(
                settings=self.settings,
                config=self.config,
                indexes=self.indexes,
                topology=self.topology,
                metrics=self.metrics,
                networks=self.networks,
                identity=self.identity,
                fresh=self.write_policy == "fresh",
                spawn=self._spawn,
                on_reset=self._api_server_reset,
                on_signal=self.stop,
                watch_endpoints=lambda router: self._watch_endpoints(
                    api_client, router, self.indexes.endpoints
                ),
            ),
            api_client,
            configuration,
        )
        self._fence = parts.fence
        self.syncer, self.router, self.owners = parts.syncer, parts.router, parts.owners
        self.endpoint_selectors = parts.endpoint_selectors
        self.multicluster = parts.multicluster
        router, syncer = parts.router, parts.syncer
        await self._run_tasks(configuration, api_client, router, syncer)

    async def _run_tasks(
        self,
        configuration: Configuration,
        api_client: ApiClient,
        router: EventRouter,
        syncer: ServiceSyncer,
    ) -> None:
        registry = kopf.OperatorRegistry()

        @kopf.on.login(registry=registry)
        async def login(**_: Any) -> kopf.ConnectionInfo:
            return await connection_info(configuration)

        register_handlers(registry, router, skip=KINDS)
        loop = asyncio.get_running_loop()
        self._kopf_stop = loop.create_future()
        namespaces = list(self.settings.namespaces)
        kopf_task = asyncio.create_task(
            run_kopf(registry, namespaces, self._kopf_stop, self.settings.api_timeout, self.stop),
            name=f"kopf-{self.identity}",
        )
        readiness_task = asyncio.create_task(
            self._watch_readiness(api_client, router), name="readiness"
        )
        leading_task = asyncio.create_task(
            self._lead(api_client, router, syncer), name="leader-election-and-workers"
        )
        # Pods, Services and EndpointSlices are watched without Kopf (see controller.list_watch);
        # Endpoints too, once needed (_watch_endpoints).
        handlers = {
            "pods": router.on_pod,
            "services": router.on_service,
            "endpointslices": router.on_slice,
        }
        # Our slices are listed once the pods are: a cached slice then holds its pods' own
        # strings (name, uid, address) from their records instead of copies (CachedSlice); the
        # other way round it would hold copies until the next write of each slice.
        pods_listed = asyncio.Event()
        unlisted: set[str | None] = set(namespaces) or {None}

        def pods_scope_listed(scope: str | None) -> None:
            unlisted.discard(scope)
            if not unlisted:
                pods_listed.set()

        async def watch(kind: str) -> None:
            on_listed = pods_scope_listed if kind == "pods" else None
            if kind == "endpointslices":
                await pods_listed.wait()
            await self._watcher(api_client, router, kind, handlers[kind], on_listed).run()

        watch_tasks = [
            asyncio.create_task(watch(kind), name=f"{kind}-watch") for kind in ALWAYS_WATCHED
        ]
        probe_task = asyncio.create_task(
            probe_resets(
                api_client,
                self._fence_of_round(),
                list(self.settings.namespaces),
                self._api_server_reset,
            ),
            name="reset-probe",
        )
        summary_task = asyncio.create_task(
            run_summaries(self.metrics, self.indexes.counts), name="activity-summary"
        )
        stop_task = asyncio.create_task(self._round_over.wait())
        tasks = {
            kopf_task,
            *watch_tasks,
            readiness_task,
            leading_task,
            probe_task,
            summary_task,
            stop_task,
        }
        failure: BaseException | None = None
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {stop_task}:
                if not task.cancelled() and task.exception() is not None:
                    failure = task.exception()
                    log.error("operator task %s failed", task.get_name(), exc_info=failure)
        finally:
            if self._reset_reason is None:
                log.info("stopping the operator")
                self._stop.set()
            self._round_over.set()
            # Workers and the Lease first (they finish in-flight syncs and release the Lease),
            # then the watches.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(leading_task), SHUTDOWN_TIMEOUT)
            for task in (
                leading_task,
                readiness_task,
                probe_task,
                summary_task,
                stop_task,
                *watch_tasks,
                *self._background,
            ):
                task.cancel()
            router.cancel_relists()
            await asyncio.gather(*self._background, return_exceptions=True)
            if not self._kopf_stop.done():
                self._kopf_stop.set_result(None)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(kopf_task), SHUTDOWN_TIMEOUT)
            kopf_task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if failure is not None:
            # Exit non-zero so that the Pod is restarted rather than left half-working.
            raise OperatorFailed(str(failure)) from failure

    # -- readiness --------------------------------------------------------------------------

    async def _watch_readiness(self, api_client: ApiClient, router: EventRouter) -> None:
        loop = asyncio.get_running_loop()
        pending = {"services", "pods", "nodes", "endpointslices"}
        endpoints = self.indexes.endpoints
        if self.settings.write_endpoints or await self._endpoints_of_ours_left(api_client):
            # Needed from the start: ready once their first listing is in too.
            endpoints.want()
        expected: dict[str, int] = {}
        counted_at = -float("inf")
        while pending or (endpoints.wanted and not endpoints.synced):
            if loop.time() - counted_at >= READINESS_RECOUNT_INTERVAL:
                # Objects deleted while Kopf lists would leave an old count out of reach.
                counted_at = loop.time()
                for kind in sorted(pending):
                    try:
                        expected[kind] = await count_objects(
                            api_client, kind, list(self.settings.namespaces)
                        )
                    except Exception as exc:
                        log.info("readiness: cannot count %s yet: %s", kind, exc)
            counts = self.indexes.counts()
            pending = {k for k in pending if k not in expected or counts[k] < expected[k]}
            if pending or (endpoints.wanted and not endpoints.synced):
                await asyncio.sleep(READINESS_POLL_INTERVAL)
        router.refresh_topology()
        router.topology_live = True
        router.track_relists(api_client)
        # Nodes are Kopf's: a re-listing that delivers nothing (no node left) shows no event.
        self._spawn(router.relistings["nodes"].keep_counting())
        log.info("initial listings are in: %s", self.indexes.counts())
        self.indexes.slices.share_pod_strings()
        if self.settle_heap:
            heap.settle()  # the caches are long-lived: out of the cyclic collector's walks
        self._ready.set()
        if self.health is not None:
            self.health.set_ready(True)
        await self._round_over.wait()

    async def _endpoints_of_ours_left(self, api_client: ApiClient) -> bool:
        """Whether Endpoints objects of ours exist (one ``limit=1`` list selecting our label
        per watched scope; retried until answered).

        Upstream's Endpoints controller checks for leftover Endpoints at start. Here the
        Endpoints watch is only started when something needs it, so this decides whether an
        earlier run's Endpoints need it: those of a Service deleted, or no longer asking, while
        no operator ran, to be deleted. It asks the server for ours only, so a cluster whose
        Endpoints are all kube-controller-manager's answers with an empty list.
        """
        core = CoreV1Api(api_client)
        selector = f"{LABEL_MANAGED_BY}={self.settings.managed_by}"
        scopes: list[str | None] = list(self.settings.namespaces) or [None]
        while True:
            try:
                for scope in scopes:
                    if scope is None:
                        call = core.list_endpoints_for_all_namespaces(
                            label_selector=selector, limit=1, _preload_content=False
                        )
                    else:
                        call = core.list_namespaced_endpoints(
                            scope, label_selector=selector, limit=1, _preload_content=False
                        )
                    if (await raise_for_status(await call)).get("items"):
                        log.info("Endpoints of ours exist: watching Endpoints")
                        return True
                return False
            except Exception as exc:
                log.info("readiness: cannot look for Endpoints of ours yet: %s", exc)
                await asyncio.sleep(READINESS_RECOUNT_INTERVAL)

    async def _watch_endpoints(
        self, api_client: ApiClient, router: EventRouter, index: EndpointsIndex
    ) -> None:
        """List and watch core/v1 Endpoints into ``index`` until the round ends (started by
        ``index.want()``, see :mod:`.cache.on_demand`); the end of the first listing queues the
        Services that waited for it."""
        namespaces = list(self.settings.namespaces)

        def listed(scope: str | None) -> None:
            waiting = index.scope_listed(scope, len(namespaces) or 1)
            if waiting is not None:
                log.info("Endpoints listed (%d); %d Service(s) queued", len(index), len(waiting))
                router.requeue(waiting)

        log.info("watching Endpoints (a Service or --write-endpoints needs them)")
        await self._watcher(
            api_client, router, "endpoints", router.on_endpoints, on_listed=listed
        ).run()

    def _watcher(
        self,
        api_client: ApiClient,
        router: EventRouter,
        kind: str,
        handler: Callable[[str | None, Mapping[str, Any]], None],
        on_listed: Callable[[str | None], None] | None = None,
    ) -> ListWatcher:
        """A list-watch of ``kind`` in the watched scope, into ``handler``."""
        return ListWatcher(
            api_client,
            kind,
            handler,
            namespaces=list(self.settings.namespaces),
            server_timeout=WATCH_SERVER_TIMEOUT,
            client_timeout=WATCH_CLIENT_TIMEOUT,
            watermark=router.watermark,
            on_reset=self._api_server_reset,
            on_suspect=self._fence_of_round().suspect,
            on_listed=on_listed,
            on_listing=lambda scope: router.listing_began(kind, scope),
        )

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _fence_of_round(self) -> WriteFence:
        assert self._fence is not None, "a round is running"
        return self._fence

    # -- leadership and workers -------------------------------------------------------------

    async def _lead(
        self, api_client: ApiClient, router: EventRouter, syncer: ServiceSyncer
    ) -> None:
        await self._ready.wait()
        if not self.settings.leader_election:
            self.metrics.set_leader(True)
            await self._work(router, syncer, self._round_over)
            return
        elector = LeaderElector(
            api_client,
            name=self.settings.lease_name,
            namespace=self.settings.resolved_lease_namespace(),
            identity=self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            metrics=self.metrics,
            # After a reset the Lease is not released: the restored state never knew this term.
            may_release=lambda: self._reset_reason is None,
            rivals=RivalLeases(
                api_client,
                managed_by=self.settings.managed_by,
                namespace=self.settings.resolved_lease_namespace(),
                name=self.settings.lease_name,
            ),
        )

        async def work(term_over: asyncio.Event) -> None:
            await self._work(router, syncer, term_over)

        # One term per run(); after losing the Lease, stand by and compete again.
        while not self._round_over.is_set():
            await elector.run(work, stop=self._round_over)

    async def _work(self, router: EventRouter, syncer: ServiceSyncer, lost: asyncio.Event) -> None:
        """Run the queue workers until ``lost`` is set (leadership lost or shutting down)."""
        queue = ServiceQueue(
            name="endpoint_slice",
            workers=self.settings.workers,
            qps=self.settings.qps,
            burst=self.settings.burst,
            # Waiting for our own writes' watch echo is not a failure (see queue.py), nor a
            # write refused after a reset (the queue is being dropped).
            wait_errors=(StaleInformerCache, StateReset),
            # Anything else is a bug: logged with its traceback (see queue.py).
            expected_errors=(
                SyncError,
                MirroringSyncError,
                EndpointsSyncError,
                MulticlusterSyncError,
                ApiError,
                aiohttp.ClientError,
                OSError,
                TimeoutError,
            ),
            metrics=self.metrics.workqueue,
        )
        self.queue = queue
        syncer.start_term()
        owners = self.owners if self.owners is not None else OwnerSyncs(syncer.sync)
        multicluster = self._multicluster(syncer)
        owners.start_term()
        router.tracker = syncer.writes.tracker
        router.queue = queue
        for key in sorted({*router.all_keys(), *owners.all_keys()}):
            queue.add(key)
        leftovers = asyncio.Event()
        leftovers.set()  # the caches are in: look once, then whenever one is seen
        router.on_leftover = leftovers.set
        self._leading.set()
        log.info("running %d workers", self.settings.workers)
        runner = asyncio.create_task(queue.run(owners.sync), name="endpoint_slice-workers")
        waiter = asyncio.create_task(lost.wait())
        releaser = asyncio.create_task(router.release_when_quiet(), name="release-held")
        sweeper = asyncio.create_task(_sweep_unlabelled(syncer, leftovers), name="leftovers")
        try:
            await asyncio.wait({runner, waiter, *multicluster}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            router.queue = None
            router.on_leftover = None
            self._leading.clear()
            waiter.cancel()
            releaser.cancel()
            sweeper.cancel()
            for task in multicluster:
                task.cancel()
            # After a reset, in-flight syncs work from caches the server no longer backs:
            # cancelled at once (their writes are refused by the closed fence anyway).
            grace = 0.0 if self._reset_reason is not None else SHUTDOWN_TIMEOUT
            try:
                await queue.stop(timeout=grace)
            finally:
                # Even when this is cancelled: the workers end before the Lease can be taken
                # again by the next round or term.
                runner.cancel()
                await asyncio.gather(
                    runner, waiter, releaser, sweeper, *multicluster, return_exceptions=True
                )
            log.info("workers stopped")

    def _multicluster(self, syncer: ServiceSyncer) -> set[asyncio.Task[None]]:
        """The multi-cluster controller's leading part for this term (or nothing)."""
        if self.multicluster is None:
            return set()
        self.multicluster.syncer.tracker = syncer.writes.tracker  # this term's (see start_term)
        return {asyncio.create_task(self.multicluster.lead(), name="multicluster")}

    # -- health -----------------------------------------------------------------------------

    async def _start_health(self) -> None:
        if not self.serve_health:
            return
        self.health = HealthServer(
            self.metrics, host=self.settings.metrics_host, port=self.settings.metrics_port
        )
        await self.health.start()

    async def _stop_health(self) -> None:
        if self.health is not None:
            await self.health.stop()


LEFTOVER_RETRY = (1.0, 60.0)
"""Seconds before retrying a failed deletion of leftover slices: first, and at most (doubling)."""


async def _sweep_unlabelled(syncer: ServiceSyncer, wanted: asyncio.Event) -> None:
    """While leading: delete the slices of ours without a service-name label whenever one may
    be there (``wanted``); a failed deletion is retried with backoff (until cancelled)."""
    delay = LEFTOVER_RETRY[0]
    while True:
        await wanted.wait()
        wanted.clear()
        try:
            await syncer.delete_unlabelled()
        except Exception as exc:
            log.warning(
                "could not delete leftover EndpointSlices (retrying in %.0f s): %s", delay, exc
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, LEFTOVER_RETRY[1])
            wanted.set()
        else:
            delay = LEFTOVER_RETRY[0]
