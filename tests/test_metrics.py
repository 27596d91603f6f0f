"""The exposition matches upstream's metric names, types, help strings, labels and buckets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from endpointslice_operator.metrics import (
    CONTENT_TYPE,
    ExactCounter,
    OperatorMetrics,
    exponential_buckets,
    render_registry,
)


@dataclass
class Family:
    help: str = ""
    type: str = ""
    samples: list[tuple[str, dict[str, str], str]] = field(default_factory=list)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text: str) -> dict[str, Family]:
    """A strict reader of the text format: every sample must follow its family's TYPE line."""
    families: dict[str, Family] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_ = line[len("# HELP ") :].partition(" ")
            assert name not in families, f"family {name} written twice"
            families[name] = Family(help=help_)
            current = name
        elif line.startswith("# TYPE "):
            name, _, kind = line[len("# TYPE ") :].partition(" ")
            assert name == current
            families[name].type = kind
        else:
            match = _SAMPLE.match(line)
            assert match, f"bad sample line {line!r}"
            name, labels, value = match.groups()
            assert current is not None
            allowed = {current}
            if families[current].type == "histogram":
                allowed = {f"{current}_bucket", f"{current}_sum", f"{current}_count"}
            assert name in allowed, f"{name} under family {current}"
            families[current].samples.append((name, dict(_LABEL.findall(labels or "")), value))
    return families


def exposition(metrics: OperatorMetrics) -> dict[str, Family]:
    return parse(metrics.render().decode("utf-8"))


UPSTREAM = {
    # name: (type, help, labels)
    "endpoint_slice_controller_endpoints_added_per_sync": (
        "histogram",
        "[BETA] Number of endpoints added on each Service sync",
        set(),
    ),
    "endpoint_slice_controller_endpoints_removed_per_sync": (
        "histogram",
        "[BETA] Number of endpoints removed on each Service sync",
        set(),
    ),
    "endpoint_slice_controller_endpoints_desired": (
        "gauge",
        "[BETA] Number of endpoints desired",
        set(),
    ),
    "endpoint_slice_controller_num_endpoint_slices": (
        "gauge",
        "[BETA] Number of EndpointSlices",
        set(),
    ),
    "endpoint_slice_controller_desired_endpoint_slices": (
        "gauge",
        "[BETA] Number of EndpointSlices that would exist with perfect endpoint allocation",
        set(),
    ),
    "endpoint_slice_controller_changes": (
        "counter",
        "[ALPHA] Number of EndpointSlice changes",
        {"operation"},
    ),
    "endpoint_slice_controller_endpointslices_changed_per_sync": (
        "histogram",
        "[ALPHA] Number of EndpointSlices changed on each Service sync",
        {"topology", "traffic_distribution"},
    ),
    "endpoint_slice_controller_syncs": (
        "counter",
        "[ALPHA] Number of EndpointSlice syncs",
        {"result"},
    ),
    "endpoint_slice_controller_services_count_by_traffic_distribution": (
        "gauge",
        "[BETA] Number of Services using some specific trafficDistribution",
        {"traffic_distribution"},
    ),
}

WORKQUEUE = {
    "workqueue_depth": ("gauge", "[BETA] Current depth of workqueue"),
    "workqueue_adds_total": ("counter", "[BETA] Total number of adds handled by workqueue"),
    "workqueue_queue_duration_seconds": (
        "histogram",
        "[BETA] How long in seconds an item stays in workqueue before being requested.",
    ),
    "workqueue_work_duration_seconds": (
        "histogram",
        "[BETA] How long in seconds processing an item from workqueue takes.",
    ),
    "workqueue_retries_total": ("counter", "[BETA] Total number of retries handled by workqueue"),
    "workqueue_unfinished_work_seconds": (
        "gauge",
        "[BETA] How many seconds of work has done that is in progress and hasn't been observed "
        "by work_duration. Large values indicate stuck threads. One can deduce the number of "
        "stuck threads by observing the rate at which this increases.",
    ),
    "workqueue_longest_running_processor_seconds": (
        "gauge",
        "[BETA] How many seconds has the longest running processor for workqueue been running.",
    ),
}


class Probe:
    def __init__(self, unfinished: float, longest: float) -> None:
        self.unfinished = unfinished
        self.longest = longest

    def unfinished_work_seconds(self) -> float:
        return self.unfinished

    def longest_running_processor_seconds(self) -> float:
        return self.longest


