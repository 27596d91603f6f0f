"""resourceVersion bookkeeping behind the reset detection (controller/reset.py)."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.controller.api.reset import (
    StateReset,
    Watermark,
    WriteFence,
    is_too_large_resource_version,
    parse_version,
)

# As kube-apiserver v1.24 answers a list at a resourceVersion it has not reached.
TOO_LARGE = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": "Timeout: Too large resource version: 99999999, current: 738",
    "reason": "Timeout",
    "details": {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    },
    "code": 504,
}


def test_only_decimal_versions_count() -> None:
    assert parse_version("123") == 123
    assert parse_version("") is None
    assert parse_version("12a") is None
    assert parse_version("-1") is None
    assert parse_version(None) is None


def test_the_watermark_keeps_the_highest_version() -> None:
    mark = Watermark()
    for version in ("5", "9", "7", "opaque", None):
        mark.observe(version)
    assert mark.value == 9


def test_a_server_behind_the_watermark_was_reset() -> None:
    mark = Watermark()
    mark.observe("500")
    assert mark.is_behind("12")
    assert not mark.is_behind("500")
    assert not mark.is_behind("900")
    assert not mark.is_behind("not-a-number")
    # Compared with the mark as read before the request, not as it is after it.
    assert mark.is_behind("400", 450)
    assert not mark.is_behind("400", 300)


def test_too_large_resource_version_is_recognised_by_cause_or_message() -> None:
    assert is_too_large_resource_version(TOO_LARGE)
    assert is_too_large_resource_version({"message": TOO_LARGE["message"], "code": 504})
    assert not is_too_large_resource_version({"reason": "Expired", "code": 410})
    assert not is_too_large_resource_version({"reason": "Timeout", "code": 504})


@pytest.mark.looptime
async def test_the_fence_holds_writes_while_a_reset_is_suspected() -> None:
    fence = WriteFence(Watermark())
    await fence.admit()  # open: at once
    fence.suspect("a watch broke")
    assert await fence.wait_for_suspicion(10)  # the probe is asked for at once
    writer = asyncio.create_task(fence.admit())
    await asyncio.sleep(5)
    assert not writer.done() and fence.held_writes == 1
    fence.suspect("another watch broke")
    assert fence.suspicions == 2 and not writer.done()
    fence.verified()  # the probe's answer: the server is not behind
    await asyncio.wait_for(writer, 1)
    assert not await fence.wait_for_suspicion(10)  # nothing wanted any more


@pytest.mark.looptime
async def test_a_closed_fence_refuses_every_write_held_or_later() -> None:
    fence = WriteFence(Watermark())
    fence.suspect("a watch broke")
    held = asyncio.create_task(fence.admit())
    await asyncio.sleep(1)
    fence.close("the server is at resourceVersion 10, below the 500 already seen")
    with pytest.raises(StateReset):
        await held
    with pytest.raises(StateReset):
        await fence.admit()
    fence.suspect("anything")  # changes nothing once closed
    fence.verified()
    with pytest.raises(StateReset):
        await fence.admit()


def test_a_write_answered_below_what_was_seen_before_it_closes_the_fence() -> None:
    mark = Watermark()
    mark.observe("500")
    fence = WriteFence(mark)
    resets: list[str] = []
    fence.on_reset = resets.append
    # Other writes' events raised the mark while ours was in flight: not a reset.
    mark.observe("520")
    fence.written({"metadata": {"resourceVersion": "510"}}, 500, "PUT a")
    assert fence.closed is None and resets == []
    with pytest.raises(StateReset):
        fence.written({"metadata": {"resourceVersion": "12"}}, 520, "PUT b")
    assert fence.closed is not None and len(resets) == 1
    assert "PUT b was written at resourceVersion 12, below the 520" in resets[0]
