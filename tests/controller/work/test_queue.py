"""ServiceQueue: client-go workqueue semantics, on virtual time (looptime)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from endpointslice_operator.controller.work.queue import (
    ItemExponentialBackoff,
    ServiceQueue,
    TokenBucket,
)
from endpointslice_operator.metrics import OperatorMetrics

pytestmark = pytest.mark.looptime


class Recorder:
    """A handler recording (loop time, key) for each call; optional per-call behaviour."""

    def __init__(
        self,
        behaviour: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.calls: list[tuple[float, str]] = []
        self.behaviour = behaviour

    async def __call__(self, key: str) -> None:
        self.calls.append((asyncio.get_running_loop().time(), key))
        if self.behaviour is not None:
            await self.behaviour(key)

    @property
    def keys(self) -> list[str]:
        return [key for _, key in self.calls]

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.calls]

    @property
    def gaps(self) -> list[float]:
        """Time between consecutive calls."""
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


def dropped(metrics: OperatorMetrics) -> float:
    """Keys the ``endpoint_slice`` queue dropped after spending their retry budget."""
    value = metrics.sample_value(
        "endpointslice_operator_queue_dropped_total", {"name": "endpoint_slice"}
    )
    return value or 0.0


async def run_until_idle(queue: ServiceQueue, handler: Callable[[str], Awaitable[None]]) -> None:
    runner = asyncio.create_task(queue.run(handler))
    await queue.wait_idle()
    await queue.stop()
    await runner


def now() -> float:
    return asyncio.get_running_loop().time()


async def test_a_key_added_many_times_is_processed_once() -> None:
    queue = ServiceQueue(workers=3)
    for _ in range(5):
        queue.add("ns/a")
    queue.add("ns/b")
    queue.add("ns/a")
    assert len(queue) == 2
    handler = Recorder()
    await run_until_idle(queue, handler)
    assert sorted(handler.keys) == ["ns/a", "ns/b"]


async def test_keys_are_processed_in_fifo_order() -> None:
    queue = ServiceQueue(workers=1)
    for key in ["c", "a", "b", "a"]:
        queue.add(key)
    handler = Recorder()
    await run_until_idle(queue, handler)
    assert handler.keys == ["c", "a", "b"]


async def test_a_key_added_while_processing_runs_again_after_done_never_concurrently() -> None:
    queue = ServiceQueue(workers=5)
    active: set[str] = set()
    overlaps: list[str] = []
    added_during: list[bool] = []

    async def behaviour(key: str) -> None:
        if key in active:
            overlaps.append(key)
        active.add(key)
        if not added_during:
            added_during.append(True)
            queue.add(key)  # re-added while being processed
            queue.add(key)
            assert len(queue) == 0  # not handed to the 4 idle workers
        await asyncio.sleep(3)
        active.discard(key)

    handler = Recorder(behaviour)
    queue.add("ns/svc")
    await run_until_idle(queue, handler)
    assert overlaps == []
    assert handler.calls == [(0.0, "ns/svc"), (3.0, "ns/svc")]


async def test_workers_process_different_keys_in_parallel() -> None:
    queue = ServiceQueue(workers=3)

    async def slow(_: str) -> None:
        await asyncio.sleep(10)

    handler = Recorder(slow)
    for key in "abcde":
        queue.add(key)
    start = now()
    await run_until_idle(queue, handler)
    # 5 keys, 3 workers, 10 s each: two rounds.
    assert handler.times == [0, 0, 0, 10, 10]
    assert now() - start == pytest.approx(20)


async def test_add_after_delays_the_key() -> None:
    queue = ServiceQueue()
    handler = Recorder()
    queue.add_after("ns/a", 5)
    queue.add_after("ns/b", 2)
    assert len(queue) == 0
    assert queue.delayed == 2
    assert "ns/a" in queue
    await run_until_idle(queue, handler)
    assert handler.calls == [(2.0, "ns/b"), (5.0, "ns/a")]


async def test_add_after_earlier_deadline_wins() -> None:
    queue = ServiceQueue()
    handler = Recorder()
    queue.add_after("k", 10)
    queue.add_after("k", 3)  # earlier: replaces the 10 s deadline
    queue.add_after("k", 7)  # later than the pending 3 s: ignored
    assert queue.delayed == 1
    await run_until_idle(queue, handler)
    assert handler.calls == [(3.0, "k")]


async def test_an_earlier_deadline_cancels_the_later_one() -> None:
    """The replaced deadline's timer is cancelled: the key does not come again at 10 s."""
    queue = ServiceQueue()
    handler = Recorder()
    runner = asyncio.create_task(queue.run(handler))
    queue.add_after("k", 10)
    queue.add_after("k", 3)
    await asyncio.sleep(20)
    await queue.stop()
    await runner
    assert handler.calls == [(3.0, "k")]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("again", ["add", "add_after"])
