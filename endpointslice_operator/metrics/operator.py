"""Prometheus metrics of the operator, exported exactly as kube-controller-manager exports them.

Three groups live in one :class:`OperatorMetrics` object, each instance with its own
:class:`~prometheus_client.CollectorRegistry` (never the process-global one, so that several
operators, or several tests, can coexist in one process):

* the nine ``endpoint_slice_controller_*`` metrics of ``k8s.io/endpointslice/metrics`` with
  upstream's names, types, labels, buckets and help strings (including the ``[BETA] `` /
  ``[ALPHA] `` prefix that ``k8s.io/component-base/metrics`` adds to the help text);
* the client-go workqueue metrics (``workqueue_*`` with a ``name`` label), see
  :class:`WorkqueueMetrics`;
* the operator's own additions: ``endpoint_slice_controller_sync_duration_seconds``,
  ``endpointslice_operator_queue_dropped_total``, ``endpointslice_operator_leader``,
  ``endpointslice_operator_state_resets_total``,
  ``endpointslice_operator_leftover_slices_deleted_total`` and
  ``endpointslice_operator_write_budget_wait_seconds_total``.

Two details of prometheus_client would make the exposition differ from upstream's Go client, so
this module renders the text format itself (:func:`render_registry`):

* prometheus_client always names a counter's sample ``<name>_total``. Upstream's
  ``endpoint_slice_controller_changes`` and ``endpoint_slice_controller_syncs`` have no such
  suffix, so counters here are :class:`ExactCounter` collectors exported under exactly the name
  given;
* prometheus_client adds ``*_created`` series to counters and histograms; the Go client has none,
  so they are left out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from enum import StrEnum
from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_BUCKETS",
    "ENDPOINTS_PER_SYNC_BUCKETS",
    "SUBSYSTEM",
    "SYNC_DURATION_BUCKETS",
    "WORKQUEUE_DURATION_BUCKETS",
    "ExactCounter",
    "InFlightProbe",
    "OperatorMetrics",
    "SyncResult",
    "WorkqueueMetrics",
    "exponential_buckets",
    "render_registry",
]

#: Content type of the Prometheus text exposition format produced by :func:`render_registry`.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Upstream's metrics subsystem.
SUBSYSTEM = "endpoint_slice_controller"


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``prometheus.ExponentialBuckets``: ``count`` upper bounds ``start * factor**i``."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    return tuple(start * factor**i for i in range(count))


#: ``ExponentialBuckets(2, 2, 15)``: 2, 4, ..., 32768.
ENDPOINTS_PER_SYNC_BUCKETS = exponential_buckets(2, 2, 15)
#: Go's ``prometheus.DefBuckets`` (also prometheus_client's default, without +Inf).
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: ``ExponentialBuckets(0.001, 2, 15)``, as upstream's mirroring controller uses for its sync
#: duration: 1 ms .. 16.384 s.
SYNC_DURATION_BUCKETS = exponential_buckets(0.001, 2, 15)
#: client-go's workqueue latency buckets, ``ExponentialBuckets(10e-9, 10, 10)``: 10 ns .. 1 s.
WORKQUEUE_DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)


def _beta(text: str) -> str:
    return f"[BETA] {text}"


def _alpha(text: str) -> str:
    return f"[ALPHA] {text}"


class _CounterChild:
    """One labelled series of an :class:`ExactCounter`."""

    __slots__ = ("_key", "_parent")

    def __init__(self, parent: ExactCounter, key: tuple[str, ...]) -> None:
        self._parent = parent
        self._key = key

    def inc(self, amount: float = 1.0) -> None:
        self._parent._inc(self._key, amount)

    def get(self) -> float:
        return self._parent._values.get(self._key, 0.0)


class ExactCounter(Collector):
    """A monotonic counter exported under exactly ``name``: no ``_total`` added, no ``_created``.

    The interface follows prometheus_client's (``labels(...).inc()``, ``inc()`` when unlabelled)
    so call sites read the same. A series appears in the exposition once it has been touched
    (like a Go ``CounterVec``); an unlabelled counter is always present.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        if not self.labelnames:
            self._values[()] = 0.0
        registry.register(self)

    def labels(self, *values: str, **kwvalues: str) -> _CounterChild:
        if values and kwvalues:
            raise ValueError("pass label values either positionally or by name, not both")
        if kwvalues:
            if set(kwvalues) != set(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}")
            values = tuple(kwvalues[name] for name in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected labels {self.labelnames}")
        key = tuple(str(v) for v in values)
        self._values.setdefault(key, 0.0)
        return _CounterChild(self, key)

    def inc(self, amount: float = 1.0) -> None:
        if self.labelnames:
            raise ValueError(f"{self.name} is labelled: use labels(...).inc()")
        self._inc((), amount)

    def get(self, *values: str, **kwvalues: str) -> float:
        """Current value of one series (0 when never touched)."""
        if not values and not kwvalues:
            return self._values.get((), 0.0)
        return self.labels(*values, **kwvalues).get()

    def _inc(self, key: tuple[str, ...], amount: float) -> None:
        if amount < 0:
            raise ValueError("counters can only increase")
        self._values[key] = self._values.get(key, 0.0) + amount

    def describe(self) -> Iterable[Metric]:
        return [Metric(self.name, self.documentation, "counter")]

    def collect(self) -> Iterable[Metric]:
        family = Metric(self.name, self.documentation, "counter")
        for key, value in sorted(self._values.items()):
            family.add_sample(self.name, dict(zip(self.labelnames, key, strict=True)), value)
        return [family]


class InFlightProbe(Protocol):
    """What :class:`WorkqueueMetrics` asks a queue at scrape time."""

    def unfinished_work_seconds(self) -> float:
        """Sum over keys being processed of how long each has been processed so far."""
        ...

    def longest_running_processor_seconds(self) -> float:
        """How long the longest-running key being processed has been processed so far."""
        ...


class _InFlightCollector(Collector):
    """``workqueue_unfinished_work_seconds`` and ``workqueue_longest_running_processor_seconds``.

    client-go refreshes these gauges every 500 ms from a goroutine; here they are computed when
    scraped, from the registered queues, which gives the same values without a timer.
    """

    UNFINISHED = "workqueue_unfinished_work_seconds"
    LONGEST = "workqueue_longest_running_processor_seconds"
    UNFINISHED_HELP = _beta(
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of "
        "stuck threads by observing the rate at which this increases."
    )
    LONGEST_HELP = _beta(
        "How many seconds has the longest running processor for workqueue been running."
    )

    def __init__(self) -> None:
        self.probes: dict[str, InFlightProbe] = {}

    def describe(self) -> Iterable[Metric]:
        return [
            Metric(self.UNFINISHED, self.UNFINISHED_HELP, "gauge"),
            Metric(self.LONGEST, self.LONGEST_HELP, "gauge"),
        ]

    def collect(self) -> Iterable[Metric]:
        unfinished = Metric(self.UNFINISHED, self.UNFINISHED_HELP, "gauge")
        longest = Metric(self.LONGEST, self.LONGEST_HELP, "gauge")
        for name, probe in sorted(self.probes.items()):
            unfinished.add_sample(self.UNFINISHED, {"name": name}, probe.unfinished_work_seconds())
            longest.add_sample(
                self.LONGEST, {"name": name}, probe.longest_running_processor_seconds()
            )
        return [unfinished, longest]


class WorkqueueMetrics:
    """client-go's workqueue metrics (as registered by ``component-base``), label ``name``.

    The queue reports through the ``observe_*`` methods; the two in-flight gauges are read from
    the queue itself at scrape time (:meth:`register_queue`). Plus
    ``endpointslice_operator_queue_dropped_total``: keys dropped after the retry budget.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.depth = Gauge(
            "workqueue_depth",
            _beta("Current depth of workqueue"),
            ["name"],
            registry=registry,
        )
        self.adds = ExactCounter(
            "workqueue_adds_total",
            _beta("Total number of adds handled by workqueue"),
            ["name"],
            registry=registry,
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            _beta("How long in seconds an item stays in workqueue before being requested."),
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            _beta("How long in seconds processing an item from workqueue takes."),
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self.retries = ExactCounter(
            "workqueue_retries_total",
            _beta("Total number of retries handled by workqueue"),
            ["name"],
            registry=registry,
        )
        self.dropped = ExactCounter(
            "endpointslice_operator_queue_dropped_total",
            "Keys dropped from the work queue after exhausting their retry budget",
            ["name"],
            registry=registry,
        )
        self._in_flight = _InFlightCollector()
        registry.register(self._in_flight)

    def register_queue(self, name: str, probe: InFlightProbe) -> None:
        """Create the queue's series and read its in-flight gauges from ``probe`` when scraped.

        A queue registered under a name already in use replaces the earlier one (a new leader
        term builds a fresh queue); the counters and histograms carry on accumulating.
        """
        self._in_flight.probes[name] = probe
        self.depth.labels(name).set(0)
        self.adds.labels(name)
        self.retries.labels(name)
        self.dropped.labels(name)

    def set_depth(self, name: str, depth: int) -> None:
        self.depth.labels(name).set(depth)

    def observe_add(self, name: str) -> None:
        self.adds.labels(name).inc()

    def observe_retry(self, name: str) -> None:
        self.retries.labels(name).inc()

    def observe_drop(self, name: str) -> None:
        self.dropped.labels(name).inc()

    def observe_queue_duration(self, name: str, seconds: float) -> None:
        self.queue_duration.labels(name).observe(seconds)

    def observe_work_duration(self, name: str, seconds: float) -> None:
        self.work_duration.labels(name).observe(seconds)


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
            _beta("Number of endpoints added on each Service sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_removed_per_sync = Histogram(
            f"{SUBSYSTEM}_endpoints_removed_per_sync",
            _beta("Number of endpoints removed on each Service sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_desired = Gauge(
            f"{SUBSYSTEM}_endpoints_desired", _beta("Number of endpoints desired"), registry=r
        )
        self.num_endpoint_slices = Gauge(
            f"{SUBSYSTEM}_num_endpoint_slices", _beta("Number of EndpointSlices"), registry=r
        )
        self.desired_endpoint_slices = Gauge(
            f"{SUBSYSTEM}_desired_endpoint_slices",
            _beta("Number of EndpointSlices that would exist with perfect endpoint allocation"),
            registry=r,
        )
        self.changes = ExactCounter(
            f"{SUBSYSTEM}_changes",
            _alpha("Number of EndpointSlice changes"),
            ["operation"],
            registry=r,
        )
        self.endpointslices_changed_per_sync = Histogram(
            f"{SUBSYSTEM}_endpointslices_changed_per_sync",
            _alpha("Number of EndpointSlices changed on each Service sync"),
            ["topology", "traffic_distribution"],
            buckets=DEFAULT_BUCKETS,
            registry=r,
        )
        self.syncs = ExactCounter(
            f"{SUBSYSTEM}_syncs",
            _alpha("Number of EndpointSlice syncs"),
            ["result"],
            registry=r,
        )
        self.services_count_by_traffic_distribution = Gauge(
            f"{SUBSYSTEM}_services_count_by_traffic_distribution",
            _beta("Number of Services using some specific trafficDistribution"),
            ["traffic_distribution"],
            registry=r,
        )
        # Not in k8s.io/endpointslice: the operator's own sync timing, with the same result
        # label as ``syncs`` and the buckets upstream's mirroring controller uses for its
        # endpoints_sync_duration.
        self.sync_duration = Histogram(
            f"{SUBSYSTEM}_sync_duration_seconds",
            _alpha("Duration in seconds of each Service sync, by result"),
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


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _format_value(value: float) -> str:
    """A sample value as Go's text encoder writes it (``strconv.FormatFloat(v, 'g', -1, 64)``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    number = Decimal(repr(float(value))).normalize()
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    point = len(digits) + exponent - 1  # decimal exponent of the leading digit
    if -4 <= point < 6:
        return format(number, "f")
    mantissa = "".join(str(d) for d in digits)
    if len(mantissa) > 1:
        mantissa = f"{mantissa[0]}.{mantissa[1:]}"
    sign = "-" if number < 0 else ""
    return f"{sign}{mantissa}e{'+' if point >= 0 else '-'}{abs(point):02d}"


def _label_value(key: str, value: str) -> str:
    # prometheus_client writes bucket bounds Python-style ("2.0"); Go writes them like values.
    if key == "le":
        return _format_value(float(value))
    return str(value)


def _sample_lines(family: Metric) -> Iterator[str]:
    created = f"{family.name}_created"
    for sample in family.samples:
        if sample.name == created:
            continue
        if sample.labels:
            labels = ",".join(
                f'{key}="{_escape_label_value(_label_value(key, val))}"'
                for key, val in sample.labels.items()
            )
            yield f"{sample.name}{{{labels}}} {_format_value(sample.value)}\n"
        else:
            yield f"{sample.name} {_format_value(sample.value)}\n"


def render_registry(registry: CollectorRegistry) -> bytes:
    """Prometheus text format (0.0.4) as the Go client writes it.

    Like Go's ``Gather``: families sorted by name, families without any series left out, names
    verbatim (counters are :class:`ExactCounter` collectors), no ``_created`` series, bucket
    bounds and values formatted as Go formats floats.
    """
    out: list[str] = []
    for family in sorted(registry.collect(), key=lambda f: f.name):
        lines = list(_sample_lines(family))
        if not lines:
            continue
        kind = "untyped" if family.type == "unknown" else family.type
        out.append(f"# HELP {family.name} {_escape_help(family.documentation)}\n")
        out.append(f"# TYPE {family.name} {kind}\n")
        out.extend(lines)
    return "".join(out).encode("utf-8")


#: Upstream's mirroring controller's metrics subsystem.
MIRRORING_SUBSYSTEM = "endpoint_slice_mirroring_controller"


class MirroringMetrics:
    """``endpoint_slice_mirroring_controller_*``: upstream's mirroring metrics (all ALPHA), for
    the Services whose slices the operator mirrors from their Endpoints object.

    The gauges are totals over those Services (upstream's metrics cache, per Endpoints object):
    desired endpoints, actual slices, and desired slices (per port group, the endpoints over
    the slice size, rounded up).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        name = MIRRORING_SUBSYSTEM
        self.endpoints_added_per_sync = Histogram(
            f"{name}_endpoints_added_per_sync",
            _alpha("Number of endpoints added on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_updated_per_sync = Histogram(
            f"{name}_endpoints_updated_per_sync",
            _alpha("Number of endpoints updated on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_removed_per_sync = Histogram(
            f"{name}_endpoints_removed_per_sync",
            _alpha("Number of endpoints removed on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.addresses_skipped_per_sync = Histogram(
            f"{name}_addresses_skipped_per_sync",
            _alpha(
                "Number of addresses skipped on each Endpoints sync due to being invalid or "
                "exceeding MaxEndpointsPerSubset"
            ),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_sync_duration = Histogram(
            f"{name}_endpoints_sync_duration",
            _alpha("Duration of syncEndpoints() in seconds"),
            buckets=SYNC_DURATION_BUCKETS,
            registry=r,
        )
        self.endpoints_desired = Gauge(
            f"{name}_endpoints_desired", _alpha("Number of endpoints desired"), registry=r
        )
        self.num_endpoint_slices = Gauge(
            f"{name}_num_endpoint_slices", _alpha("Number of EndpointSlices"), registry=r
        )
        self.desired_endpoint_slices = Gauge(
            f"{name}_desired_endpoint_slices",
            _alpha("Number of EndpointSlices that would exist with perfect endpoint allocation"),
            registry=r,
        )
        self.changes_total = ExactCounter(
            f"{name}_changes",
            _alpha("Number of EndpointSlice changes"),
            ("operation",),
            registry=r,
        )
        self._totals: dict[str, tuple[int, int, int]] = {}

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def changes(self, operation: str) -> None:
        self.changes_total.labels(operation).inc()

    def observe(self, added: int, updated: int, removed: int, skipped: int) -> None:
        self.endpoints_added_per_sync.observe(added)
        self.endpoints_updated_per_sync.observe(updated)
        self.endpoints_removed_per_sync.observe(removed)
        self.addresses_skipped_per_sync.observe(skipped)

    def observe_duration(self, seconds: float) -> None:
        self.endpoints_sync_duration.observe(seconds)

    def set_totals(self, key: str, endpoints: int, slices: int, desired_slices: int) -> None:
        """Replace one Service's numbers and publish the sums."""
        self._totals[key] = (endpoints, slices, desired_slices)
        self._publish()

    def forget(self, key: str) -> None:
        if self._totals.pop(key, None) is not None:
            self._publish()

    def _publish(self) -> None:
        self.endpoints_desired.set(sum(t[0] for t in self._totals.values()))
        self.num_endpoint_slices.set(sum(t[1] for t in self._totals.values()))
        self.desired_endpoint_slices.set(sum(t[2] for t in self._totals.values()))


class MulticlusterMetrics:
    """``endpointslice_operator_mcs_*``: Multi-Cluster Services (``--multicluster``).

    Per peer (label ``peer``: its cluster id, or its kubeconfig path until the id is known):
    whether it answers and the age of its Lease (seconds since its last successful sync); per
    source cluster: the imported slices held here; this cluster's ServiceExports by condition;
    the import writes made.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.peer_reachable = Gauge(
            "endpointslice_operator_mcs_peer_reachable",
            "1 while the peer cluster's API server answers, else 0",
            ["peer"],
            registry=r,
        )
        self.peer_sync_age = Gauge(
            "endpointslice_operator_mcs_peer_last_sync_age_seconds",
            "Seconds since the peer's Lease was last renewed (its watches healthy and listed)",
            ["peer"],
            registry=r,
        )
        self.imported_slices = Gauge(
            "endpointslice_operator_mcs_imported_slices",
            "Imported EndpointSlices held in this cluster, by source cluster",
            ["source_cluster"],
            registry=r,
        )
        self.exports = Gauge(
            "endpointslice_operator_mcs_exports",
            "This cluster's ServiceExports by condition (type, status)",
            ["condition", "status"],
            registry=r,
        )
        self.writes = ExactCounter(
            "endpointslice_operator_mcs_writes_total",
            "API writes of the multi-cluster controller, by resource",
            ["resource"],
            registry=r,
        )

    def replace(self, gauge: Gauge, values: dict[tuple[str, ...], float]) -> None:
        """Set a labelled gauge to exactly ``values`` (series not given are removed)."""
        gauge.clear()
        for labels, value in values.items():
            gauge.labels(*labels).set(value)
