"""The client-side write budget: ``--kube-api-qps`` and ``--kube-api-burst``.

kube-controller-manager gives each controller's API client a token bucket (``--kube-api-qps``
20, ``--kube-api-burst`` 30 by default): every request waits for a token, so a burst of changes
cannot turn into a burst of writes that every kube-proxy and watcher then has to receive.
:class:`WriteBudget` is that bucket for the operator's writes (EndpointSlices and Events; watches
and the lists behind them are not counted, as the informers of kube-controller-manager use a
client of their own).

Where the token is taken is the operator's own (a deliberate difference, docs/performance.md):
kube-controller-manager computes a Service's writes and then waits for the limiter before each
request, so a write that waited carries the state of when it was planned, and a second write
follows for what changed meanwhile. The operator takes the first token *before* it reads its
caches and plans (:meth:`WriteBudget.acquire` in ``ServiceSyncer``), so every write that waited
carries the freshest state; a sync that turns out to need no write gives its token back
(:meth:`WriteBudget.refund`). Further writes of the same sync take a token each.

:meth:`WriteBudget.pressed` tells the event router that writes are outrunning the steady rate
(a sixth of the burst is spent); only then are pod-triggered syncs held back to coalesce, for
at most the batch period and only until pod changes stop (``ServiceQueue.hold``,
``EventRouter.release_when_quiet``). While the budget has room, every change is synced at
once, however close together the changes come.
"""

from __future__ import annotations

import asyncio

from endpointslice_operator.controller.work.queue import TokenBucket
from endpointslice_operator.metrics import OperatorMetrics

__all__ = ["DEFAULT_KUBE_API_BURST", "DEFAULT_KUBE_API_QPS", "WriteBudget", "spend"]

DEFAULT_KUBE_API_QPS = 20.0
DEFAULT_KUBE_API_BURST = 30
PRESSED_SHARE = 5 / 6
"""The budget is short once less than this share of its burst is left (25 of 30 tokens)."""


class WriteBudget:
    """A token bucket that writes wait on; on the running loop's clock (virtual time works)."""

    def __init__(self, qps: float, burst: int, metrics: OperatorMetrics | None = None) -> None:
        self._bucket = TokenBucket(qps, burst)
        self._metrics = metrics

    async def acquire(self) -> float:
        """Take a token, waiting until there is one; returns the seconds waited."""
        loop = asyncio.get_running_loop()
        delay = self._bucket.reserve(loop.time())
        if delay > 0:
            if self._metrics is not None:
                self._metrics.record_budget_wait(delay)
            await asyncio.sleep(delay)
        return delay

    def pressed(self) -> bool:
        """Writes are coming faster than the steady rate: a sixth of the burst is spent."""
        now = asyncio.get_running_loop().time()
        return self._bucket.available(now) < self._bucket.burst * PRESSED_SHARE

    def time_to_write(self, writes: int) -> float:
        """Seconds the budget needs for ``writes`` writes at its steady rate."""
        return writes / self._bucket.qps

    def refund(self) -> None:
        """Give back a token taken for a write that was not needed."""
        self._bucket.refund(asyncio.get_running_loop().time())


async def spend(budget: WriteBudget | None) -> None:
    """Wait for one token of ``budget`` before a write (no budget: at once)."""
    if budget is not None:
        await budget.acquire()