async def test_a_waiter_woken_by_idle_waits_again_for_a_key_added_before_it_ran(again: str) -> None:
    """The queue goes idle (the waiter is woken) and, before the waiter runs, a key comes:
    the waiter sees the queue busy and waits again, until that key is done too (not a loop
    on an idle event still set)."""
    queue = ServiceQueue()
    loop = asyncio.get_running_loop()

    async def then_another(key: str) -> None:
        if key == "a":  # runs before the waiter, which the end of this sync wakes
            if again == "add":
                loop.call_soon(queue.add, "b")
            else:
                loop.call_soon(queue.add_after, "b", 5.0)

    handler = Recorder(then_another)
    runner = asyncio.create_task(queue.run(handler))
    queue.add("a")
    await queue.wait_idle()
    assert handler.keys == ["a", "b"]
    await queue.stop()
    await runner


async def test_add_after_zero_is_immediate_and_keeps_a_pending_deadline() -> None:
    queue = ServiceQueue()
    handler = Recorder()
    queue.add_after("k", 4)
    queue.add_after("k", 0)
    assert len(queue) == 1
    await run_until_idle(queue, handler)
    # As client-go: the immediate add does not cancel the delayed one.
    assert handler.calls == [(0.0, "k"), (4.0, "k")]


async def test_delayed_add_of_an_already_queued_key_is_deduplicated() -> None:
    queue = ServiceQueue(workers=1)

    async def slow(_: str) -> None:
        await asyncio.sleep(10)

    handler = Recorder(slow)
    queue.add("busy")
    queue.add("k")  # waits behind "busy" until t=10
    queue.add_after("k", 1)  # fires at t=1 while "k" is still queued
    await run_until_idle(queue, handler)
    assert handler.calls == [(0.0, "busy"), (10.0, "k")]


def test_per_item_backoff_doubles_from_1s_to_1000s() -> None:
    backoff = ItemExponentialBackoff(1.0, 1000.0)
    delays = [backoff.when("k") for _ in range(13)]
    assert delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000, 1000]
    assert backoff.num_requeues("k") == 13
    assert backoff.when("other") == 1
    backoff.forget("k")
    assert backoff.num_requeues("k") == 0
    assert backoff.when("k") == 1
    for _ in range(5000):  # no overflow however long a key keeps failing
        assert backoff.when("k") <= 1000


def test_token_bucket_allows_the_burst_then_qps() -> None:
    bucket = TokenBucket(qps=10, burst=100)
    assert [bucket.reserve(0.0) for _ in range(100)] == [0.0] * 100
    delays = [bucket.reserve(0.0) for _ in range(5)]
    assert delays == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    # 1 s later 10 tokens came back, but 5 were already owed.
    assert bucket.reserve(1.0) == 0.0
    assert [bucket.reserve(1.0) for _ in range(5)] == pytest.approx([0, 0, 0, 0, 0.1])
    # It refills to the burst and no further.
    assert [bucket.reserve(1000.0) for _ in range(100)] == [0.0] * 100
    assert bucket.reserve(1000.0) == pytest.approx(0.1)


