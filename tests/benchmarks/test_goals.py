"""The goal verdicts are computed from the one table of goals (``benchmarks.goals``), printed by
the run and rendered into the docs; the burst figures are named for what they compare with."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.__main__ import _table
from benchmarks.figure import Figure
from benchmarks.figures.bursts import figures as burst_figures
from benchmarks.goals import GOALS, goal_for, verdict
from benchmarks.lib.bursts import PhaseResult
from scripts import render_performance


def judged(*figures: Figure, mode: str = "full") -> dict[str, str]:
    by_name = {f.name: f for f in figures}
    return {f.name: verdict(f, by_name, mode) for f in figures}


def test_ratio_goals_are_judged_on_the_baseline_of_the_same_run() -> None:
    assert judged(Figure("plan_create_10k", 40, "ms", 10))["plan_create_10k"] == (
        "<= 4x the baseline: met"
    )
    assert judged(Figure("plan_create_10k", 41, "ms", 10))["plan_create_10k"] == (
        "<= 4x the baseline: NOT met"
    )
    # Without a baseline a ratio goal cannot be judged: it says so, never "met".
    assert judged(Figure("plan_create_10k", 1, "ms"))["plan_create_10k"] == (
        "<= 4x the baseline: not judged"
    )


def test_goals_against_another_figure_of_the_run() -> None:
    zero = Figure("api_writes_rollout_10_batch_0s", 30, "writes")
    assert judged(zero, Figure("api_writes_rollout_10_batch_1s", 3, "writes"))[
        "api_writes_rollout_10_batch_1s"
    ].endswith(": met")
    assert judged(zero, Figure("api_writes_rollout_10_batch_1s", 4, "writes"))[
        "api_writes_rollout_10_batch_1s"
    ].endswith(": NOT met")
    services = Figure("scale_services", 20, "Services")
    assert judged(services, Figure("events_queue_depth_max", 20, "keys"))[
        "events_queue_depth_max"
    ].endswith(": met")
    assert judged(services, Figure("events_queue_depth_max", 21, "keys"))[
        "events_queue_depth_max"
    ].endswith(": NOT met")
    assert judged(Figure("events_queue_depth_max", 1, "keys"))["events_queue_depth_max"].endswith(
        ": not judged"
    )


def test_goals_stated_at_full_scale_do_not_judge_a_quick_run() -> None:
    rss = Figure("rss_mb", 400, "MB")
    assert judged(rss, mode="full")["rss_mb"] == "<= 250 MB: NOT met"
    assert judged(rss, mode="quick")["rss_mb"] == ""
    assert goal_for("events_per_s_sustained", "quick") is None
    assert goal_for("events_per_s_sustained", "full") is not None
    assert goal_for("startup_s", "quick") is None and goal_for("startup_s", "full") is not None


def test_every_goal_names_a_figure_a_run_reports() -> None:
    reported = set()
    for name in ("real-full", "scale-full"):
        run = json.loads((Path("docs/benchmarks") / f"{name}.json").read_text())
        reported |= {f["name"] for f in run["figures"]}
    # figures of areas not in those two runs, or added since
    reported |= {
        "api_writes_per_ready_flip",
        "api_writes_rollout_100_batch_1s",
        "propagation_p99_ms",
        "scale_services",
        "migration_failed_requests",
        "probe_to_rules_ms_p50",
        "service_create_to_endpoint_s_p50",
        "service_create_to_endpoint_s_p99",
        "selectors_startup_synced_s",
    }
    for goal in GOALS:
        assert any(goal_for(name, mode) is goal for name in reported for mode in goal.modes), goal


def test_the_rendered_tables_carry_the_computed_verdicts(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(
        json.dumps(
            {
                "mode": "full",
                "figures": [
                    {"name": "startup_s", "value": 3.0, "unit": "s", "baseline": 1.0},
                    {"name": "startup_writes", "value": 0.0, "unit": "writes", "baseline": None},
                ],
            }
        )
    )
    results = render_performance.Results(
        run, "baseline", {"startup_s": "to ready", "startup_writes": "writes at start"}
    )
    rendered = render_performance.table(results)
    assert "| `startup_s` | to ready | 3 | 1 | 3.00 | <= 2x the listing: NOT met |" in rendered
    assert "| `startup_writes` | writes at start | 0 | - | - | 0 writes: met |" in rendered


def test_the_run_prints_a_verdict_per_figure() -> None:
    printed = _table(
        [Figure("startup_s", 3.0, "s", 2.0), Figure("startup_writes", 1.0, "writes")], "full"
    )
    rows = printed.splitlines()
    assert rows[0].split()[-1] == "goal"
    assert rows[2].endswith("<= 2x the listing: met")
    assert rows[3].endswith("0 writes: NOT met")


def test_burst_ratios_are_named_for_their_baseline() -> None:
    results = {
        "arrivals": PhaseResult({"ours": 8, "base": 10}, {"ours": 1.0, "base": 2.0}),
        "flips": PhaseResult({"ours": 12, "base": 10}, {"ours": 3.0, "base": 2.0}),
    }
    policy = {f.name: f for f in burst_figures(results, "ours", "base", "kcm_policy")}
    assert policy["writes_burst_ratio_vs_kcm_policy"].value == 1.2
    assert policy["converge_burst_ratio_vs_kcm_policy"].value == 1.5
    assert not any(name.endswith("_vs_kcm") for name in policy)
    real = {f.name for f in burst_figures(results, "ours", "base", "kcm")}
    assert {"writes_burst_ratio_vs_kcm", "converge_burst_ratio_vs_kcm"} <= real


def test_endpoint_selectors_start_up_within_1_2x_the_services_of_the_same_pods() -> None:
    def startup(value: float) -> str:
        figure = Figure("selectors_startup_synced_s", value, "s (200 x 10 pods)", 2.0)
        return judged(figure, mode="quick")["selectors_startup_synced_s"]

    assert startup(2.4) == "<= 1.2x the Services: met"
    assert startup(2.5) == "<= 1.2x the Services: NOT met"
    assert goal_for("selectors_startup_synced_s", "full") is not None
