"""The slice controller's metrics, exported exactly as kube-controller-manager exports them:
:class:`OperatorMetrics` holds the nine ``endpoint_slice_controller_*`` metrics of
``k8s.io/endpointslice/metrics`` (upstream's names, types, labels, buckets and help strings) and
the operator's own additions (``endpoint_slice_controller_sync_duration_seconds``,
``endpointslice_operator_queue_dropped_total``, ``endpointslice_operator_leader``,
``endpointslice_operator_leader_deferred``,
``endpointslice_operator_state_resets_total``,
``endpointslice_operator_leftover_slices_deleted_total``,
``endpointslice_operator_write_budget_wait_seconds_total``), beside the workqueue, mirroring and
multi-cluster families, each instance on a :class:`~prometheus_client.CollectorRegistry` of its
own (never the process-global one, so that several operators, or tests, share a process)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from prometheus_client import CollectorRegistry, Gauge, Histogram

from endpointslice_operator.metrics.api_serving import ApiServingMetrics
from endpointslice_operator.metrics.collectors import (
    DEFAULT_BUCKETS,
    ENDPOINTS_PER_SYNC_BUCKETS,
    SUBSYSTEM,
    SYNC_DURATION_BUCKETS,
    ExactCounter,
    alpha,
    beta,
)
from endpointslice_operator.metrics.exposition import render_registry
from endpointslice_operator.metrics.mirroring import MirroringMetrics
from endpointslice_operator.metrics.multicluster import MulticlusterMetrics
from endpointslice_operator.metrics.workqueue import WorkqueueMetrics

__all__ = ["OperatorMetrics", "SyncResult"]


class SyncResult(StrEnum):
    """Label values of ``endpoint_slice_controller_syncs{result}`` (upstream's ``trackSync``)."""

    SUCCESS = "success"
    STALE = "stale"
    ERROR = "error"


class OperatorMetrics:
    """All metrics the operator exports, in a registry of their own.

    Attribute names follow upstream's Go variables; the convenience methods below are what the
    controller calls.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.mirroring = MirroringMetrics(r)
        """``endpoint_slice_mirroring_controller_*``."""
        self.endpoints_added_per_sync = Histogram(
            f"{SUBSYSTEM}_endpoints_added_per_sync",
            beta("Number of endpoints added on each Service sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_removed_per_sync = Histogram(
            f"{SUBSYSTEM}_endpoints_removed_per_sync",
            beta("Number of endpoints removed on each Service sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_desired = Gauge(
            f"{SUBSYSTEM}_endpoints_desired", beta("Number of endpoints desired"), registry=r
        )
        self.num_endpoint_slices = Gauge(
            f"{SUBSYSTEM}_num_endpoint_slices", beta("Number of EndpointSlices"), registry=r
        )
        self.desired_endpoint_slices = Gauge(
            f"{SUBSYSTEM}_desired_endpoint_slices",
            beta("Number of EndpointSlices that would exist with perfect endpoint allocation"),
            registry=r,
        )
        self.changes = ExactCounter(
            f"{SUBSYSTEM}_changes",
            alpha("Number of EndpointSlice changes"),
            ["operation"],
            registry=r,
        )
        self.endpointslices_changed_per_sync = Histogram(
            f"{SUBSYSTEM}_endpointslices_changed_per_sync",
            alpha("Number of EndpointSlices changed on each Service sync"),
            ["topology", "traffic_distribution"],
            buckets=DEFAULT_BUCKETS,
            registry=r,
        )
        self.syncs = ExactCounter(
            f"{SUBSYSTEM}_syncs",
            alpha("Number of EndpointSlice syncs"),
            ["result"],
            registry=r,
        )
        self.services_count_by_traffic_distribution = Gauge(
            f"{SUBSYSTEM}_services_count_by_traffic_distribution",
            beta("Number of Services using some specific trafficDistribution"),
            ["traffic_distribution"],
            registry=r,
        )
        # Not in k8s.io/endpointslice: the operator's own sync timing, with the same result
        # label as ``syncs`` and the buckets upstream's mirroring controller uses for its
        # endpoints_sync_duration.
        self.sync_duration = Histogram(
            f"{SUBSYSTEM}_sync_duration_seconds",
            alpha("Duration in seconds of each Service sync, by result"),
            ["result"],
            buckets=SYNC_DURATION_BUCKETS,
            registry=r,
        )
        self.leader = Gauge(
            "endpointslice_operator_leader",
            "1 while this replica holds the leader-election Lease (or runs without leader "
            "election), else 0",
            registry=r,
        )
        self.leader_deferred = Gauge(
            "endpointslice_operator_leader_deferred",
            "1 while this replica stands by because another operator with the same "
            "--managed-by leads through a Lease in another namespace (the log names it), else 0",
            registry=r,
        )
        self.state_resets = ExactCounter(
            "endpointslice_operator_state_resets_total",
            "Times the API server's state was found reset (its resourceVersion went back below "
            "one already seen) and the operator dropped its indexes and listed everything again",
            registry=r,
        )
        self.budget_wait = ExactCounter(
            "endpointslice_operator_write_budget_wait_seconds_total",
            "Seconds writes waited for the client-side write budget (--kube-api-qps, "
            "--kube-api-burst)",
            registry=r,
        )
        self.leftovers_deleted = ExactCounter(
            "endpointslice_operator_leftover_slices_deleted_total",
            "EndpointSlices labelled managed-by this operator that no Service can claim (their "
            "Service does not exist, or they have no kubernetes.io/service-name label), deleted",
            ["reason"],
            registry=r,
        )
        self.pods_left_out = Gauge(
            "endpointslice_operator_pods_left_out",
            "Selected pods left out of the EndpointSlices because they have no address on the "
            "Service's secondary network (source: network or device-network), over all Services",
            ["source"],
            registry=r,
        )
        self.workqueue = WorkqueueMetrics(r)
        self.multicluster = MulticlusterMetrics(r)
        """``endpointslice_operator_mcs_*`` (``--multicluster``)."""
        self.api_serving = ApiServingMetrics(r)
        """``endpointslice_operator_api_served``: the custom resources watched, served or not."""

    # -- convenience API used by the controller ------------------------------------------------

    def record_budget_wait(self, seconds: float) -> None:
        self.budget_wait.inc(seconds)

    def set_pods_left_out(self, source: str, count: int) -> None:
        self.pods_left_out.labels(source).set(count)

    def record_leftover_deleted(self, reason: str) -> None:
        """A leftover slice of ours deleted; ``reason``: ``service_missing`` or
        ``no_service_name``."""
        self.leftovers_deleted.labels(reason).inc()

    def record_state_reset(self) -> None:
        self.state_resets.inc()

    def record_change(self, operation: str, count: int = 1) -> None:
        """``changes{operation}`` += count, for successful create / update / delete calls."""
        if count:
            self.changes.labels(operation).inc(count)

    def observe_endpoints_per_sync(self, added: int, removed: int) -> None:
        """One observation each, per reconciled address type (upstream's reconcileByAddressType)."""
        self.endpoints_added_per_sync.observe(added)
        self.endpoints_removed_per_sync.observe(removed)

    def observe_slices_changed(
        self, changed: int, *, topology: str, traffic_distribution: str
    ) -> None:
        """``endpointslices_changed_per_sync``: creates + updates + deletes of one finalize."""
        self.endpointslices_changed_per_sync.labels(topology, traffic_distribution).observe(changed)

    def record_sync(self, result: str, duration: float | None = None) -> None:
        """``syncs{result}`` += 1 (upstream's trackSync) and, if given, the sync's duration."""
        label = SyncResult(result).value
        self.syncs.labels(label).inc()
        if duration is not None:
            self.sync_duration.labels(label).observe(duration)

    def set_cache_gauges(
        self,
        desired_endpoints: int,
        actual_slices: int,
        desired_slices: int,
        by_traffic_distribution: Mapping[str, int],
    ) -> None:
        """Publish the metrics cache's totals (upstream's ``Cache.updateMetrics``).

        ``services_count_by_traffic_distribution`` is reset and re-filled, so values that are no
        longer in ``by_traffic_distribution`` disappear; pass a 0 to keep exporting one.
        """
        self.endpoints_desired.set(desired_endpoints)
        self.num_endpoint_slices.set(actual_slices)
        self.desired_endpoint_slices.set(desired_slices)
        self.services_count_by_traffic_distribution.clear()
        for value, count in sorted(by_traffic_distribution.items()):
            self.services_count_by_traffic_distribution.labels(value).set(count)

    def set_leader(self, is_leader: bool) -> None:
        self.leader.set(1 if is_leader else 0)

    def set_leader_deferred(self, deferred: bool) -> None:
        self.leader_deferred.set(1 if deferred else 0)

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format (:data:`CONTENT_TYPE`)."""
        return render_registry(self.registry)

    def sample_value(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """The current value of one exported sample (by exposed sample name), or None."""
        wanted = dict(labels or {})
        for family in self.registry.collect():
            for sample in family.samples:
                if sample.name == name and sample.labels == wanted:
                    return float(sample.value)
        return None