def test_token_bucket_refund_returns_a_token_up_to_the_burst() -> None:
    bucket = TokenBucket(qps=1, burst=2)
    assert [bucket.reserve(0.0) for _ in range(3)] == pytest.approx([0, 0, 1.0])
    bucket.refund(0.0)  # the reservation in debt is paid back
    assert bucket.reserve(0.0) == pytest.approx(1.0)
    bucket.refund(10.0)  # refilled to the burst: nothing to add
    assert [bucket.reserve(10.0) for _ in range(3)] == pytest.approx([0, 0, 1.0])


async def test_held_keys_go_at_their_deadline_or_when_released() -> None:
    queue = ServiceQueue()
    handler = Recorder()
    runner = asyncio.create_task(queue.run(handler))
    queue.hold("ns/a", 1.0)
    queue.hold("ns/a", 5.0)  # the earlier deadline stands
    queue.hold("ns/b", 1.0)
    assert queue.held == 2
    await asyncio.sleep(0.3)
    queue.release_held()  # both go now
    await queue.wait_idle()
    assert handler.calls == [(0.3, "ns/a"), (0.3, "ns/b")]
    assert queue.held == 0
    queue.hold("ns/a", 1.0)  # not released: its deadline
    await queue.wait_idle()
    when, key = handler.calls[-1]
    assert when == pytest.approx(1.3) and key == "ns/a"
    await queue.stop()
    await runner


async def test_released_keys_go_in_the_order_of_their_deadlines_then_names() -> None:
    queue = ServiceQueue(workers=1)
    handler = Recorder()
    queue.hold("ns/a", 5.0)
    queue.hold("ns/c", 1.0)
    queue.hold("ns/b", 1.0)
    queue.release_held()
    await run_until_idle(queue, handler)
    assert handler.keys == ["ns/b", "ns/c", "ns/a"]


async def test_hold_keeps_the_deadline_of_a_retry() -> None:
    queue = ServiceQueue()
    queue.add_after("ns/a", 5.0)  # a requeue, say
    queue.hold("ns/a", 1.0)  # the earlier deadline wins, but the key is not held
    assert queue.held == 0
    queue.release_held()
    assert queue.delayed == 1 and len(queue) == 0
    handler = Recorder()
    runner = asyncio.create_task(queue.run(handler))
    await queue.wait_idle()
    assert handler.calls == [(1.0, "ns/a")]
    await queue.stop()
    await runner
    queue = ServiceQueue()
    queue.add("ns/b")
    queue.hold("ns/b", 1.0)  # already queued: nothing to hold
    assert queue.held == 0
    await queue.stop()


async def test_add_rate_limited_is_the_max_of_backoff_and_bucket() -> None:
    queue = ServiceQueue(qps=1, burst=2, base_backoff=1, max_backoff=1000)
    queue.add_rate_limited("a")  # backoff 1, bucket 0
    queue.add_rate_limited("b")  # backoff 1, bucket 0
    queue.add_rate_limited("c")  # backoff 1, bucket 1 (token owed)
    queue.add_rate_limited("d")  # backoff 1, bucket 2 -> 2
    assert queue.num_requeues("d") == 1
    handler = Recorder()
    await run_until_idle(queue, handler)
    assert sorted(handler.calls) == [(1.0, "a"), (1.0, "b"), (1.0, "c"), (2.0, "d")]
    assert queue.num_requeues("d") == 0  # forgotten after the successful run