def exercised() -> OperatorMetrics:
    """Metrics after a known sequence of controller activity."""
    metrics = OperatorMetrics()
    metrics.observe_endpoints_per_sync(added=3, removed=0)
    metrics.observe_endpoints_per_sync(added=100, removed=1)
    metrics.record_change("create")
    metrics.record_change("create")
    metrics.record_change("update")
    metrics.record_change("delete", count=0)  # nothing happened: no series
    metrics.observe_slices_changed(2, topology="Disabled", traffic_distribution="")
    metrics.observe_slices_changed(1, topology="Auto", traffic_distribution="PreferClose")
    metrics.record_sync("success", 0.003)
    metrics.record_sync("success", 0.5)
    metrics.record_sync("stale")
    metrics.record_sync("error", 0.01)
    metrics.set_cache_gauges(
        desired_endpoints=103,
        actual_slices=3,
        desired_slices=2,
        by_traffic_distribution={"PreferClose": 1, "PreferSameZone": 0},
    )
    metrics.set_leader(True)
    metrics.workqueue.register_queue("endpoint_slice", Probe(7.5, 5.0))
    metrics.workqueue.observe_add("endpoint_slice")
    metrics.workqueue.observe_retry("endpoint_slice")
    metrics.workqueue.set_depth("endpoint_slice", 4)
    metrics.workqueue.observe_queue_duration("endpoint_slice", 0.002)
    metrics.workqueue.observe_work_duration("endpoint_slice", 0.2)
    return metrics


def test_upstream_metrics_have_upstream_names_types_help_and_labels() -> None:
    families = exposition(exercised())
    for name, (kind, help_, labels) in UPSTREAM.items():
        assert name in families, name
        family = families[name]
        assert family.type == kind, name
        assert family.help == help_, name
        for _, sample_labels, _ in family.samples:
            assert set(sample_labels) - {"le"} == labels, name


def test_workqueue_metrics_have_client_go_names_types_and_help() -> None:
    families = exposition(exercised())
    for name, (kind, help_) in WORKQUEUE.items():
        assert families[name].type == kind, name
        assert families[name].help == help_, name
        for _, labels, _ in families[name].samples:
            assert set(labels) - {"le"} == {"name"}
            assert labels["name"] == "endpoint_slice"


def test_no_created_series_and_counters_are_not_renamed() -> None:
    text = exercised().render().decode()
    assert "_created" not in text
    assert "endpoint_slice_controller_changes_total" not in text
    assert "endpoint_slice_controller_syncs_total" not in text
    assert "workqueue_adds_total_total" not in text
    families = parse(text)
    assert [s[0] for s in families["endpoint_slice_controller_changes"].samples] == [
        "endpoint_slice_controller_changes"
    ] * 2


