"""The load-aware deadline of the real-cluster waits (no cluster needed): idle it is the
deadline written; when the process gets a core only part of the time it stretches."""

from __future__ import annotations

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


def test_the_load_factor_is_runnable_tasks_per_core() -> None:
    assert d.load_factor("0.50 0.40 0.30 1/300 42", cores=2) == 1.0  # idle
    assert d.load_factor("6.00 5.00 4.00 2/300 42", cores=2) == 3.0  # the 1-minute average
    assert d.load_factor("1.00 5.00 4.00 9/300 42", cores=2) == 4.0  # runnable right now
    assert d.load_factor("80.0 50.0 40.0 3/300 42", cores=2) == d.MAX_SLOWDOWN
    assert 1.0 <= d.slowdown() <= d.MAX_SLOWDOWN  # this machine, now
