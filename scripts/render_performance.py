"""Write the headline benchmark figures into the README and docs/performance.md.

The one source of the figures is the JSON a benchmark run writes (``python -m benchmarks
--real --full --json docs/benchmarks/real-full.json``, and ``--full --only planner scale --json
docs/benchmarks/scale-full.json``); ``python -m scripts.render_performance`` renders their
figures, each with its baseline, ratio and goal verdict (computed from
:mod:`benchmarks.goals`, never written by hand), between the markers ``<!-- figures:NAME -->``
and ``<!-- /figures -->`` of both files. ``--check`` writes nothing and exits 1 when a table is
out of date (a test runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.figure import Figure
from benchmarks.goals import verdict

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", ROOT / "docs" / "performance.md")
_BLOCK = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures -->)", re.S)


@dataclass(frozen=True)
class Results:
    """One benchmark run's JSON and how its table shows it."""

    path: Path
    baseline: str
    """The baseline column's heading."""
    shown: dict[str, str]
    """figure -> what it is, for the table (figures not listed are not shown)."""
    mode: str = "full"
    """The run's mode (``--full``), when its JSON does not say."""


RESULTS = {
    # python -m benchmarks --real --full --json docs/benchmarks/real-full.json
    "real-full": Results(
        ROOT / "docs" / "benchmarks" / "real-full.json",
        "kube-controller-manager",
        {
            "writes_burst_arrivals": "writes, 2,000 pods created with status (200 Service pairs)",
            "writes_burst_flips": "writes, 3,000 readiness flips",
            "writes_burst_deletions": "writes, 500 deletions",
            "converge_burst_arrivals_s": "seconds to converge after the last creation",
            "converge_burst_flips_s": "seconds to converge after the last flip",
            "converge_burst_deletions_s": "seconds to converge after the last deletion",
            "real_writes_ratio_vs_kcm": "writes, 450 paced changes (one at a time)",
            "real_flip_p50_ms": "ms from a paced flip to its slice, p50",
            "real_flip_p99_ms": "ms from a paced flip to its slice, p99",
        },
    ),
    # python -m benchmarks --full --only planner scale --json docs/benchmarks/scale-full.json
    "scale-full": Results(
        ROOT / "docs" / "benchmarks" / "scale-full.json",
        "baseline",
        {
            "startup_s": "s to ready, 100,000 pods and 10,000 Services (baseline: listing them)",
            "startup_writes": "writes at start-up, the slices right already",
            "memory_per_pod_bytes": "RSS bytes per pod (baseline: a pod's JSON)",
            "rss_mb": "MB of RSS at 100,000 pods (baseline: at 10,000)",
            "cpu_us_per_event": "us of operator CPU per readiness flip at 100,000 pods "
            "(baseline: a plain watch decoding it)",
            "events_per_s_sustained": "flips per second until all show in slices "
            "(baseline: a plain watch)",
            "emulator_cpu_us_per_event": "us of the emulator's CPU per flip (baseline: "
            "without the operator's write)",
            "plan_service_create_10k": "ms, plan_service for 10,000 Pod dicts, create "
            "(baseline: building the endpoint dicts)",
            "plan_service_noop_10k": "ms, plan_service, nothing to change (same baseline)",
        },
    ),
}


def _number(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def table(results: Results) -> str:
    run = json.loads(results.path.read_text(encoding="utf-8"))
    mode = str(run.get("mode") or results.mode)
    figures = {
        f["name"]: Figure(f["name"], f["value"], f["unit"], f.get("baseline"))
        for f in run["figures"]
    }
    lines = [
        f"| Figure | What | Ours | {results.baseline} | Ratio | Goal |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, what in results.shown.items():
        figure = figures.get(name)
        if figure is None:
            continue
        baseline = "-" if figure.baseline is None else _number(figure.baseline)
        ratio = "-" if figure.ratio is None else f"{figure.ratio:.2f}"
        goal = verdict(figure, figures, mode) or "-"
        lines.append(
            f"| `{name}` | {what} | {_number(figure.value)} | {baseline} | {ratio} | {goal} |"
        )
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        return match.group(1) + table(RESULTS[match.group("name")]) + match.group(4)

    return _BLOCK.sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.render_performance")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        rendered = render(text)
        if rendered != text:
            stale.append(page)
            if not args.check:
                page.write_text(rendered, encoding="utf-8")
    if args.check and stale:
        for page in stale:
            print(f"out of date: {page.relative_to(ROOT)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