async def test_failing_key_is_retried_15_times_then_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = OperatorMetrics()
    queue = ServiceQueue(metrics=metrics.workqueue)

    async def fail(_: str) -> None:
        raise RuntimeError("apiserver says no")

    handler = Recorder(fail)
    queue.add("ns/svc")
    with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller.work.queue"):
        await run_until_idle(queue, handler)
    # 1 first attempt + 15 retries, spaced 1, 2, 4, ..., 512, 1000, 1000, 1000, 1000, 1000 s.
    assert len(handler.calls) == 16
    assert handler.gaps == pytest.approx(
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000, 1000, 1000, 1000]
    )
    assert queue.num_requeues("ns/svc") == 0  # forgotten when dropped
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "Retry budget exceeded" in errors[0].getMessage()
    assert getattr(errors[0], "service", None) == "ns/svc"
    assert dropped(metrics) == 1


class Behind(Exception):
    """Stands for StaleInformerCache: a wait, not a failure."""


async def test_wait_errors_do_not_spend_the_retry_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = OperatorMetrics()
    queue = ServiceQueue(wait_errors=(Behind,), metrics=metrics.workqueue)
    outcomes = ["behind"] * 40 + ["fail", "behind", "ok"]

    async def behave(_: str) -> None:
        outcome = outcomes.pop(0)
        if outcome == "behind":
            raise Behind("cache behind our writes")
        if outcome == "fail":
            raise RuntimeError("apiserver says no")

    handler = Recorder(behave)
    queue.add("ns/svc")
    with caplog.at_level(logging.DEBUG, logger="endpointslice_operator.controller.work.queue"):
        await run_until_idle(queue, handler)
    # 40 waits (far more than the budget of 15) and nothing is dropped; the waits back off
    # 0.1, 0.2, 0.4, 0.8 s, then 1 s each; a real failure then waits the full first backoff
    # (1 s) and the next wait continues the wait backoff (1 s, capped).
    assert len(handler.calls) == 43
    assert handler.gaps == pytest.approx([0.1, 0.2, 0.4, 0.8] + [1.0] * 36 + [1.0, 1.0])
    # the one real failure is one WARNING line; the waits log nothing above DEBUG
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == [
        "Work queue endpoint_slice: a sync failed, retrying: apiserver says no"
    ]
    assert dropped(metrics) == 0
    assert queue.num_requeues("ns/svc") == 0  # forgotten after the final success


async def test_a_success_resets_the_wait_backoff() -> None:
    queue = ServiceQueue(wait_errors=(Behind,))
    outcomes = ["behind", "behind", "ok", "behind", "ok"]

    async def behave(_: str) -> None:
        if outcomes.pop(0) == "behind":
            raise Behind("cache behind our writes")

    handler = Recorder(behave)
    runner = asyncio.create_task(queue.run(handler))
    queue.add("ns/svc")
    await queue.wait_idle()
    queue.add_after("ns/svc", 10.0)
    await queue.wait_idle()
    await queue.stop()
    await runner
    # 0.1 and 0.2 s, the success; then, 10 s later, the first wait is 0.1 s again (not 0.4)
    assert handler.times == pytest.approx([0.0, 0.1, 0.3, 10.3, 10.4])


