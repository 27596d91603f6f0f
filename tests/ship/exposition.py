"""What the operator's /metrics exposes once every metric family has a series."""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry

from endpointslice_operator.metrics import OperatorMetrics, render_registry


class _IdleQueue:
    def unfinished_work_seconds(self) -> float:
        return 0.0

    def longest_running_processor_seconds(self) -> float:
        return 0.0


def touched_metrics() -> OperatorMetrics:
    """The operator's metrics with a series in every family."""
    metrics = OperatorMetrics(CollectorRegistry())
    # Touch every labelled family once, as a running operator does, so that its series appear.
    metrics.record_change("create")
    metrics.record_sync("success", 0.1)
    metrics.observe_endpoints_per_sync(1, 0)
    metrics.observe_slices_changed(1, topology="Disabled", traffic_distribution="")
    metrics.services_count_by_traffic_distribution.labels("PreferClose").set(1)
    metrics.leader.set(1)
    metrics.set_pods_left_out("network", 1)
    metrics.record_leftover_deleted("service_missing")
    metrics.api_serving.set("endpointslice-operator.io", ["endpointselectors"], True)
    metrics.mirroring.changes("create")
    mcs = metrics.multicluster
    mcs.peer_reachable.labels("west").set(1)
    mcs.peer_sync_age.labels("west").set(3)
    mcs.imported_slices.labels("west").set(2)
    mcs.exports.labels("Ready", "True").set(1)
    mcs.writes.labels("endpointslices").inc()
    queue = metrics.workqueue
    queue.register_queue("endpoint_slice", _IdleQueue())
    queue.observe_add("endpoint_slice")
    queue.observe_queue_duration("endpoint_slice", 0.01)
    queue.observe_work_duration("endpoint_slice", 0.01)
    return metrics


def exported_samples() -> dict[str, set[str]]:
    """Sample name -> label names, read from the operator's own exposition text."""
    samples: dict[str, set[str]] = {}
    text = render_registry(touched_metrics().registry).decode()
    # Read the sample lines as Prometheus does: `name{label="value",...} value`.
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, rest = line.partition("{")
            name = name.split(" ")[0]
            labels = set(re.findall(r'(\w+)="', rest.split("}")[0])) if rest else set()
            samples.setdefault(name, set()).update(labels)
    return samples
