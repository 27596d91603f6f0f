"""Watch semantics: initial state, resume, server-side filtering, bookmarks, timeouts, 410."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, run_emulator
from tests.emulator.conftest import SLICES, endpoint_slice

JSON = dict[str, Any]

# Server-side timeouts and bookmark intervals run on virtual time.
pytestmark = pytest.mark.looptime


class Stream:
    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self) -> JSON:
        line = await self.response.content.readline()
        assert line, "the stream ended"
        return json.loads(line)  # type: ignore[no-any-return]

    async def rest(self) -> list[JSON]:
        """All remaining events until the server ends the stream."""
        return [json.loads(line) for line in (await self.response.content.read()).splitlines()]


@asynccontextmanager
async def watch(emu: Emulator, path: str = SLICES, **params: str) -> AsyncIterator[Stream]:
    query = {"watch": "true", **params}
    async with aiohttp.ClientSession() as session:
        async with session.get(emu.url + path, params=query) as response:
            assert response.status == 200
            yield Stream(response)


def labelled(name: str, **labels: str) -> JSON:
    return endpoint_slice(name, metadata={"labels": labels})


def summary(event: JSON) -> tuple[str, str]:
    return event["type"], event["object"]["metadata"].get("name", "")


async def test_watch_without_version_starts_with_the_current_state(emu: Emulator) -> None:
    emu.store.create(labelled("a"))
    emu.store.create(labelled("b"))
    async with watch(emu, timeoutSeconds="1") as stream:
        events = await stream.rest()
    assert [summary(e) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


async def test_resume_sends_only_later_events_in_order(emu: Emulator) -> None:
    first = emu.store.create(labelled("a"))
    emu.store.patch("endpointslices", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    emu.store.create(labelled("b"))
    emu.store.delete("endpointslices", "default", "a")
    since = first["metadata"]["resourceVersion"]
    async with watch(emu, resourceVersion=since, timeoutSeconds="1") as stream:
        events = await stream.rest()
    assert [summary(e) for e in events] == [("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(since)


async def test_live_events_arrive_after_history(emu: Emulator) -> None:
    async with watch(emu, resourceVersion=str(emu.store.resource_version)) as stream:
        emu.store.create(labelled("live"))
        assert summary(await stream.next()) == ("ADDED", "live")
        emu.store.delete("endpointslices", "default", "live")
        deleted = await stream.next()
    assert summary(deleted) == ("DELETED", "live")
    assert int(deleted["object"]["metadata"]["resourceVersion"]) == emu.store.resource_version


async def test_objects_entering_and_leaving_the_selector(emu: Emulator) -> None:
    emu.store.create(labelled("s", team="a"))
    start = str(emu.store.resource_version)
    async with watch(emu, resourceVersion=start, labelSelector="team=a") as stream:
        emu.store.patch("endpointslices", "default", "s", {"metadata": {"labels": {"team": "b"}}})
        left = await stream.next()
        emu.store.patch("endpointslices", "default", "s", {"metadata": {"labels": {"x": "1"}}})
        emu.store.patch("endpointslices", "default", "s", {"metadata": {"labels": {"team": "a"}}})
        entered = await stream.next()
        emu.store.patch("endpointslices", "default", "s", {"metadata": {"labels": {"y": "1"}}})
        modified = await stream.next()
    assert summary(left) == ("DELETED", "s")
    assert left["object"]["metadata"]["labels"]["team"] == "b"  # the new state, as the cacher does
    assert summary(entered) == ("ADDED", "s")
    assert summary(modified) == ("MODIFIED", "s")


async def test_selector_transitions_replayed_from_the_history(emu: Emulator) -> None:
    # The same transitions as above, but committed before the watch starts: the watch replays
    # them from the history, which keeps the old and new states encoded only.
    emu.store.create(labelled("s", team="a"))
    start = str(emu.store.resource_version)
    for labels in ({"team": "b"}, {"x": "1"}, {"team": "a"}, {"y": "1"}):
        emu.store.patch("endpointslices", "default", "s", {"metadata": {"labels": labels}})
    async with watch(
        emu, resourceVersion=start, labelSelector="team=a", timeoutSeconds="1"
    ) as stream:
        events = await stream.rest()
    assert [summary(e) for e in events] == [("DELETED", "s"), ("ADDED", "s"), ("MODIFIED", "s")]
    assert events[0]["object"]["metadata"]["labels"]["team"] == "b"


async def test_field_selector_and_namespace_filtering(emu: Emulator) -> None:
    emu.store.create_namespace("other")
    async with watch(
        emu, "/api/v1/pods", fieldSelector="spec.nodeName=n1", resourceVersion="1"
    ) as stream:
        emu.store.create(_pod("elsewhere", "n2"))
        emu.store.create(_pod("other-ns", "n1"), namespace="other")
        assert summary(await stream.next()) == ("ADDED", "other-ns")
    async with watch(
        emu, "/api/v1/namespaces/default/pods", resourceVersion="1", timeoutSeconds="1"
    ) as stream:
        events = await stream.rest()
    assert [summary(e) for e in events] == [("ADDED", "elsewhere")]


def _pod(name: str, node: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
    }


async def test_too_old_version_is_an_expired_error_event() -> None:
    async with run_emulator(history_size=3) as emu:
        first = emu.store.create(labelled("a"))
        for step in range(5):
            emu.store.patch(
                "endpointslices", "default", "a", {"metadata": {"labels": {"s": str(step)}}}
            )
        async with watch(emu, resourceVersion=first["metadata"]["resourceVersion"]) as stream:
            events = await stream.rest()
        assert len(events) == 1
        error = events[0]
        assert error["type"] == "ERROR"
        assert error["object"]["code"] == 410
        assert error["object"]["reason"] == "Expired"
        assert error["object"]["message"].startswith("too old resource version: ")
        # Within the window, resuming still works.
        recent = str(emu.store.resource_version - 2)
        async with watch(emu, resourceVersion=recent, timeoutSeconds="1") as stream:
            assert len(await stream.rest()) == 2


async def test_bookmarks_when_asked() -> None:
    async with run_emulator(bookmark_interval=0.05) as emu:
        emu.store.create(labelled("a"))
        async with watch(emu, resourceVersion="0", allowWatchBookmarks="true") as stream:
            assert summary(await stream.next()) == ("ADDED", "a")
            emu.store.create_namespace("unrelated")  # bumps the global resourceVersion
            bookmark = await stream.next()
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["kind"] == "EndpointSlice"
        assert bookmark["object"]["metadata"]["resourceVersion"] == str(emu.store.resource_version)
        async with watch(emu, resourceVersion="0", timeoutSeconds="1") as stream:
            assert [e["type"] for e in await stream.rest()] == ["ADDED"]  # none unless asked


async def test_initial_events_end_with_an_annotated_bookmark(emu: Emulator) -> None:
    emu.store.create(labelled("a"))
    params = {
        "sendInitialEvents": "true",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
    }
    async with watch(emu, **params) as stream:
        added = await stream.next()
        bookmark = await stream.next()
    assert summary(added) == ("ADDED", "a")
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_timeout_ends_the_stream_and_unregisters(emu: Emulator) -> None:
    async with watch(emu, resourceVersion="0", timeoutSeconds="1") as stream:
        assert await stream.rest() == []
    assert emu.store.snapshot_stats()["watchers"] == {}


async def test_watch_of_a_single_object_by_name(emu: Emulator) -> None:
    emu.store.create(labelled("a"))
    emu.store.create(labelled("b"))
    async with watch(emu, SLICES + "/b", timeoutSeconds="1") as stream:
        events = await stream.rest()
    assert [summary(e) for e in events] == [("ADDED", "b")]


async def test_a_bookmark_comes_just_before_the_timeout(emu: Emulator) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with watch(
        emu, resourceVersion="0", allowWatchBookmarks="true", timeoutSeconds="10"
    ) as stream:
        bookmark = await stream.next()
        at = loop.time() - started
        assert await stream.rest() == []
    assert bookmark["type"] == "BOOKMARK"
    assert at == pytest.approx(8, abs=0.1)
    assert loop.time() - started == pytest.approx(10, abs=0.1)


async def test_compaction_expires_older_versions_and_ending_watches_of_one_resource() -> None:
    async with run_emulator() as emu:
        first = emu.store.create(labelled("a"))
        emu.store.delete("endpointslices", "default", "a")
        before = first["metadata"]["resourceVersion"]
        # Within the history, a resumption sees the deletion.
        async with watch(emu, resourceVersion=before, timeoutSeconds="1") as stream:
            assert [e["type"] for e in await stream.rest()] == ["DELETED"]
        async with (
            watch(emu, resourceVersion="0") as slices,
            watch(emu, "/api/v1/pods", resourceVersion="0", timeoutSeconds="5") as pods,
        ):
            emu.store.close_watchers("endpointslices")
            assert await slices.rest() == []  # ended, as a server-side timeout ends it
            emu.store.create_namespace("unrelated")
            assert not pods.response.content.at_eof()  # the other resource's watch goes on
        # Compacted: the same resumption is 410 Expired, the deletion no longer told.
        compacted = emu.store.compact("endpointslices")
        assert compacted == emu.store.resource_version - 1  # the namespace came after
        async with watch(emu, resourceVersion=before) as stream:
            (error,) = await stream.rest()
        assert (error["type"], error["object"]["code"]) == ("ERROR", 410)
        async with watch(emu, resourceVersion=str(compacted), timeoutSeconds="1") as stream:
            assert await stream.rest() == []
