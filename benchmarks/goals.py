"""The performance goals: one table, judged by the code, never by hand.

``python -m benchmarks`` prints each figure's goal and whether this run meets it;
``python -m scripts.render_performance`` puts the same verdicts into the tables of the README
and docs/performance.md. A goal is stated for a figure (an ``fnmatch`` pattern, for figures
whose name carries a size) and, for goals stated at one scale only, the run modes it applies
to. A goal against another figure names that figure: both come from the same run.

Add a goal here, not in the docs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .figure import Figure

__all__ = ["GOALS", "Goal", "goal_for", "verdict"]

Check = Callable[[Figure, Mapping[str, Figure]], bool | None]
"""``(figure, every figure of the run by name)`` -> met, or None when it cannot be judged."""
ALL_MODES = ("tiny", "quick", "full")


@dataclass(frozen=True)
class Goal:
    figure: str
    """The figure's name, or an fnmatch pattern."""
    text: str
    check: Check
    modes: tuple[str, ...] = ALL_MODES
    """Run modes the goal is stated for (a memory or rate goal at 100,000 pods: full)."""


def ratio_at_most(limit: float) -> Check:
    """value / baseline (measured in the same run) at most ``limit``."""

    def check(figure: Figure, _: Mapping[str, Figure]) -> bool | None:
        ratio = figure.ratio
        return None if ratio is None else ratio <= limit

    return check


def value_at_most(limit: float) -> Check:
    return lambda figure, _: figure.value <= limit


def value_at_least(limit: float) -> Check:
    return lambda figure, _: figure.value >= limit


def value_is(expected: float) -> Check:
    return lambda figure, _: figure.value == expected


def all_of(*checks: Check) -> Check:
    """Every check met (not judged when one cannot be judged and none is unmet)."""

    def check(figure: Figure, figures: Mapping[str, Figure]) -> bool | None:
        results = [c(figure, figures) for c in checks]
        if False in results:
            return False
        return None if None in results else True

    return check


def at_most_share_of(pattern: str, share: float) -> Check:
    """At most ``share`` of another figure of the run (the first matching ``pattern``)."""

    def check(figure: Figure, figures: Mapping[str, Figure]) -> bool | None:
        other = next((f for name, f in figures.items() if fnmatchcase(name, pattern)), None)
        if other is None:
            return None
        return figure.value <= share * other.value

    return check


def at_most_figure(name: str) -> Check:
    """At most another figure of the run."""

    def check(figure: Figure, figures: Mapping[str, Figure]) -> bool | None:
        other = figures.get(name)
        return None if other is None else figure.value <= other.value

    return check


GOALS: tuple[Goal, ...] = (
    # planner (the reconciler on its own, against building the plain endpoint dicts)
    Goal("plan_create_10k", "<= 4x the baseline", ratio_at_most(4)),
    Goal("plan_noop_10k", "<= 3x the baseline", ratio_at_most(3)),
    Goal("plan_one_flip_10k", "<= 3x the baseline", ratio_at_most(3)),
    Goal("plan_service_create_10k", "<= 3x the baseline", ratio_at_most(3)),
    Goal("plan_service_noop_10k", "<= 2x the baseline", ratio_at_most(2)),
    # writes
    Goal("api_writes_per_ready_flip", "1 write", value_is(1)),
    Goal(
        "api_writes_rollout_*_batch_1s",
        "<= 10% of the writes at batch period 0 s",
        at_most_share_of("api_writes_rollout_*_batch_0s", 0.1),
    ),
    Goal("startup_writes", "0 writes", value_is(0)),
    # latency
    Goal("propagation_p99_ms", "<= 10x the baseline", ratio_at_most(10)),
    # a live migration from kube-controller-manager, through a real kube-proxy
    Goal("migration_failed_requests", "0 failed requests", value_is(0)),
    # on one real node, beside kube-controller-manager's twin Service (same pods)
    Goal("probe_to_rules_ms_p*", "<= 1.0x kube-controller-manager", ratio_at_most(1.0)),
    Goal(
        "service_create_to_endpoint_s_p50",
        "<= 1.0x kube-controller-manager and <= 1 s",
        all_of(ratio_at_most(1.0), value_at_most(1.0)),
    ),
    Goal(
        "service_create_to_endpoint_s_p99",
        "<= 1.0x kube-controller-manager and <= 2 s",
        all_of(ratio_at_most(1.0), value_at_most(2.0)),
    ),
    # EndpointSelectors beside opted-in Services of the same pods (issue 34)
    Goal("selectors_startup_synced_s", "<= 1.2x the Services", ratio_at_most(1.2)),
    # scale
    # Stated at 100,000 pods: at quick size the listing takes a tenth of a second and the
    # interpreter's start and imports (about a second) make the figure, not the cluster.
    Goal("startup_s", "<= 2x the listing", ratio_at_most(2), modes=("full",)),
    Goal("events_queue_depth_max", "<= the Services", at_most_figure("scale_services")),
    Goal("memory_per_pod_bytes", "<= 1,024 B", value_at_most(1024), modes=("full",)),
    Goal("rss_mb", "<= 250 MB", value_at_most(250), modes=("full",)),
    Goal("events_per_s_sustained", ">= 5,000 /s", value_at_least(5000), modes=("full",)),
)


def goal_for(name: str, mode: str) -> Goal | None:
    for goal in GOALS:
        if mode in goal.modes and fnmatchcase(name, goal.figure):
            return goal
    return None


def verdict(figure: Figure, figures: Mapping[str, Figure], mode: str) -> str:
    """``"<goal>: met"``, ``"<goal>: NOT met"``, ``"<goal>: not judged"`` or ``""`` (no goal)."""
    goal = goal_for(figure.name, mode)
    if goal is None:
        return ""
    met = goal.check(figure, figures)
    if met is None:
        return f"{goal.text}: not judged"
    return f"{goal.text}: {'met' if met else 'NOT met'}"
