"""One round's parts, built top-down in one function with nothing assigned afterwards.

A round lives from fresh listings until the operator stops or the API server is reset
(:mod:`.api.reset`). :func:`build_round` makes, in the order they need each other: the
resourceVersion watermark and the write fence, the write budget, the write pipeline
(:mod:`.sync.apply`), the mirroring controller, the event router, the Service syncer (with its
Endpoints syncer), the EndpointSelector and Multi-Cluster Services owner kinds, and the queue's
handler routing each key to its kind's syncer. A new owner kind is one more line here, beside
its folder and its :class:`~.cache.owner_kinds.OwnerKind`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.api.reset import Watermark, WriteFence
from endpointslice_operator.controller.api.writer import EndpointsWriter, SliceWriter
from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.cache.owner_kinds import (
    ENDPOINT_SELECTOR,
    SERVICE_IMPORT,
    OwnerSyncer,
    OwnerSyncs,
)
from endpointslice_operator.controller.endpoint_selector.index import EndpointSelectorIndex
from endpointslice_operator.controller.endpoint_selector.relist import (
    endpoint_selector_relisting,
)
from endpointslice_operator.controller.endpoint_selector.status import (
    keep_writing_counts,
    status_writer,
)
from endpointslice_operator.controller.endpoint_selector.sync import EndpointSelectorSyncer
from endpointslice_operator.controller.endpoint_selector.watch import serve_endpoint_selectors
from endpointslice_operator.controller.mcs.controller import MulticlusterController
from endpointslice_operator.controller.sync.apply import SliceWrites
from endpointslice_operator.controller.sync.endpoints import EndpointsSyncer
from endpointslice_operator.controller.sync.events import EVENT_SOURCE_COMPONENT, EventRecorder
from endpointslice_operator.controller.sync.mirroring import MirroringSyncer
from endpointslice_operator.controller.sync.networks import NetworkAnnotations
from endpointslice_operator.controller.sync.service import ServiceSyncer
from endpointslice_operator.controller.watch.claim_watch import watch_claims
from endpointslice_operator.controller.watch.kopf_wiring import (
    WATCH_CLIENT_TIMEOUT,
    WATCH_SERVER_TIMEOUT,
)
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.controller.work.budget import WriteBudget
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.settings import Settings

__all__ = ["Round", "RoundNeeds", "build_round"]

ENDPOINTS_EVENT_COMPONENT = "endpoint-controller"
MIRRORING_EVENT_COMPONENT = "endpoint-slice-mirroring-controller"
MULTICLUSTER_EVENT_COMPONENT = "multicluster-controller"
"""Event source components of upstream's Endpoints and mirroring controllers."""

Spawn = Callable[[Coroutine[Any, Any, None]], None]


@dataclass(frozen=True, slots=True)
class RoundNeeds:
    """What the operator lends each round: its settings, state kept between rounds' builds,
    and its hooks (spawning a task of the round, ending the round, stopping)."""

    settings: Settings
    config: ReconcilerConfig
    indexes: Indexes
    topology: TopologyCache | None
    metrics: OperatorMetrics
    networks: NetworkAnnotations
    identity: str
    fresh: bool
    """The operator's write policy (budget before planning, bursts coalesced) or upstream's."""
    spawn: Spawn
    on_reset: Callable[[str], None]
    on_signal: Callable[[], None]
    watch_endpoints: Callable[[EventRouter], Coroutine[Any, Any, None]]


@dataclass(frozen=True, slots=True)
class Round:
    fence: WriteFence
    syncer: ServiceSyncer
    router: EventRouter
    owners: OwnerSyncs
    """The queue's handler: Service keys to ``syncer``, other owner kinds to theirs."""
    endpoint_selectors: EndpointSelectorIndex | None
    multicluster: MulticlusterController | None


