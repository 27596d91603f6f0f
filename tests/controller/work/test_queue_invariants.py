"""ServiceQueue under random load (seeded, virtual time): the workqueue guarantees hold."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict

import pytest

from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.metrics import OperatorMetrics

pytestmark = pytest.mark.looptime

KEYS = [f"ns/svc-{i}" for i in range(8)]
WORKERS = 3


@pytest.mark.parametrize("seed", range(6))
async def test_random_load_keeps_the_guarantees(seed: int) -> None:
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    metrics = OperatorMetrics()
    queue = ServiceQueue(
        workers=WORKERS, qps=5, burst=3, base_backoff=0.5, max_backoff=8, metrics=metrics.workqueue
    )
    running: set[str] = set()
    max_parallel = 0
    starts: dict[str, list[float]] = defaultdict(list)
    due: list[tuple[str, float]] = []  # (key, time from which a processing start is owed)
    violations: list[str] = []

    async def handler(key: str) -> None:
        nonlocal max_parallel
        if key in running:
            violations.append(f"{key} processed twice at once")
        running.add(key)
        max_parallel = max(max_parallel, len(running))
        starts[key].append(loop.time())
        try:
            await asyncio.sleep(rng.choice([0, 0.1, 0.5, 2]))
            if rng.random() < 0.3:
                raise RuntimeError("transient")
        finally:
            running.discard(key)

    async def producer() -> None:
        for _ in range(300):
            key = rng.choice(KEYS)
            action = rng.random()
            if action < 0.6:
                queue.add(key)
                due.append((key, loop.time()))
            else:
                # A pending earlier deadline wins, so only "after the request" is owed here.
                queue.add_after(key, rng.choice([0, 0.3, 1, 5]))
                due.append((key, loop.time()))
            await asyncio.sleep(rng.choice([0, 0, 0.05, 0.2, 1]))

    runner = asyncio.create_task(queue.run(handler))
    await producer()
    await queue.wait_idle()
    await queue.stop()
    await runner

    assert violations == []
    assert max_parallel <= WORKERS
    # Every add is followed by a processing start no earlier than it asked for: nothing lost.
    for key, not_before in due:
        assert any(start >= not_before for start in starts[key]), (key, not_before)
    labels = {"name": "endpoint_slice"}
    assert metrics.sample_value("workqueue_depth", labels) == 0
    assert metrics.sample_value("workqueue_unfinished_work_seconds", labels) == 0
    processed = sum(len(times) for times in starts.values())
    assert metrics.sample_value("workqueue_work_duration_seconds_count", labels) == processed
    assert metrics.sample_value("workqueue_queue_duration_seconds_count", labels) == processed
    assert metrics.sample_value("workqueue_adds_total", labels) == processed