async def test_an_unexpected_error_after_a_success_is_an_error_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once per Service until it changes: a success ends it, the same bug later is told anew."""
    queue = ServiceQueue(expected_errors=(Unreachable,))
    outcomes = ["boom", "boom", "ok", "boom", "ok"]

    async def behave(_: str) -> None:
        if outcomes.pop(0) == "boom":
            raise RuntimeError("boom")

    runner = asyncio.create_task(queue.run(Recorder(behave)))
    with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller.queue"):
        queue.add("ns/svc")
        await queue.wait_idle()
        queue.add("ns/svc")
        await queue.wait_idle()
    await queue.stop()
    await runner
    assert outcomes == []
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "Unexpected error syncing ns/svc, retrying (attempt 1 of 15): RuntimeError: boom",
        "Unexpected error syncing ns/svc, retrying (attempt 1 of 15): RuntimeError: boom",
    ]


class Unreachable(Exception):
    """Stands for an expected failure (a write to an unreachable API server)."""


async def test_retries_of_one_cause_are_one_line_and_a_bug_is_an_error_with_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 28, item 7: during an outage every Service fails the same way: one WARNING line
    with a count (at most one per minute while it goes on), not one per attempt; an unexpected
    exception is ERROR with its traceback, once per Service until it changes."""
    queue = ServiceQueue(expected_errors=(Unreachable,), max_retries=100, qps=1000, burst=1000)
    keys = [f"ns/svc-{i}" for i in range(20)]
    outage_until = 300.0
    bugs = {"ns/buggy": ["boom"] * 5 + ["bang"] * 3}

    async def behave(key: str) -> None:
        if key in bugs:
            if bugs[key]:
                raise RuntimeError(bugs[key].pop(0))
            return
        if asyncio.get_running_loop().time() < outage_until:
            raise Unreachable("Cannot connect to host 127.0.0.1:6443")

    handler = Recorder(behave)
    for key in [*keys, "ns/buggy"]:
        queue.add(key)
    with caplog.at_level(logging.DEBUG, logger="endpointslice_operator.controller.work.queue"):
        await run_until_idle(queue, handler)
    attempts = len([k for k in handler.keys if k != "ns/buggy"])
    assert attempts > 20 * 8  # every Service retried, many times over the 300 s
    shown = [r for r in caplog.records if r.levelno >= logging.INFO]
    warnings = [r.getMessage() for r in shown if r.levelno == logging.WARNING]
    assert warnings[0] == (
        "Work queue endpoint_slice: a sync failed, retrying: Cannot connect to host 127.0.0.1:6443"
    )
    # then at most one line a minute, with the count so far
    assert 1 <= len(warnings) <= 1 + 300 / 60, warnings
    assert all("still failing after" in w for w in warnings[1:])
    errors = [r for r in shown if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "Unexpected error syncing ns/buggy, retrying (attempt 1 of 100): RuntimeError: boom",
        "Unexpected error syncing ns/buggy, retrying (attempt 6 of 100): RuntimeError: bang",
    ]
    assert all(r.exc_info is not None for r in errors)  # with the traceback
    assert len(shown) <= len(warnings) + len(errors) + 1  # and at most one "recovered" line


@pytest.mark.parametrize(("causes", "forgotten"), [(256, False), (257, True)])
async def test_the_queue_remembers_the_256_most_recent_causes_of_retries(
    caplog: pytest.LogCaptureFixture, causes: int, forgotten: bool
) -> None:
    """A cause of retries is remembered (its line goes on with a count) among the 256 most
    recent ones; behind 256 others it is forgotten, and its next failure is a first line."""
    queue = ServiceQueue(expected_errors=(Unreachable,), max_retries=1000, max_backoff=1.0)
    outcomes = [f"cause-{n}" for n in range(causes)] + ["cause-0", "ok"]

    async def behave(_: str) -> None:
        outcome = outcomes.pop(0)
        if outcome != "ok":
            raise Unreachable(outcome)

    queue.add("ns/svc")
    with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller.queue"):
        await run_until_idle(queue, Recorder(behave))
    assert outcomes == []
    last = caplog.records[-1].getMessage()
    if forgotten:
        assert last == "Work queue endpoint_slice: a sync failed, retrying: cause-0"
    else:  # the same cause, 256 s after its first line: the count so far
        assert last.startswith("Work queue endpoint_slice: a sync still failing after 2 attempts")


