"""The client-side write budget: ``--kube-api-qps`` and ``--kube-api-burst``.

kube-controller-manager's per-client token bucket (20 qps, burst 30) for the operator's writes
(EndpointSlices and Events; watches and lists are not counted). Unlike upstream, the first token
is taken *before* the caches are read and planned, so a write that waited carries the freshest
state; a sync with nothing to write gives it back (:meth:`WriteBudget.refund`).
:meth:`WriteBudget.pressed` (a sixth of the burst spent) is when the router starts holding
pod-triggered syncs (docs/performance.md, "Writes").
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
