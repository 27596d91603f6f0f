"""client-go's workqueue metrics (``workqueue_*`` with a ``name`` label), including the
in-flight gauges read from the queue at scrape time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from endpointslice_operator.metrics.collectors import (
    WORKQUEUE_DURATION_BUCKETS,
    ExactCounter,
    beta,
)

__all__ = ["InFlightProbe", "WorkqueueMetrics"]


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
    UNFINISHED_HELP = beta(
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of "
        "stuck threads by observing the rate at which this increases."
    )
    LONGEST_HELP = beta(
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
            beta("Current depth of workqueue"),
            ["name"],
            registry=registry,
        )
        self.adds = ExactCounter(
            "workqueue_adds_total",
            beta("Total number of adds handled by workqueue"),
            ["name"],
            registry=registry,
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            beta("How long in seconds an item stays in workqueue before being requested."),
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            beta("How long in seconds processing an item from workqueue takes."),
            ["name"],
            buckets=WORKQUEUE_DURATION_BUCKETS,
            registry=registry,
        )
        self.retries = ExactCounter(
            "workqueue_retries_total",
            beta("Total number of retries handled by workqueue"),
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