async def test_retry_lines_name_the_service_and_the_queue(caplog: pytest.LogCaptureFixture) -> None:
    """The structured fields of every retry line (JSON logs): ``service`` and ``queue``."""
    queue = ServiceQueue(name="mirroring", expected_errors=(Unreachable,), max_backoff=1.0)
    outcomes = ["down", "bug", "ok"]

    async def behave(_: str) -> None:
        outcome = outcomes.pop(0)
        if outcome == "down":
            raise Unreachable("connection refused")
        if outcome == "bug":
            raise RuntimeError("boom")

    queue.add("ns/svc")
    with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller.queue"):
        await run_until_idle(queue, Recorder(behave))
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in lines] == [
        "Work queue mirroring: a sync failed, retrying: connection refused",
        "Unexpected error syncing ns/svc, retrying (attempt 2 of 15): RuntimeError: boom",
    ]
    assert [(r.__dict__.get("service"), r.__dict__.get("queue")) for r in lines] == [
        ("ns/svc", "mirroring"),
        ("ns/svc", "mirroring"),
    ]


async def test_a_burst_of_adds_while_waiting_drops_nothing() -> None:
    """Every pod event of a burst re-adds the key at once; each attempt finds the cache behind."""
    metrics = OperatorMetrics()
    queue = ServiceQueue(wait_errors=(Behind,), max_retries=3, metrics=metrics.workqueue)
    echo = asyncio.Event()

    async def behave(_: str) -> None:
        if not echo.is_set():
            raise Behind("cache behind our writes")

    handler = Recorder(behave)
    runner = asyncio.create_task(queue.run(handler))
    for _ in range(30):
        queue.add("ns/svc")
        await asyncio.sleep(0.01)
    echo.set()
    await queue.wait_idle()
    await queue.stop()
    await runner
    assert len(handler.calls) > 3  # more attempts than the budget allows failures
    assert dropped(metrics) == 0


async def test_success_forgets_the_backoff() -> None:
    queue = ServiceQueue()
    failures = {"n": 0}

    async def fail_twice(_: str) -> None:
        if failures["n"] < 2:
            failures["n"] += 1
            raise RuntimeError("transient")

    handler = Recorder(fail_twice)
    queue.add("k")
    runner = asyncio.create_task(queue.run(handler))
    await queue.wait_idle()
    assert handler.times == [0, 1, 3]
    assert queue.num_requeues("k") == 0
    queue.add("k")  # a later failure starts again at the base delay
    failures["n"] = 1
    await queue.wait_idle()
    assert handler.times[3:] == [3, 4]
    await queue.stop()
    await runner


async def test_stop_waits_for_in_flight_handlers_and_drops_queued_keys() -> None:
    queue = ServiceQueue(workers=1)
    finished: list[str] = []

    async def slow(key: str) -> None:
        await asyncio.sleep(5)
        finished.append(key)

    handler = Recorder(slow)
    queue.add("first")
    queue.add("second")
    queue.add_after("later", 100)
    runner = asyncio.create_task(queue.run(handler))
    await asyncio.sleep(1)
    await queue.stop()
    assert now() == pytest.approx(5)
    assert finished == ["first"]
    assert runner.done()
    await runner
    queue.add("after-stop")
    assert len(queue) == 0
    assert "later" not in queue


async def test_stop_cancels_handlers_after_the_timeout() -> None:
    queue = ServiceQueue(workers=2)
    cancelled: list[str] = []

    async def stuck(key: str) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(key)
            raise

    queue.add("a")
    queue.add("b")
    runner = asyncio.create_task(queue.run(Recorder(stuck)))
    await asyncio.sleep(1)
    await queue.stop(timeout=2)
    assert now() == pytest.approx(3)
    assert sorted(cancelled) == ["a", "b"]
    await runner
    assert queue.processing == 0


async def test_cancelling_run_cancels_the_workers() -> None:
    queue = ServiceQueue(workers=2)
    queue.add("a")
    runner = asyncio.create_task(queue.run(Recorder(lambda _: asyncio.sleep(3600))))
    await asyncio.sleep(1)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert queue.shutting_down
    assert queue.processing == 0
    await queue.stop()  # idempotent afterwards


async def test_stop_before_run_makes_run_return_at_once() -> None:
    queue = ServiceQueue()
    queue.add("a")
    await queue.stop()
    handler = Recorder()
    await queue.run(handler)
    assert handler.calls == []