def test_values_after_a_known_sequence() -> None:
    families = exposition(exercised())

    def samples(name: str) -> dict[tuple[str, ...], str]:
        return {
            (sample, *(f"{k}={v}" for k, v in sorted(labels.items()))): value
            for sample, labels, value in families[name].samples
        }

    assert samples("endpoint_slice_controller_changes") == {
        ("endpoint_slice_controller_changes", "operation=create"): "2",
        ("endpoint_slice_controller_changes", "operation=update"): "1",
    }
    assert samples("endpoint_slice_controller_syncs") == {
        ("endpoint_slice_controller_syncs", "result=error"): "1",
        ("endpoint_slice_controller_syncs", "result=stale"): "1",
        ("endpoint_slice_controller_syncs", "result=success"): "2",
    }
    added = samples("endpoint_slice_controller_endpoints_added_per_sync")
    assert added[("endpoint_slice_controller_endpoints_added_per_sync_sum",)] == "103"
    assert added[("endpoint_slice_controller_endpoints_added_per_sync_count",)] == "2"
    assert added[("endpoint_slice_controller_endpoints_added_per_sync_bucket", "le=2")] == "0"
    assert added[("endpoint_slice_controller_endpoints_added_per_sync_bucket", "le=4")] == "1"
    assert added[("endpoint_slice_controller_endpoints_added_per_sync_bucket", "le=128")] == "2"
    assert samples("endpoint_slice_controller_endpoints_desired") == {
        ("endpoint_slice_controller_endpoints_desired",): "103"
    }
    assert samples("endpoint_slice_controller_num_endpoint_slices") == {
        ("endpoint_slice_controller_num_endpoint_slices",): "3"
    }
    assert samples("endpoint_slice_controller_desired_endpoint_slices") == {
        ("endpoint_slice_controller_desired_endpoint_slices",): "2"
    }
    by_td = "endpoint_slice_controller_services_count_by_traffic_distribution"
    assert samples(by_td) == {
        (by_td, "traffic_distribution=PreferClose"): "1",
        (by_td, "traffic_distribution=PreferSameZone"): "0",
    }
    changed = samples("endpoint_slice_controller_endpointslices_changed_per_sync")
    name = "endpoint_slice_controller_endpointslices_changed_per_sync"
    assert changed[(f"{name}_sum", "topology=Disabled", "traffic_distribution=")] == "2"
    assert changed[(f"{name}_sum", "topology=Auto", "traffic_distribution=PreferClose")] == "1"
    duration = samples("endpoint_slice_controller_sync_duration_seconds")
    prefix = "endpoint_slice_controller_sync_duration_seconds"
    assert duration[(f"{prefix}_count", "result=success")] == "2"
    assert duration[(f"{prefix}_sum", "result=success")] == "0.503"
    assert (f"{prefix}_count", "result=stale") not in duration  # no duration given
    assert samples("endpointslice_operator_leader") == {("endpointslice_operator_leader",): "1"}
    assert samples("workqueue_depth") == {("workqueue_depth", "name=endpoint_slice"): "4"}
    assert samples("workqueue_unfinished_work_seconds") == {
        ("workqueue_unfinished_work_seconds", "name=endpoint_slice"): "7.5"
    }
    assert samples("workqueue_longest_running_processor_seconds") == {
        ("workqueue_longest_running_processor_seconds", "name=endpoint_slice"): "5"
    }
    assert samples("endpointslice_operator_queue_dropped_total") == {
        ("endpointslice_operator_queue_dropped_total", "name=endpoint_slice"): "0"
    }


def bucket_bounds(family: Family) -> list[str]:
    seen: list[str] = []
    for sample, labels, _ in family.samples:
        if sample.endswith("_bucket") and labels["le"] not in seen:
            seen.append(labels["le"])
    return seen


def test_buckets_are_upstreams() -> None:
    families = exposition(exercised())
    per_sync = [str(2**i) for i in range(1, 16)] + ["+Inf"]
    assert bucket_bounds(families["endpoint_slice_controller_endpoints_added_per_sync"]) == (
        per_sync
    )
    assert bucket_bounds(families["endpoint_slice_controller_endpoints_removed_per_sync"]) == (
        per_sync
    )
    assert bucket_bounds(families["endpoint_slice_controller_endpointslices_changed_per_sync"]) == [
        "0.005",
        "0.01",
        "0.025",
        "0.05",
        "0.1",
        "0.25",
        "0.5",
        "1",
        "2.5",
        "5",
        "10",
        "+Inf",
    ]
    assert bucket_bounds(families["endpoint_slice_controller_sync_duration_seconds"]) == [
        "0.001",
        "0.002",
        "0.004",
        "0.008",
        "0.016",
        "0.032",
        "0.064",
        "0.128",
        "0.256",
        "0.512",
        "1.024",
        "2.048",
        "4.096",
        "8.192",
        "16.384",
        "+Inf",
    ]
    assert bucket_bounds(families["workqueue_queue_duration_seconds"]) == [
        "1e-08",
        "1e-07",
        "1e-06",
        "1e-05",
        "0.0001",
        "0.001",
        "0.01",
        "0.1",
        "1",
        "10",
        "+Inf",
    ]


def test_services_count_by_traffic_distribution_is_reset_on_each_update() -> None:
    metrics = OperatorMetrics()
    metrics.set_cache_gauges(1, 1, 1, {"PreferClose": 2})
    metrics.set_cache_gauges(1, 1, 1, {"PreferSameNode": 1})
    by_td = "endpoint_slice_controller_services_count_by_traffic_distribution"
    assert metrics.sample_value(by_td, {"traffic_distribution": "PreferClose"}) is None
    assert metrics.sample_value(by_td, {"traffic_distribution": "PreferSameNode"}) == 1


