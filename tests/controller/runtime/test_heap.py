"""The cyclic garbage collector is off while the initial listings fill the caches, and the
filled caches are frozen out of its walks once they are in (``run`` only)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from endpointslice_operator.controller.runtime import heap


@pytest.fixture
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()
        else:
            gc.disable()


@pytest.mark.usefixtures("restore_gc")
def test_pause_freezes_what_exists_and_keeps_the_collector_off_until_settle() -> None:
    gc.enable()
    gc.unfreeze()
    heap.pause()
    frozen_at_pause = gc.get_freeze_count()
    assert not gc.isenabled() and frozen_at_pause > 0
    caches = [{"pod": i, "labels": {"app": "web"}} for i in range(1000)]
    heap.settle()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_at_pause + len(caches)


@pytest.mark.usefixtures("restore_gc")
def test_resume_switches_the_collector_back_on_when_the_listings_never_finish() -> None:
    heap.pause()
    heap.resume()
    assert gc.isenabled()
    heap.resume()  # idempotent
    assert gc.isenabled()


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_settle_gives_freed_memory_back_to_the_system() -> None:
    """What a listing frees inside the C heap is returned by ``malloc_trim`` (glibc), not kept
    in the resident set until reused."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("not glibc")
    blocks = [bytes(4000) + bytes([i % 256]) for i in range(20_000)]  # ~80 MB in the C heap
    kept = blocks[::50]  # pins scattered pages, so that free() alone cannot shrink the heap
    del blocks
    before = _rss()
    heap._trim_c_heap()
    after = _rss()
    assert before - after > 20 * 1024 * 1024, (before, after)
    assert len(kept) == 400