async def test_workqueue_metrics_follow_client_go_accounting() -> None:
    metrics = OperatorMetrics()
    queue = ServiceQueue(metrics=metrics.workqueue)
    labels = {"name": "endpoint_slice"}

    def value(name: str) -> float | None:
        return metrics.sample_value(name, labels)

    assert value("workqueue_depth") == 0
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert value("workqueue_depth") == 2
    assert value("workqueue_adds_total") == 2
    queue.add_after("c", 2)  # counted as a retry, like client-go's AddAfter
    assert value("workqueue_retries_total") == 1

    release = asyncio.Event()
    seen_in_flight: list[tuple[float | None, float | None]] = []

    async def behaviour(key: str) -> None:
        if key == "a":
            await asyncio.sleep(4)
            seen_in_flight.append(
                (
                    value("workqueue_unfinished_work_seconds"),
                    value("workqueue_longest_running_processor_seconds"),
                )
            )
            release.set()
        else:
            await release.wait()

    await run_until_idle(queue, Recorder(behaviour))
    # At t=4: "a" and "b" running since 0 and "c" since 2 -> 4 + 4 + 2 s, the longest 4 s.
    assert seen_in_flight == [(10.0, 4.0)]
    assert value("workqueue_depth") == 0
    assert value("workqueue_adds_total") == 3
    assert value("workqueue_queue_duration_seconds_count") == 3
    assert value("workqueue_queue_duration_seconds_sum") == pytest.approx(0)
    assert value("workqueue_work_duration_seconds_count") == 3
    assert value("workqueue_work_duration_seconds_sum") == pytest.approx(4 + 4 + 2)
    assert value("workqueue_unfinished_work_seconds") == 0
    assert value("workqueue_longest_running_processor_seconds") == 0


async def test_queue_duration_measures_time_spent_waiting_for_a_worker() -> None:
    metrics = OperatorMetrics()
    queue = ServiceQueue(workers=1, metrics=metrics.workqueue)
    queue.add("a")
    queue.add("b")
    await run_until_idle(queue, Recorder(lambda _: asyncio.sleep(3)))
    total = metrics.sample_value("workqueue_queue_duration_seconds_sum", {"name": "endpoint_slice"})
    assert total == pytest.approx(3)  # "a" waited 0 s, "b" 3 s


async def test_a_new_queue_under_the_same_name_takes_over_the_metrics() -> None:
    metrics = OperatorMetrics()
    first = ServiceQueue(metrics=metrics.workqueue)
    first.add("a")
    await first.stop()
    second = ServiceQueue(metrics=metrics.workqueue)  # e.g. the next leader term
    labels = {"name": "endpoint_slice"}
    assert metrics.sample_value("workqueue_depth", labels) == 0
    assert metrics.sample_value("workqueue_adds_total", labels) == 1  # counters carry on
    second.add("b")
    runner = asyncio.create_task(second.run(Recorder(lambda _: asyncio.sleep(5))))
    await asyncio.sleep(2)
    assert metrics.sample_value("workqueue_longest_running_processor_seconds", labels) == 2
    await second.stop()
    await runner


@pytest.mark.parametrize(
    "kwargs",
    [{"workers": 0}, {"qps": 0}, {"burst": 0}, {"base_backoff": 0}, {"max_retries": -1}],
)
def test_invalid_parameters_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        ServiceQueue(**kwargs)  # type: ignore[arg-type]


def test_the_smallest_valid_parameters_are_accepted() -> None:
    """The boundaries of the checks above: a burst of one token, no retries at all."""
    bucket = TokenBucket(qps=1, burst=1)
    assert bucket.reserve(0.0) == 0.0
    assert bucket.reserve(0.0) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(qps=1, burst=0)
    queue = ServiceQueue(workers=1, burst=1, max_retries=0)
    assert queue.max_retries == 0


