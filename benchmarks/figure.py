"""The figure type shared by every benchmark area, and the timing helper."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Figure", "best_of", "best_of_interleaved"]


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured number, with the baseline it is judged against (measured in the same run).

    ``ratio`` is ``value / baseline`` (``None`` without a baseline).
    """

    name: str
    value: float
    unit: str
    baseline: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def best_of(
    runs: int, action: Callable[[], object], setup: Callable[[], None] | None = None
) -> float:
    """The fastest of ``runs`` timings of ``action`` in seconds (``time.perf_counter``).

    ``setup`` runs untimed before each timing. The garbage collector is paused while timing, so
    a collection triggered by earlier allocations does not land in one run at random.
    """
    best = float("inf")
    for _ in range(runs):
        if setup is not None:
            setup()
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            action()
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        best = min(best, elapsed)
    return best


def best_of_interleaved(rounds: int, actions: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The fastest timing of each action over ``rounds`` rounds, running them in turn.

    Interleaving makes a figure and its baseline see the same machine load (CI runners and
    shared machines vary by the second), so their ratio stays meaningful.
    """
    best = dict.fromkeys(actions, float("inf"))
    for _ in range(rounds):
        for name, action in actions.items():
            best[name] = min(best[name], best_of(1, action))
    return best