def build_round(needs: RoundNeeds, api_client: ApiClient, configuration: Configuration) -> Round:
    """Every part of one round; its watches and writers of other kinds are spawned."""
    settings, indexes = needs.settings, needs.indexes
    watermark = Watermark()
    fence = WriteFence(watermark, on_reset=needs.on_reset)
    budget = WriteBudget(settings.kube_api_qps, settings.kube_api_burst, metrics=needs.metrics)

    def recorder(component: str = EVENT_SOURCE_COMPONENT) -> EventRecorder:
        return EventRecorder(
            api_client,
            component=component,
            instance=needs.identity,
            budget=budget,
            fence=fence,
        )

    writes = SliceWrites(
        writer=SliceWriter(api_client, fence=fence),
        recorder=recorder(),
        metrics=needs.metrics,
        max_endpoints_per_slice=needs.config.max_endpoints_per_slice,
        budget=budget,
        plan_after_budget=needs.fresh,
    )
    mirroring = MirroringSyncer(
        indexes=indexes,
        api_client=api_client,
        writes=writes,
        recorder=recorder(MIRRORING_EVENT_COMPONENT),
        config=needs.config,
        source_annotation=settings.source_annotation,
        max_endpoints_per_subset=settings.max_endpoints_per_subset,
        metrics=needs.metrics.mirroring,
        network_annotations=needs.networks.names,
    )
    router = EventRouter(
        indexes=indexes,
        tracker=writes.tracker,
        topology=needs.topology,
        batch_period=settings.batch_period,
        coalesce=needs.fresh,
        pressed=budget.pressed,
        backlog=budget.time_to_write,
        watermark=watermark,
        mirrors=mirroring.mirrors,
    )
    indexes.endpoints.keep = lambda namespace, name: mirroring.mirrors(f"{namespace}/{name}")
    indexes.endpoints.start = lambda: needs.spawn(needs.watch_endpoints(router))
    syncer = ServiceSyncer(
        indexes=indexes,
        writes=writes,
        recorder=writes.recorder,
        metrics=needs.metrics,
        config=needs.config,
        topology=needs.topology,
        networks=needs.networks,
        want_claims=lambda: needs.spawn(
            watch_claims(
                api_client,
                indexes,
                router,
                needs.networks.device_network,
                namespaces=list(settings.namespaces),
                server_timeout=WATCH_SERVER_TIMEOUT,
                client_timeout=WATCH_CLIENT_TIMEOUT,
                watermark=watermark,
                on_reset=needs.on_reset,
                on_suspect=fence.suspect,
            )
        ),
        endpoints=EndpointsSyncer(
            indexes=indexes,
            index=indexes.endpoints,
            writer=EndpointsWriter(api_client, fence=fence),
            # Upstream's Endpoints controller records as "endpoint-controller".
            recorder=recorder(ENDPOINTS_EVENT_COMPONENT),
            managed_by=settings.managed_by,
            annotation=settings.endpoints_annotation,
            write_all=settings.write_endpoints,
            budget=budget,
            source_annotation=settings.source_annotation,
        ),
        mirroring=mirroring,
    )
    others: dict[str, OwnerSyncer] = {}
    selectors = None
    if settings.endpoint_selectors:
        selectors = EndpointSelectorIndex(indexes.services)
        selector_syncer = EndpointSelectorSyncer(
            selectors, syncer, kep6116_labels=settings.kep6116_labels
        )
        others[ENDPOINT_SELECTOR.kind] = selector_syncer
        needs.spawn(
            serve_endpoint_selectors(
                api_client,
                configuration,
                selectors,
                router,
                lambda: [*selector_syncer.all_keys(), *sorted(selector_syncer.waiting)],
                # Objects deleted while Kopf's watch had expired (no DELETED event).
                relisting=endpoint_selector_relisting(api_client, selectors, router),
                namespaces=list(settings.namespaces),
                on_signal=needs.on_signal,
                api_serving=needs.metrics.api_serving,
            )
        )
        # Their endpoint counts, into their status at most once per interval (the leader's).
        needs.spawn(
            keep_writing_counts(
                status_writer(api_client, fence), selectors, lambda: router.queue is not None
            )
        )
    multicluster = None
    if settings.multicluster:
        # Its watches run on every replica (a new leader starts with warm caches); its
        # ImportSyncer is the syncer of ServiceImport keys; the operator runs its leading part
        # (peer probes and Leases, queueing) for each term (see controller/mcs/).
        multicluster = MulticlusterController(
            api_client,
            requeue=router.requeue,
            configuration=configuration,
            on_signal=needs.on_signal,
            peers=settings.mcs_peers,
            config=needs.config,
            lease_namespace=settings.resolved_lease_namespace(),
            lease_prefix=settings.lease_name,
            lease_label=f"{settings.annotation_prefix}/mcs-peer",
            peer_timeout=settings.mcs_peer_timeout,
            namespaces=settings.namespaces,
            metrics=needs.metrics.multicluster,
            api_serving=needs.metrics.api_serving,
            writer=writes.writer,
            budget=budget,
            tracker=writes.tracker,
            recorder=recorder(MULTICLUSTER_EVENT_COMPONENT),
        )
        others[SERVICE_IMPORT.kind] = multicluster.syncer
        needs.spawn(multicluster.watch())
    return Round(
        fence=fence,
        syncer=syncer,
        router=router,
        owners=OwnerSyncs(syncer.sync, others),
        endpoint_selectors=selectors,
        multicluster=multicluster,
    )
