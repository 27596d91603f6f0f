"""Kopf's re-listing of this cluster's ServiceExports: what it left out is asked for, and only a
404 drops it from the multi-cluster cache (virtual time: looptime)."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.controller.mcs.cache import Key, LocalCache
from endpointslice_operator.controller.mcs.kopf_handlers import RELIST_QUIET_PERIOD, Relisting

pytestmark = pytest.mark.looptime


def export(name: str) -> dict[str, object]:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": "1"}}


async def test_a_relisting_forgets_only_what_the_server_says_is_gone() -> None:
    changed: list[Key] = []
    cache = LocalCache(changed.append, "ours")
    for name in ("kept", "gone", "unanswered"):
        cache.handler("serviceexports")("ADDED", export(name))
    asked: list[Key] = []

    async def exists(kind: str, key: Key) -> bool:
        assert kind == "serviceexports"
        asked.append(key)
        return key[1] != "gone"  # "unanswered": a failed check counts as there

    relisting = Relisting("serviceexports", cache, exists)
    changed.clear()
    relisting.note(None, ("ns", "kept"))  # a listing event: the re-listing starts
    await asyncio.sleep(RELIST_QUIET_PERIOD / 2)
    relisting.note("ADDED", ("ns", "new"))  # delivered while it runs: not asked for
    await asyncio.sleep(RELIST_QUIET_PERIOD / 2)
    assert asked == []  # not quiet long enough yet
    await asyncio.sleep(RELIST_QUIET_PERIOD)
    assert sorted(asked) == [("ns", "gone"), ("ns", "unanswered")]
    assert set(cache.exports) == {("ns", "kept"), ("ns", "unanswered")}
    assert changed == [("ns", "gone")]
    assert (relisting.checked, relisting.forgotten, relisting.seen) == (2, 1, None)


async def test_events_outside_a_relisting_start_nothing() -> None:
    cache = LocalCache(lambda _key: None, "ours")
    cache.handler("serviceexports")("ADDED", export("a"))

    async def exists(kind: str, key: Key) -> bool:
        raise AssertionError("nothing to check")

    relisting = Relisting("serviceexports", cache, exists)
    relisting.note("MODIFIED", ("ns", "a"))
    relisting.note("DELETED", ("ns", "b"))
    assert relisting.task is None and relisting.seen is None
    await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
    assert set(cache.exports) == {("ns", "a")}
