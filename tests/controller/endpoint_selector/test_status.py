"""The leader's writer of EndpointSelectors' endpoint counts (``endpoint_selector_status``),
against the emulator over HTTP: which objects are patched, what a failed write leaves, and the
rounds on virtual time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.controller.api.reset import Watermark, WriteFence
from endpointslice_operator.controller.cache.indexes import ServiceIndex
from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointCounts,
    EndpointSelectorIndex,
)
from endpointslice_operator.controller.endpoint_selector.status import (
    STATUS_INTERVAL,
    keep_writing_counts,
    status_writer,
    write_counts,
)
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.view import open_api_client

NS = "ns"
GROUP = "endpointslice-operator.io"
LOGGER = "endpointslice_operator.controller.endpoint_selector.status"
WARNING = "could not write the status of EndpointSelector "


def new_index() -> EndpointSelectorIndex:
    return EndpointSelectorIndex(
        ServiceIndex(
            enabled_annotation="example.com/enabled",
            selector_annotation="example.com/selector",
            managed_by="ours",
        )
    )


def create(emu: Emulator, name: str, shown: EndpointCounts | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        },
    }
    if shown is not None:
        body["status"] = {"endpoints": shown.total, "readyEndpoints": shown.ready}
    return emu.store.create(body)


def file(
    emu: Emulator,
    index: EndpointSelectorIndex,
    name: str,
    counts: EndpointCounts | None,
    shown: EndpointCounts | None = None,
) -> str:
    """Create the object in the API server, let the index see it (as its watch would) and
    record the counts a sync published; its key."""
    _, entry = index.upsert(create(emu, name, shown))
    if counts is not None:
        index.counts[entry.key] = counts
    return entry.key


def status(emu: Emulator, name: str) -> dict[str, Any]:
    stored = emu.store.get("endpointselectors", NS, name)
    assert stored is not None
    return dict(stored.get("status") or {})


def patches(emu: Emulator, code: int | None = None) -> int:
    if code is None:
        return emu.requests.count(verb="patch", resource="endpointselectors", subresource="status")
    return emu.requests.count(
        verb="patch", resource="endpointselectors", subresource="status", code=code
    )


def warned_about(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The keys of the objects a warning was logged about."""
    found = []
    for record in caplog.records:
        if record.name == LOGGER and record.levelno >= logging.WARNING:
            message = record.getMessage()
            assert message.startswith(WARNING), message
            found.append(message.removeprefix(WARNING).partition(": ")[0])
    return found


@contextlib.asynccontextmanager
async def emulator() -> AsyncIterator[Emulator]:
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.registry.unserved.discard(GROUP)  # the CRD installed
        yield emu


async def test_only_counts_that_differ_from_the_status_are_written() -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        # Counts of an object the index no longer holds (deleted meanwhile): skipped.
        index.counts[ENDPOINT_SELECTOR.key(NS, "gone")] = EndpointCounts(ready=9, total=9)
        three, two = EndpointCounts(ready=3, total=3), EndpointCounts(ready=2, total=2)
        same = file(emu, index, "same", three, shown=three)
        file(emu, index, "unknown", None)  # no sync published yet
        moved = file(emu, index, "moved", EndpointCounts(ready=1, total=2), shown=two)
        new = file(emu, index, "new", EndpointCounts(ready=0, total=1))
        assert await write_counts(status_writer(api), index) == 2
        assert patches(emu) == 2
        assert status(emu, "moved") == {"endpoints": 2, "readyEndpoints": 1}
        assert status(emu, "new") == {"endpoints": 1, "readyEndpoints": 0}
        assert status(emu, "same") == {"endpoints": 3, "readyEndpoints": 3}
        assert status(emu, "unknown") == {}
        # What was written is taken as shown until the object's own watch event says so: a
        # round before that event writes nothing again.
        assert index.shown[moved] == EndpointCounts(ready=1, total=2)
        assert index.shown[new] == EndpointCounts(ready=0, total=1)
        assert await write_counts(status_writer(api), index) == 0
        assert patches(emu) == 2
        # Counts that move again are written again.
        index.counts[same] = EndpointCounts(ready=2, total=3)
        assert await write_counts(status_writer(api), index) == 1
        assert status(emu, "same") == {"endpoints": 3, "readyEndpoints": 2}


async def test_an_object_gone_from_the_server_is_skipped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        gone = file(emu, index, "gone", EndpointCounts(ready=1, total=1))
        file(emu, index, "kept", EndpointCounts(ready=2, total=2))
        emu.store.delete("endpointselectors", NS, "gone")  # its DELETED event not seen yet
        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            assert await write_counts(status_writer(api), index) == 1
        assert patches(emu, code=404) == 1
        assert status(emu, "kept") == {"endpoints": 2, "readyEndpoints": 2}
        assert warned_about(caplog) == []  # its DELETED event is on its way: nothing to say
        assert gone not in index.shown


async def test_a_refused_write_is_logged_the_next_object_still_written_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        first = file(emu, index, "first", EndpointCounts(ready=1, total=1))
        second = file(emu, index, "second", EndpointCounts(ready=2, total=2))
        emu.faults.fault_verbs = {"patch"}
        emu.faults.fault_resources = {"endpointselectors"}
        emu.faults.fail_codes = (500,)
        emu.faults.fail_rate = 1.0
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert await write_counts(status_writer(api), index) == 0
        assert patches(emu, code=500) == 2  # the second was tried after the first failed
        assert warned_about(caplog) == [first, second]
        assert index.shown == {}
        # The next round tries again.
        emu.faults.fail_rate = 0.0
        assert await write_counts(status_writer(api), index) == 2
        assert status(emu, "first") == {"endpoints": 1, "readyEndpoints": 1}
        assert status(emu, "second") == {"endpoints": 2, "readyEndpoints": 2}


