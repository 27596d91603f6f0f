"""The per-Service work queue: client-go's rate-limited, delaying workqueue plus its workers.

The asyncio equivalent of kube-controller-manager's ``endpoint_slice`` queue (reference C.3):
keys de-duplicated, one worker per key (a key added while processed is "dirty" and queued
again after), ``add_after`` keeping the earlier deadline, ``add_rate_limited`` taking the
maximum of a per-key exponential backoff (1 s .. 1000 s) and a global token bucket. The
:class:`TokenBucket` is our own because client-go's ``Reserve()`` books a token at once (maybe
into debt) and returns the delay, where aiolimiter's would make the caller wait. After
``max_retries`` (15) a key is dropped (``Retry budget exceeded``). Not upstream: ``wait_errors``
(``StaleInformerCache``) re-queue on their own short backoff without spending the budget
(docs/reliability.md), and ``hold``/``release_held`` let pod-triggered syncs go early
(docs/performance.md, "Writes"). Timing is on ``loop.time()``, so looptime drives it in tests.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from endpointslice_operator.metrics import WorkqueueMetrics
from endpointslice_operator.retry_log import RetryLog

__all__ = ["ItemExponentialBackoff", "ServiceQueue", "TokenBucket"]

logger = logging.getLogger(__name__)

MAX_RETRY_CAUSES = 256
"""Causes of retries remembered for their log lines (the oldest forgotten first)."""

Handler = Callable[[str], Awaitable[None]]


class TokenBucket:
    """A token bucket with reservations, like Go's ``rate.Limiter.Reserve().Delay()``.

    The bucket starts full. :meth:`reserve` takes one token now, even one that will only exist in
    the future, and returns how many seconds until that token is there (0 when one was
    available).
    """

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0:
            raise ValueError("qps must be > 0")
        if burst < 1:
            raise ValueError("burst must be >= 1")
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def _refill(self, now: float) -> None:
        if self._last is not None and now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        if self._last is None or now > self._last:
            self._last = now

    def reserve(self, now: float) -> float:
        self._refill(now)
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def available(self, now: float) -> float:
        """Tokens in the bucket now (negative while reservations are in debt)."""
        self._refill(now)
        return self._tokens

    def refund(self, now: float) -> None:
        """Return one token (a reservation that was not used), never beyond ``burst``."""
        self._refill(now)
        self._tokens = min(float(self.burst), self._tokens + 1.0)


class ItemExponentialBackoff:
    """client-go's ``ItemExponentialFailureRateLimiter``: per key, ``base * 2**failures``."""

    def __init__(self, base: float, maximum: float) -> None:
        if base <= 0 or maximum < base:
            raise ValueError("need 0 < base_backoff <= max_backoff")
        self.base = base
        self.maximum = maximum
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        exponent = self._failures.get(key, 0)
        self._failures[key] = exponent + 1
        # 2**exponent overflows float range long after the cap; guard like client-go does.
        if exponent > 1023:
            return self.maximum
        return min(self.base * math.ldexp(1.0, exponent), self.maximum)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


