"""A keyed work queue drained on the event loop, the shape of every emulated controller.

A store listener (synchronous, inside a commit) only calls :meth:`ControlLoop.enqueue`; the
loop then calls :meth:`ControlLoop.sync` for each dirty key on the event loop, once per key
however often it was queued, as kube-controller-manager's workqueues do. :meth:`after` queues a
key after a delay (a kubelet's start-up, a requeue), on the running loop's clock so that tests
with a virtual clock run it instantly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from endpointslice_operator.testing.errors import ApiError

logger = logging.getLogger(__name__)

Key = TypeVar("Key", bound=Hashable)


class ControlLoop(Generic[Key]):
    """Subclasses implement :meth:`sync`; a conflict or a vanished object is retried on the
    next event, any other error is logged and the loop goes on."""

    name = "controller"

    def __init__(self) -> None:
        self._queue: deque[Key] = deque()
        self._queued: set[Key] = set()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    def sync(self, key: Key) -> None:
        raise NotImplementedError

    # -- queueing ------------------------------------------------------------------------------

    def enqueue(self, key: Key) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
            self._idle.clear()
            self._wakeup.set()

    def after(self, delay: float, key: Key) -> None:
        """Queue ``key`` in ``delay`` seconds (replacing an earlier timer for it)."""
        self.cancel(key)
        if delay <= 0:
            self.enqueue(key)
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def cancel(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _fire(self, key: Key) -> None:
        self._timers.pop(key, None)
        self.enqueue(key)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"emulator-{self.name}")

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def wait_idle(self) -> None:
        """Return once nothing is queued (timers still pending do not count)."""
        while self._queue or not self._idle.is_set():
            await self._idle.wait()
            await asyncio.sleep(0)

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                key = self._queue.popleft()
                self._queued.discard(key)
                try:
                    self.sync(key)
                except ApiError as error:
                    # A conflict with a concurrent writer: the write's own event re-queues it.
                    logger.debug("%s: %s: %s", self.name, key, error)
                except Exception:
                    # A bug here must not stop the controller for the rest of the run.
                    logger.exception("%s: syncing %s failed", self.name, key)
                await asyncio.sleep(0)
            if not self._queue:
                self._idle.set()
