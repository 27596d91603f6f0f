"""``cpu_seconds`` reads another process's CPU time finer than the scheduler's 10 ms tick."""

from __future__ import annotations

import subprocess
import sys

from benchmarks.lib.processes import cpu_seconds

# A child that burns about 30 ms of CPU in small steps, then waits to be read.
_CHILD = """
import sys, time
began = time.process_time()
while time.process_time() - began < 0.0337:
    pass
print(time.process_time(), flush=True)
sys.stdin.readline()
"""


def test_cpu_seconds_of_another_process_to_below_a_tick() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        own = float(child.stdout.readline())
        seen = cpu_seconds(child.pid)
        # What the child measured of itself, and no more than the start-up before it: read in
        # ticks, the figure would be a multiple of 10 ms.
        assert own <= seen < own + 1.0
        assert round(seen * 100) != seen * 100
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=30)
