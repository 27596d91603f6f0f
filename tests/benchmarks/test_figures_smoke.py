"""Each operator-level figure module runs end to end in its tiny mode (real processes, real
HTTP on 127.0.0.1) and reports the figures it promises. Values are checked for what they
mean (write counts, bounds), never for speed."""

from __future__ import annotations

import math

import pytest

from benchmarks.figure import Figure
from benchmarks.figures import operator, propagation, scale, selectors

ZERO_ALLOWED = {
    "startup_writes",
    "events_queue_depth_max",
    "emulator_cpu_us_per_event",
    "selectors_startup_writes",
    "selectors_cpu_us_per_event",
}
"""Figures that may be 0 (none written; the queue empty whenever sampled; CPU below one 10 ms
tick of /proc in this tiny mode); every other one counts or times something that happened."""
WITHOUT_BASELINE = {
    "api_writes_rollout_10_batch_0s",
    "api_writes_rollout_10_batch_1s",
    "startup_synced_s",
    "startup_writes",
    "events_queue_depth_max",
    "scale_services",
}
"""Figures reported without a ratio: nothing else in the run measures the same thing (their
goals, if any, are in benchmarks/goals.py)."""


def _by_name(figures: list[Figure]) -> dict[str, Figure]:
    named = {f.name: f for f in figures}
    assert len(named) == len(figures), "figure names must be unique"
    for figure in figures:
        assert math.isfinite(figure.value), figure
        if figure.name in ZERO_ALLOWED:
            assert figure.value >= 0, figure
        else:
            assert figure.value > 0, figure
        if figure.name in WITHOUT_BASELINE:
            assert figure.baseline is None, figure
        else:
            assert figure.baseline is not None and math.isfinite(figure.baseline), figure
            assert figure.baseline > 0 or figure.name in ZERO_ALLOWED, figure
    return named


@pytest.mark.timeout(180)
def test_operator_writes() -> None:
    figures = _by_name(operator.collect("tiny"))
    assert set(figures) == {
        "api_writes_per_ready_flip",
        "api_writes_rollout_10_batch_0s",
        "api_writes_rollout_10_batch_1s",
    }
    # One write per readiness change, like upstream and like the minimal controller.
    assert figures["api_writes_per_ready_flip"].value == 1.0
    assert figures["api_writes_per_ready_flip"].baseline == 1.0
    # At most one write per endpoint change (10 pods replaced: 3 changes each).
    rollout_0s = figures["api_writes_rollout_10_batch_0s"]
    assert 0 < rollout_0s.value <= 30
    # Batching coalesces: fewer writes at 1 s than at 0 s, at least one.
    rollout_1s = figures["api_writes_rollout_10_batch_1s"]
    assert 1 <= rollout_1s.value < rollout_0s.value


@pytest.mark.timeout(180)
def test_propagation() -> None:
    figures = _by_name(propagation.collect("tiny"))
    assert {"propagation_p50_ms", "propagation_p99_ms"} <= set(figures)
    assert "propagation_lost_flips" not in figures
    p50, p99 = figures["propagation_p50_ms"], figures["propagation_p99_ms"]
    assert 0 < p50.value <= p99.value
    assert p50.baseline is not None and p99.baseline is not None
    assert 0 < p50.baseline <= p99.baseline


@pytest.mark.timeout(180)
def test_scale() -> None:
    figures = _by_name(scale.collect("tiny"))
    assert set(figures) == {
        "startup_s",
        "startup_synced_s",
        "startup_writes",
        "memory_per_pod_bytes",
        "rss_mb",
        "events_per_s_sustained",
        "cpu_us_per_event",
        "events_queue_depth_max",
        "scale_services",
        "emulator_cpu_us_per_event",
    }
    # The slices were right before the operator started: it must not write.
    assert figures["startup_writes"].value == 0
    assert figures["startup_synced_s"].value >= figures["startup_s"].value > 0
    assert figures["startup_s"].unit == "s (200 pods, 20 svc)"
    assert figures["rss_mb"].value > 0 and figures["events_per_s_sustained"].value > 0
    # The work queue holds each Service at most once.
    assert figures["scale_services"].value == 20
    assert figures["events_queue_depth_max"].value <= 20
    # The operator's write costs the emulator at least what the flip alone does.
    served = figures["emulator_cpu_us_per_event"]
    assert served.baseline is not None and served.value >= served.baseline


@pytest.mark.timeout(240)
def test_selectors() -> None:
    figures = _by_name(selectors.collect("tiny"))
    assert set(figures) == {
        "selectors_startup_synced_s",
        "selectors_startup_writes",
        "selectors_cpu_us_per_event",
        "selectors_events_per_s",
        "selectors_idle_cpu_pct",
        "selectors_flapping_status_writes",
    }
    # Nothing changed since the slices (and statuses) were written: no writes, either kind.
    assert figures["selectors_startup_writes"].value == 0
    assert figures["selectors_startup_writes"].baseline == 0
    # (CPU per flip is read from /proc in 10 ms ticks: 30 tiny-mode flips may show 0.)
    assert figures["selectors_events_per_s"].value > 0
    # Ten pods flapping four times a second for 15 s: a slice write per flip the operator
    # sees, and their selectors' status written at most once per status interval each. The
    # owners' other pods turn not ready over the window, so at least two 5 s rounds see new
    # counts (a single flapping pod could show the same counts to every round).
    flapping = figures["selectors_flapping_status_writes"]
    assert flapping.baseline is not None and flapping.baseline >= 100
    assert 10 * 2 <= flapping.value <= 10 * (15 / 5 + 2)