async def test_a_broken_connection_is_logged_per_object_and_nothing_taken_as_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    index = new_index()
    async with emulator() as emu:
        keys = [file(emu, index, n, EndpointCounts(ready=1, total=1)) for n in ("a", "b")]
        emulator_config = Path(emu.kubeconfig_path).read_text()
        emulator_port = emu.port
    accepted = 0

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        writer.close()  # the connection breaks before any answer

    # A server of our own at an address of our own (no other test's can take it meanwhile).
    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    kubeconfig.write_text(emulator_config.replace(f":{emulator_port}", f":{port}"))
    async with server, await open_api_client(kubeconfig) as api:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert await write_counts(status_writer(api), index) == 0
    assert accepted >= 2  # both were tried
    assert warned_about(caplog) == keys
    assert index.shown == {}


@pytest.mark.looptime
async def test_a_write_unanswered_for_30_s_is_given_up_and_the_next_tried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        keys = [file(emu, index, n, EndpointCounts(ready=1, total=1)) for n in ("a", "b")]
        emu.faults.fault_verbs = {"patch"}
        emu.faults.fault_resources = {"endpointselectors"}
        emu.faults.latency = 30.5  # beyond the write's 30 s
        loop = asyncio.get_running_loop()
        started = loop.time()
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert await write_counts(status_writer(api), index) == 0
        assert loop.time() - started == pytest.approx(60.0, abs=0.1)  # 30 s each
        assert warned_about(caplog) == keys
        assert index.shown == {}
        # An answer within the 30 s is a write.
        emu.faults.latency = 29.5
        await asyncio.sleep(5)  # the given-up requests end on the server
        assert await write_counts(status_writer(api), index) == 2
        assert [index.shown[key] for key in keys] == [EndpointCounts(ready=1, total=1)] * 2


@pytest.mark.looptime
async def test_counts_that_move_during_the_write_are_not_taken_as_shown() -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        moving = file(emu, index, "moving", EndpointCounts(ready=1, total=1))
        dropped = file(emu, index, "dropped", EndpointCounts(ready=1, total=1))
        emu.faults.fault_verbs = {"patch"}
        emu.faults.fault_resources = {"endpointselectors"}
        emu.faults.latency = 1.0
        writing = asyncio.create_task(write_counts(status_writer(api), index))
        await asyncio.sleep(0.5)  # the first write is in flight
        index.counts[moving] = EndpointCounts(ready=0, total=1)
        await asyncio.sleep(1.0)  # the second
        index.remove(NS, "dropped")  # deleted meanwhile: the index keeps nothing of it
        assert await writing == 2
        assert moving not in index.shown
        assert dropped not in index.shown and dropped not in index.counts
        assert status(emu, "moving") == {"endpoints": 1, "readyEndpoints": 1}
        # The next round writes the counts as they are now.
        assert await write_counts(status_writer(api), index) == 1
        assert status(emu, "moving") == {"endpoints": 1, "readyEndpoints": 0}
        assert index.shown[moving] == EndpointCounts(ready=0, total=1)


@pytest.mark.looptime
async def test_rounds_every_interval_on_the_leader_once_synced() -> None:
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        key = file(emu, index, "sel", EndpointCounts(ready=1, total=2))
        leading = False
        task = asyncio.create_task(keep_writing_counts(status_writer(api), index, lambda: leading))
        try:
            # Not synced yet (a sync's counts may still be missing), then synced but not leading.
            await asyncio.sleep(3 * STATUS_INTERVAL + 0.5)
            index.synced = True
            await asyncio.sleep(3 * STATUS_INTERVAL)
            leading = True
            assert patches(emu) == 0
            await asyncio.sleep(STATUS_INTERVAL - 1)  # 6 intervals and 4.5 s since the start
            assert patches(emu) == 0
            await asyncio.sleep(1)  # the 7th round
            assert patches(emu) == 1
            assert status(emu, "sel") == {"endpoints": 2, "readyEndpoints": 1}
            # Counts moving every second are written once per interval.
            for ready in (0, 2, 1, 0, 2, 1, 0, 2, 1, 0):
                index.counts[key] = EndpointCounts(ready=ready, total=2)
                await asyncio.sleep(1)
            assert patches(emu) == 1 + 2
            assert not task.done()
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_no_count_is_written_once_the_rounds_fence_is_closed() -> None:
    # After a reset of the API server the counts predate it: the fence refuses the write,
    # and the round's writes end there.
    async with emulator() as emu, await open_api_client(emu.kubeconfig_path) as api:
        index = new_index()
        for name in ("a", "b"):
            file(emu, index, name, EndpointCounts(ready=1, total=1))
        fence = WriteFence(Watermark())
        writer = status_writer(api, fence)
        assert await write_counts(writer, index) == 2
        index.counts = {key: EndpointCounts(ready=0, total=1) for key in index.counts}
        fence.close("the API server was reset")
        assert await write_counts(writer, index) == 0
        assert patches(emu) == 2