class ServiceQueue:
    """A de-duplicating, delaying, rate-limited queue of keys, processed by ``workers`` tasks.

    ``add``/``add_after``/``add_rate_limited`` may be called from any coroutine or callback
    running on the event loop (they never block). ``run(handler)`` processes keys until
    :meth:`stop`.
    """

    def __init__(
        self,
        *,
        name: str = "endpoint_slice",
        workers: int = 5,
        qps: float = 10.0,
        burst: int = 100,
        base_backoff: float = 1.0,
        max_backoff: float = 1000.0,
        max_retries: int = 15,
        wait_errors: Sequence[type[Exception]] = (),
        wait_backoff: tuple[float, float] = (0.1, 1.0),
        metrics: WorkqueueMetrics | None = None,
        expected_errors: Sequence[type[BaseException]] = (Exception,),
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.name = name
        self.workers = workers
        self.max_retries = max_retries
        self._backoff = ItemExponentialBackoff(base_backoff, max_backoff)
        self._wait_errors = tuple(wait_errors)
        self._waits = ItemExponentialBackoff(*wait_backoff)
        self._expected = tuple(expected_errors)
        self._retry_logs: dict[str, RetryLog] = {}  # cause -> its line, most recent last
        self._unexpected: dict[str, str] = {}  # key -> the unexpected exception last logged
        self._bucket = TokenBucket(qps, burst)
        self._metrics = metrics

        self._ready: deque[str] = deque()  # keys waiting for a worker, FIFO
        self._dirty: set[str] = set()  # keys that need processing (ready or re-added)
        self._processing: dict[str, float] = {}  # key -> loop time its processing started
        self._added_at: dict[str, float] = {}  # key -> loop time it became dirty (metrics)
        self._waiting: dict[str, tuple[float, asyncio.TimerHandle]] = {}  # delayed adds
        self._held: set[str] = set()  # delayed by ``hold``: released early by release_held

        self._loop: asyncio.AbstractEventLoop | None = None
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle: asyncio.Event | None = None
        self._shutting_down = False
        self._worker_tasks: list[asyncio.Task[None]] = []
        self._stopped: asyncio.Event | None = None

        if metrics is not None:
            metrics.register_queue(name, self)

    # -- adding ----------------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Queue ``key`` for processing now (no-op if already queued or once stopping)."""
        if self._shutting_down or key in self._dirty:
            return
        loop = self._bind_loop()
        self._dirty.add(key)
        self._added_at.setdefault(key, loop.time())
        if self._metrics is not None:
            self._metrics.observe_add(self.name)
        if key not in self._processing:
            self._ready.append(key)
            self._wake_one_getter()
        self._publish_depth()
        self._update_idle()

    def add_after(self, key: str, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed; an earlier pending deadline wins."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.observe_retry(self.name)
        if delay <= 0:
            self.add(key)
            return
        loop = self._bind_loop()
        deadline = loop.time() + delay
        pending = self._waiting.get(key)
        if pending is not None:
            if pending[0] <= deadline:
                return
            pending[1].cancel()
        handle = loop.call_at(deadline, self._deadline_reached, key)
        self._waiting[key] = (deadline, handle)
        self._update_idle()

    def hold(self, key: str, delay: float) -> None:
        """``add_after`` for coalescing: the key may be let go early by :meth:`release_held`
        (an earlier deadline, or an immediate add, still wins; a key already delayed for
        another reason gets the earlier of the two deadlines and is not released early)."""
        if self._shutting_down or key in self._dirty:
            return
        if key in self._waiting and key not in self._held:
            # Delayed for another reason (a retry, a requeue): the earlier deadline wins, and
            # that key is not released early.
            self.add_after(key, delay)
            return
        self._held.add(key)
        self.add_after(key, delay)

    @property
    def held(self) -> int:
        """Keys held back by :meth:`hold` and not yet due."""
        return len(self._held)

    def release_held(self) -> None:
        """Queue every held key now, the earliest deadline first."""
        for key in sorted(self._held, key=lambda k: (self._waiting.get(k, (0.0,))[0], k)):
            pending = self._waiting.pop(key, None)
            if pending is not None:
                pending[1].cancel()
            self._held.discard(key)
            self.add(key)
        self._update_idle()

    def add_rate_limited(self, key: str) -> None:
        """Re-queue ``key`` after max(per-key exponential backoff, global token-bucket delay)."""
        if self._shutting_down:
            return
        now = self._bind_loop().time()
        # Both limiters are always consulted: each call both counts a failure for the key and
        # takes a token from the bucket, as client-go's MaxOfRateLimiter does.
        delay = max(self._backoff.when(key), self._bucket.reserve(now))
        self.add_after(key, delay)

    def forget(self, key: str) -> None:
        """Reset ``key``'s backoffs (it stays queued if it is)."""
        self._backoff.forget(key)
        self._waits.forget(key)
        self._unexpected.pop(key, None)

    def num_requeues(self, key: str) -> int:
        """Rate-limited adds of ``key`` since it was last forgotten."""
        return self._backoff.num_requeues(key)

    def __len__(self) -> int:
        """Keys ready for a worker (not counting delayed keys or keys being processed)."""
        return len(self._ready)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is queued, delayed or being processed."""
        return key in self._dirty or key in self._waiting or key in self._processing

    @property
    def pending(self) -> int:
        """Keys queued or delayed (each needs a sync); O(1), so a key both queued and delayed
        counts twice."""
        return len(self._dirty) + len(self._waiting)

    @property
    def delayed(self) -> int:
        """Keys waiting for a deadline."""
        return len(self._waiting)

    @property
    def processing(self) -> int:
        """Keys currently being processed by a worker."""
        return len(self._processing)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- metrics probe (workqueue_unfinished_work_seconds / longest_running_processor) ---------

    def unfinished_work_seconds(self) -> float:
        if not self._processing or self._loop is None:
            return 0.0
        now = self._loop.time()
        return sum(now - started for started in self._processing.values())

    def longest_running_processor_seconds(self) -> float:
        if not self._processing or self._loop is None:
            return 0.0
        return self._loop.time() - min(self._processing.values())

    # -- processing ----------------------------------------------------------------------------

    async def run(self, handler: Handler) -> None:
        """Process keys with ``workers`` concurrent tasks until :meth:`stop`; then return.

        Cancelling ``run`` cancels the workers (and their handlers) and stops the queue.
        """
        loop = self._bind_loop()
        if self._worker_tasks:
            raise RuntimeError(f"work queue {self.name!r} is already running")
        if self._shutting_down:
            return
        self._stopped = asyncio.Event()
        self._worker_tasks = [
            loop.create_task(self._worker(handler), name=f"{self.name}-worker-{i}")
            for i in range(self.workers)
        ]
        try:
            # Workers cancelled by stop(timeout) end with CancelledError: that is a normal stop,
            # not a cancellation of run() itself (which still propagates out of gather).
            results = await asyncio.gather(*self._worker_tasks, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    raise result
        finally:
            self._shutting_down = True
            for task in self._worker_tasks:
                task.cancel()
            await asyncio.gather(*self._worker_tasks, return_exceptions=True)
            self._drop_pending()
            self._stopped.set()

    async def stop(self, timeout: float | None = None) -> None:
        """Stop taking keys; wait for in-flight handlers (cancelling them after ``timeout``).

        Keys still queued or delayed are dropped. Safe to call more than once, and before or
        without :meth:`run`.
        """
        self._shutting_down = True
        self._drop_pending()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
        tasks = [task for task in self._worker_tasks if not task.done()]
        if tasks:
            _, still_running = await asyncio.wait(tasks, timeout=timeout)
            for task in still_running:
                task.cancel()
            if still_running:
                logger.warning(
                    "Work queue %s: cancelled %d handler(s) still running after %ss",
                    self.name,
                    len(still_running),
                    timeout,
                )
        if self._stopped is not None:
            await self._stopped.wait()
        self._update_idle()

    async def wait_idle(self) -> None:
        """Return once nothing is queued, delayed or being processed."""
        if self._idle is None:
            self._idle = asyncio.Event()
        self._update_idle()
        while not self._is_idle():
            await self._idle.wait()

    async def _worker(self, handler: Handler) -> None:
        while True:
            key = await self._get()
            if key is None:
                return
            try:
                await self._process(handler, key)
            finally:
                self._done(key)

    async def _process(self, handler: Handler, key: str) -> None:
        try:
            await handler(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._handle_error(key, exc)
        else:
            self.forget(key)

    def _handle_error(self, key: str, exc: BaseException) -> None:
        if isinstance(exc, self._wait_errors):
            delay = self._waits.when(key)
            logger.debug(
                "Waiting to sync %s again in %.1fs: %s",
                key,
                delay,
                exc,
                extra={"service": key, "queue": self.name},
            )
            self.add_after(key, delay)
            return
        requeues = self.num_requeues(key)
        if requeues < self.max_retries:
            self._log_retry(key, exc, requeues + 1)
            self.add_rate_limited(key)
            return
        self.forget(key)
        if self._metrics is not None:
            self._metrics.observe_drop(self.name)
        logger.error(
            "Retry budget exceeded, dropping %s out of the queue %s: %s",
            key,
            self.name,
            exc,
            exc_info=exc,
            extra={"service": key, "queue": self.name},
        )

    def _log_retry(self, key: str, exc: BaseException, attempt: int) -> None:
        extra = {"service": key, "queue": self.name}
        if not isinstance(exc, self._expected):
            text = f"{type(exc).__name__}: {exc}"
            if self._unexpected.get(key) == text:
                logger.debug("Error syncing %s again, retrying: %s", key, text, extra=extra)
                return
            self._unexpected[key] = text
            logger.error(
                "Unexpected error syncing %s, retrying (attempt %d of %d): %s",
                key,
                attempt,
                self.max_retries,
                text,
                exc_info=exc,
                extra=extra,
            )
            return
        cause = f"{type(exc).__name__}: {exc}"
        retry_log = self._retry_logs.pop(cause, None)
        if retry_log is None:
            retry_log = RetryLog(logger, f"Work queue {self.name}: a sync")
        self._retry_logs[cause] = retry_log  # the most recent last
        while len(self._retry_logs) > MAX_RETRY_CAUSES:
            del self._retry_logs[next(iter(self._retry_logs))]
        retry_log.failed(exc, **extra)

    async def _get(self) -> str | None:
        """The next ready key (marked as processing), or None once the queue is stopping."""
        loop = self._bind_loop()
        while not self._ready:
            if self._shutting_down:
                return None
            getter: asyncio.Future[None] = loop.create_future()
            self._getters.append(getter)
            try:
                await getter
            except asyncio.CancelledError:
                if getter in self._getters:
                    self._getters.remove(getter)
                if getter.done() and not getter.cancelled() and self._ready:
                    # We were woken for a key we will not take: pass the wake-up on.
                    self._wake_one_getter()
                raise
        if self._shutting_down:
            return None
        key = self._ready.popleft()
        now = loop.time()
        self._processing[key] = now
        self._dirty.discard(key)
        added = self._added_at.pop(key, now)
        if self._metrics is not None:
            self._metrics.observe_queue_duration(self.name, now - added)
        self._publish_depth()
        return key

    def _done(self, key: str) -> None:
        started = self._processing.pop(key)
        if self._loop is not None and self._metrics is not None:
            self._metrics.observe_work_duration(self.name, self._loop.time() - started)
        if key in self._dirty and not self._shutting_down:
            self._ready.append(key)
            self._wake_one_getter()
        self._update_idle()

    # -- internals -----------------------------------------------------------------------------

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(f"work queue {self.name!r} is bound to another event loop")
        return loop

    def _deadline_reached(self, key: str) -> None:
        self._waiting.pop(key, None)
        self._held.discard(key)
        self.add(key)
        self._update_idle()

    def _wake_one_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _drop_pending(self) -> None:
        for _, handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        self._held.clear()
        self._ready.clear()
        for key in list(self._dirty):
            if key not in self._processing:
                self._added_at.pop(key, None)
        self._dirty.clear()
        self._publish_depth()

    def _publish_depth(self) -> None:
        if self._metrics is not None:
            self._metrics.set_depth(self.name, len(self._dirty))

    def _is_idle(self) -> bool:
        return not (self._dirty or self._waiting or self._processing)

    def _update_idle(self) -> None:
        if self._idle is None:
            return
        if self._is_idle():
            self._idle.set()
        else:
            self._idle.clear()