def test_families_without_series_are_left_out() -> None:
    text = OperatorMetrics().render().decode()
    families = parse(text)
    # Unlabelled metrics always exist (as a Go Vec with no labels once set); labelled ones
    # appear with their first series.
    assert "endpoint_slice_controller_endpoints_desired" in families
    assert "endpoint_slice_controller_changes" not in families
    assert "endpoint_slice_controller_syncs" not in families
    assert "workqueue_depth" not in families


def test_instances_have_separate_registries() -> None:
    first, second = OperatorMetrics(), OperatorMetrics()
    first.record_change("create")
    assert first.sample_value("endpoint_slice_controller_changes", {"operation": "create"}) == 1
    assert second.sample_value("endpoint_slice_controller_changes", {"operation": "create"}) is None


def test_unknown_sync_result_is_rejected() -> None:
    with pytest.raises(ValueError):
        OperatorMetrics().record_sync("partial")


def test_exact_counter_rules() -> None:
    registry = CollectorRegistry()
    counter = ExactCounter("things", "Things", ["kind"], registry=registry)
    with pytest.raises(ValueError):
        counter.inc()  # labelled: needs labels()
    with pytest.raises(ValueError):
        counter.labels("a").inc(-1)
    with pytest.raises(ValueError):
        counter.labels("a", "b")
    counter.labels(kind='quo"te\\').inc(2)
    plain = ExactCounter("plain", "Plain\nhelp", registry=registry)
    plain.inc()
    assert render_registry(registry).decode() == (
        "# HELP plain Plain\\nhelp\n"
        "# TYPE plain counter\n"
        "plain 1\n"
        "# HELP things Things\n"
        "# TYPE things counter\n"
        'things{kind="a"} 0\n'  # labels() creates the series, as Go's WithLabelValues
        'things{kind="quo\\"te\\\\"} 2\n'
    )
    with pytest.raises(ValueError):
        ExactCounter("plain", "again", registry=registry)  # duplicate name


def test_exponential_buckets_and_content_type() -> None:
    assert exponential_buckets(2, 2, 3) == (2, 4, 8)
    with pytest.raises(ValueError):
        exponential_buckets(0, 2, 3)
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_prometheus_client_parser_accepts_the_exposition() -> None:
    """An independent reader (prometheus_client's parser) reads every family and type."""
    text = exercised().render().decode()
    families = {family.name: family.type for family in text_string_to_metric_families(text)}
    # The parser speaks OpenMetrics and so names counters without a trailing _total.
    assert families["endpoint_slice_controller_changes"] == "counter"
    assert families["endpoint_slice_controller_syncs"] == "counter"
    assert families["workqueue_adds"] == "counter"
    assert families["endpoint_slice_controller_endpoints_added_per_sync"] == "histogram"
    assert families["workqueue_longest_running_processor_seconds"] == "gauge"
    assert len(families) == len(parse(text))


def test_mirroring_metrics_have_upstreams_names_and_sum_per_service() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    mirroring = metrics.mirroring
    mirroring.observe(added=3, updated=1, removed=2, skipped=5)
    mirroring.changes("create")
    mirroring.set_totals("ns/a", 10, 1, 1)
    mirroring.set_totals("ns/b", 1500, 2, 2)
    mirroring.set_totals("ns/a", 4, 1, 1)
    text = render_registry(metrics.registry).decode()
    assert "endpoint_slice_mirroring_controller_endpoints_desired 1504" in text
    assert "endpoint_slice_mirroring_controller_num_endpoint_slices 3" in text
    assert "endpoint_slice_mirroring_controller_desired_endpoint_slices 3" in text
    assert 'endpoint_slice_mirroring_controller_changes{operation="create"} 1' in text
    assert "endpoint_slice_mirroring_controller_addresses_skipped_per_sync_sum 5" in text
    assert "endpoint_slice_mirroring_controller_endpoints_updated_per_sync_sum 1" in text
    assert "# HELP endpoint_slice_mirroring_controller_endpoints_added_per_sync [ALPHA]" in text
    mirroring.forget("ns/b")
    text = render_registry(metrics.registry).decode()
    assert "endpoint_slice_mirroring_controller_endpoints_desired 4" in text
