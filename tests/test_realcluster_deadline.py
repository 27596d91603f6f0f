"""The load-aware deadline of the real-cluster waits (no cluster needed): idle it is the
deadline written; when the process gets a core only part of the time it stretches."""

from __future__ import annotations

import os
import time

import pytest

from tests.realcluster import deadline as d


def test_idle_the_deadline_is_the_one_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(d, "slowdown", lambda: 1.0)
    wait = d.Deadline(0.05)
    assert not wait.expired()
    time.sleep(0.06)
    assert wait.expired()
    assert 0.05 < wait.used == pytest.approx(wait.wall)


def test_measured_load_stretches_it_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    factors = iter([4.0, 4.0, 4.0])
    monkeypatch.setattr(d, "slowdown", lambda: next(factors))
    wait = d.Deadline(0.05)
    time.sleep(0.06)
    assert not wait.expired()  # 0.06 s of wall time at 4x is 0.015 s
    time.sleep(0.16)
    assert wait.expired()
    assert wait.worst == 4.0 and "slowdown up to 4.0x" in wait.describe()


def test_the_probe_measures_waiting_for_a_core() -> None:
    assert 1.0 <= d.slowdown() <= d.MAX_SLOWDOWN
    # Sharing one core with a busy child: about half of the wall time is ours.
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child spins until killed
        os.sched_setaffinity(0, {0})
        while True:
            pass
    try:
        affinity = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {0})
        time.sleep(0.05)
        measured = max(d.slowdown() for _ in range(20))
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.sched_setaffinity(0, affinity)
    assert measured > 1.5
