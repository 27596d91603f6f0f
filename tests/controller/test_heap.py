"""The cyclic garbage collector is off while the initial listings fill the caches, and the
filled caches are frozen out of its walks once they are in (``run`` only)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from endpointslice_operator.controller import heap


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
