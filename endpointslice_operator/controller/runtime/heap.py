"""Keeping Python's cyclic garbage collector off the cached cluster.

Every full collection walks the long-lived caches, so its cost per event grew with the cluster
(docs/performance.md, "Cost per event"). :func:`pause` keeps the collector off while the initial
listings come in (measured: a quarter of the time to load 100,000 pods); :func:`settle` then
collects and freezes everything (``gc.freeze``) and switches it back on. The caches hold no
cycles, so reference counting still frees them. :func:`resume` runs ``PAUSE_LIMIT`` seconds
after :func:`pause` in case the listings never complete.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import time

__all__ = ["PAUSE_LIMIT", "pause", "resume", "settle"]

log = logging.getLogger(__name__)


PAUSE_LIMIT = 300.0
"""Seconds after :func:`pause` at which the collector is switched back on regardless."""


def pause() -> None:
    """Freeze what exists now and keep the collector off until :func:`settle` (or
    :func:`resume`)."""
    gc.collect()
    gc.freeze()
    gc.disable()


def resume() -> None:
    """Switch the collector back on (idempotent)."""
    gc.enable()


def _trim_c_heap() -> None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``).

    The initial listings decode every object (a few KB each) to keep a few hundred bytes of
    it; what they freed stays in the process's heap, counted in its resident memory, until
    something reuses it. Elsewhere (another C library, another system) nothing is done."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)


def settle() -> None:
    """Collect once, then move every object alive now out of the cyclic collector's reach, and
    switch the collector back on; free memory goes back to the system."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    gc.enable()
    _trim_c_heap()
    log.debug(
        "froze %d objects for the garbage collector in %.3f s",
        gc.get_freeze_count(),
        time.perf_counter() - started,
    )
