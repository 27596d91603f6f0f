"""Deadlines for waits on a real control plane that stretch with the load of the machine.

A fixed deadline (``60 s``) assumes the machine runs the control plane, the controllers and the
test at about the speed it had when the number was picked; on a shared 2-core machine under a
load of 10 the same wait takes several times longer. :class:`Deadline` counts time in *idle
machine seconds*: each interval between two checks is divided by the slowdown measured then (a
fixed piece of CPU work, timed on the wall clock against the CPU time it was given: when the
process waits for a core, wall > CPU). Idle, the factor is 1 and the deadline is the one
written; loaded, it grows with the measured load, up to ``MAX_SLOWDOWN`` times.
"""

from __future__ import annotations

import time

MAX_SLOWDOWN = 10.0
"""At most this many wall seconds count as one (a wait never becomes unbounded)."""
_PROBE_ITERATIONS = 20_000
"""About 1 ms of CPU: the work timed at each check."""


def slowdown() -> float:
    """Wall time over CPU time of a fixed piece of work, between 1 and ``MAX_SLOWDOWN``."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(_PROBE_ITERATIONS):
        total += i
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return min(MAX_SLOWDOWN, max(1.0, wall / max(cpu, 1e-6)))


class Deadline:
    """``timeout`` idle-machine seconds from now; call :meth:`expired` at every check."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.used = 0.0
        """Idle-machine seconds counted so far."""
        self.wall = 0.0
        """Wall seconds so far."""
        self.worst = 1.0
        """The largest slowdown measured."""
        self._last = time.monotonic()

    def expired(self) -> bool:
        now = time.monotonic()
        factor = slowdown()
        self.worst = max(self.worst, factor)
        self.used += (now - self._last) / factor
        self.wall += now - self._last
        self._last = now
        return self.used > self.timeout

    def describe(self) -> str:
        return (
            f"{self.timeout:.0f} s (idle-machine time; {self.wall:.0f} s on the wall clock, "
            f"slowdown up to {self.worst:.1f}x)"
        )
