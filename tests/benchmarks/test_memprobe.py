"""The soak's memory probe: SIGUSR1 writes a tracemalloc snapshot and object counts, and the
soak's report reads two of them back."""

from __future__ import annotations

import os
import signal
import tracemalloc
from pathlib import Path

import pytest

from benchmarks import memprobe
from benchmarks.soak import report_memory


def test_each_signal_writes_a_snapshot_and_the_report_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start(4)
    try:
        memprobe.install(tmp_path)
        os.kill(os.getpid(), signal.SIGUSR1)
        kept = [bytearray(1024) for _ in range(512)]  # half a MiB that grows between snapshots
        os.kill(os.getpid(), signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        if started:
            tracemalloc.stop()
    assert kept
    for n in (1, 2):
        assert (tmp_path / f"snapshot-{n}.pickle").stat().st_size > 0
        assert "dict" in (tmp_path / f"types-{n}.txt").read_text()
    report_memory(tmp_path, top=5)
    out = capsys.readouterr().out
    assert "traced after warm-up" in out
    assert "test_memprobe.py" in out.split("growth by allocation site")[1]