async def test_no_retries_drops_a_failing_key_after_its_first_attempt() -> None:
    metrics = OperatorMetrics()
    queue = ServiceQueue(max_retries=0, metrics=metrics.workqueue)

    async def fail(_: str) -> None:
        raise RuntimeError("boom")

    handler = Recorder(fail)
    queue.add("ns/a")
    await run_until_idle(queue, handler)
    assert handler.keys == ["ns/a"]
    assert dropped(metrics) == 1


async def test_pending_counts_queued_and_delayed_keys() -> None:
    """``pending`` (what the batch hold weighs against the write budget) is queued plus
    delayed, a key both queued and delayed counted twice."""
    queue = ServiceQueue()
    assert queue.pending == 0
    queue.add("ns/a")
    queue.add("ns/b")
    assert queue.pending == 2
    queue.add_after("ns/c", 5)
    assert (queue.pending, queue.delayed, len(queue)) == (3, 1, 2)
    queue.add_after("ns/a", 5)  # queued and delayed
    assert queue.pending == 4
    await asyncio.sleep(6)
    assert (queue.pending, queue.delayed, len(queue)) == (3, 0, 3)


async def test_a_worker_cancelled_after_being_woken_passes_the_wake_up_on() -> None:
    """Two idle workers; a key wakes the first, which is cancelled before it runs (a stop, a
    leader change): the second must take the key, or the queue stalls with a key ready."""
    queue = ServiceQueue(workers=2)
    first = asyncio.create_task(queue._get())
    second = asyncio.create_task(queue._get())
    await asyncio.sleep(0)  # both wait for a key
    queue.add("ns/a")  # wakes the first waiter
    first.cancel()  # before it ran
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, timeout=1) == "ns/a"
    assert queue.processing == 1


def test_token_bucket_refills_by_the_time_elapsed_not_the_clock_reading() -> None:
    """A loop clock far from 0: the refill is (now - last) * qps."""
    bucket = TokenBucket(qps=1, burst=2)
    assert bucket.reserve(1000.0) == 0.0
    assert bucket.reserve(1000.0) == 0.0
    assert bucket.available(1000.5) == pytest.approx(0.5)
    assert bucket.reserve(1000.5) == pytest.approx(0.5)  # the token is 0.5 s away


def test_token_bucket_reserve_is_zero_while_a_token_is_there() -> None:
    bucket = TokenBucket(qps=2, burst=3)
    assert [bucket.reserve(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    bucket = TokenBucket(qps=1, burst=1)
    bucket.reserve(0.0)
    assert bucket.available(0.5) == pytest.approx(0.5)
    # Half a token in the bucket is not one: the reservation waits 0.5 s.
    assert bucket.reserve(0.5) == pytest.approx(0.5)
    bucket = TokenBucket(qps=1, burst=2)
    bucket.reserve(0.0)
    bucket.reserve(0.0)
    # 1.5 tokens refilled: one is there now (0 s), not "-0.5 s".
    assert bucket.reserve(1.5) == 0.0


def test_backoff_base_may_equal_the_maximum() -> None:
    backoff = ItemExponentialBackoff(2.0, 2.0)
    assert [backoff.when("k") for _ in range(3)] == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="max_backoff"):
        ItemExponentialBackoff(2.0, 1.9)


async def test_running_times_are_measured_from_when_each_key_started() -> None:
    """Keys started at loop times far from 0: the probes are now - started."""
    queue = ServiceQueue(workers=2)
    await asyncio.sleep(100)
    queue.add("a")
    runner = asyncio.create_task(queue.run(Recorder(lambda _: asyncio.sleep(10))))
    await asyncio.sleep(3)
    queue.add("b")
    await asyncio.sleep(2)
    assert queue.longest_running_processor_seconds() == pytest.approx(5)
    assert queue.unfinished_work_seconds() == pytest.approx(5 + 2)
    await queue.stop()
    await runner
