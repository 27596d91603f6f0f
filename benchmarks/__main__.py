"""``python -m benchmarks [--quick|--full] [--real|--node] [--json FILE] [--only AREA ...]``.

Prints a table of figures, each with its goal and whether this run meets it (the goals are
in :mod:`benchmarks.goals`), and optionally writes ``{"mode": ..., "figures": [{"name",
"value", "unit", "baseline", "ratio", "goal"}]}``.

Adding figures: create ``benchmarks/figures/<area>.py`` with a function
``collect(mode: str) -> list[Figure]`` (``mode`` is ``"quick"`` or ``"full"``; quick must stay
well under a minute per area), import ``Figure`` and, for timings, ``best_of`` from
``benchmarks.figure``, and add ``"<area>"`` to ``AREAS`` below. Give every figure a baseline
measured in the same run whenever there is a meaningful floor to compare with; figures are
reported, never asserted as timings.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

from .figure import Figure
from .goals import verdict

AREAS: list[str] = [
    "planner",
    "emulator",
    "operator",
    "bursts",
    "propagation",
    "scale",
    "view",
    "selectors",
]
"""Modules under ``benchmarks.figures``, run in this order."""
REAL_AREAS: list[str] = ["real", "dataplane", "mcs"]
"""Run by ``--real`` (a real control plane from ``KUBEBUILDER_ASSETS``, KCM as the baseline;
``dataplane`` also needs root and kube-proxy, see benchmarks/figures/dataplane.py; ``mcs``
starts two control planes, see benchmarks/figures/mcs.py)."""
NODE_AREAS: list[str] = ["node"]
"""Run by ``--node`` (as root, on one real node from ``../shared/envtest``: the operator's image
installed with its chart beside kube-controller-manager, see benchmarks/figures/node.py)."""


def _format(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def _table(figures: list[Figure], mode: str) -> str:
    by_name = {f.name: f for f in figures}
    rows = [("figure", "value", "unit", "baseline", "ratio", "goal")]
    rows += [
        (
            f.name,
            _format(f.value),
            f.unit,
            _format(f.baseline),
            _format(f.ratio),
            verdict(f, by_name, mode),
        )
        for f in figures
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = []
    for index, row in enumerate(rows):
        cells = (
            [row[0].ljust(widths[0])]
            + [c.rjust(w) for c, w in zip(row[1:5], widths[1:5], strict=True)]
            + [row[5]]
        )
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", dest="mode", action="store_const", const="quick", help="CI scale (default)"
    )
    size.add_argument(
        "--full", dest="mode", action="store_const", const="full", help="the whole envelope"
    )
    parser.add_argument(
        "--real",
        action="store_true",
        help="only the figures beside kube-controller-manager on a real control plane "
        "(KUBEBUILDER_ASSETS), at --quick or --full size",
    )
    parser.add_argument(
        "--node",
        action="store_true",
        help="only the figures on one real node (root; the node layer's prerequisites), "
        "the operator installed with its chart beside kube-controller-manager",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--only", nargs="+", choices=[*AREAS, *REAL_AREAS, *NODE_AREAS], metavar="AREA",
        help="run only these areas",
    )  # fmt: skip
    args = parser.parse_args(argv)
    mode = args.mode or "quick"
    areas = args.only or (NODE_AREAS if args.node else REAL_AREAS if args.real else AREAS)

    figures: list[Figure] = []
    started = time.perf_counter()
    for area in areas:
        module = importlib.import_module(f"benchmarks.figures.{area}")
        figures.extend(module.collect(mode))
    elapsed = time.perf_counter() - started

    print(
        f"benchmarks ({mode}) on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, {elapsed:.1f} s"
    )
    print(_table(figures, mode))
    if args.json is not None:
        by_name = {f.name: f for f in figures}
        rows = [{**f.to_json(), "goal": verdict(f, by_name, mode)} for f in figures]
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"mode": mode, "figures": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
