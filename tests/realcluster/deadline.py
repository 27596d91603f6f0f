"""Deadlines for waits on a real control plane that stretch with the load of the machine.

A fixed deadline (``60 s``) assumes the machine runs the control plane, the controllers and the
test at about the speed it had when the number was picked; on a shared 2-core machine under a
load of 10 the same wait takes several times longer. :class:`Deadline` counts time in *idle
machine seconds*: each interval between two checks is divided by the slowdown measured then:
the processes that want a core (the kernel's run queue, ``/proc/loadavg``: the 1-minute load
average, or the tasks runnable right now if more) per core of this machine. Idle, the factor is
1 and the deadline is the one written; loaded, it grows with the measured load, up to
``MAX_SLOWDOWN`` times. (Timing a piece of work in the test process itself does not show the
load: a process that mostly sleeps gets a core at once when it wakes; the control plane and
the operator, which need the CPU, are the ones that wait.)
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MAX_SLOWDOWN = 10.0
"""At most this many wall seconds count as one (a wait never becomes unbounded)."""
LOADAVG = Path("/proc/loadavg")


def load_factor(loadavg: str, cores: int) -> float:
    """Runnable tasks per core from a ``/proc/loadavg`` line (``"1.50 1.20 0.90 3/400 123"``:
    the 1-minute average, or the tasks runnable now if more), between 1 and ``MAX_SLOWDOWN``."""
    fields = loadavg.split()
    one_minute = float(fields[0])
    running = float(fields[3].split("/")[0]) - 1  # this process is one of them
    return min(MAX_SLOWDOWN, max(1.0, max(one_minute, running) / max(cores, 1)))


def slowdown() -> float:
    """The machine's load per core now (1 where ``/proc/loadavg`` cannot be read)."""
    try:
        text = LOADAVG.read_text(encoding="ascii")
    except OSError:
        return 1.0
    return load_factor(
        text,
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
    )


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
