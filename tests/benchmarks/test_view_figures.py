"""The endpoint view's benchmark area runs in its tiny mode and reports what it promises
(values checked for meaning, never for speed)."""

from __future__ import annotations

import math

from benchmarks.figures import view


def test_view_figures() -> None:
    figures = {f.name: f for f in view.collect("tiny")}
    assert set(figures) == {
        "view_change_us",
        "view_change_us_small",
        "view_gather_change_us",
        "view_memory_mb_2k",
    }
    for figure in figures.values():
        assert figure.baseline is not None and figure.baseline > 0, figure
        assert math.isfinite(figure.value) and figure.value > 0, figure
    # A view keeps less than the slices it was built from.
    memory = figures["view_memory_mb_2k"]
    assert memory.baseline is not None and memory.value < memory.baseline
