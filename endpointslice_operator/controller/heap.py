"""Keeping Python's cyclic garbage collector off the cached cluster.

The operator's caches (slim projections of every watched Pod, Service, Node and EndpointSlice)
are large and live as long as the process. CPython's cyclic collector walks every tracked
container object of a generation when it collects it; the oldest generation holds the caches,
and each of its collections walks them all, so the cost per event grew with the cluster
(docs/performance.md, "Cost per event"). Once the initial listings are in, :func:`settle`
collects what the listing left as garbage and freezes the rest (``gc.freeze``): the collector
then ignores it. Objects are still freed by reference counting as usual (the caches hold plain
dicts and tuples, not cycles); only cyclic garbage among frozen objects would stay, and the
caches make none.
"""

from __future__ import annotations

import gc
import logging
import time

__all__ = ["settle"]

log = logging.getLogger(__name__)


def settle() -> None:
    """Collect once, then move every object alive now out of the cyclic collector's reach."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.debug(
        "froze %d objects for the garbage collector in %.3f s",
        gc.get_freeze_count(),
        time.perf_counter() - started,
    )
