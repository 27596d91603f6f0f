"""Serving EndpointSelectors (``endpoint_selector_watch``): the listing, then Kopf's handler of
their events, against the emulator over HTTP, with the keys each event queues seen by a worker
of the queue."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.endpoint_selector.index import EndpointSelectorIndex
from endpointslice_operator.controller.endpoint_selector.watch import (
    serve_endpoint_selectors,
)
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.metrics import ApiServingMetrics
from endpointslice_operator.reconciler.endpoint_selector import GROUP, PLURAL
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.view import open_api_client
from tests.e2e.harness import NS, eventually
from tests.e2e.selector_helpers import endpoint_selector, install_crd, selector_body

ME = "example.io"


def key(name: str) -> str:
    return ENDPOINT_SELECTOR.key(NS, name)


class Served:
    """The index, and the keys the queue's worker was given, in order."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.indexes = Indexes(
            enabled_annotation=f"{ME}/enabled", selector_annotation=f"{ME}/selector", managed_by=ME
        )
        self.router = EventRouter(
            indexes=self.indexes, tracker=EndpointSliceTracker(), topology=None, batch_period=0.0
        )
        self.queue = ServiceQueue(workers=1)
        self.router.queue = self.queue
        self.index = EndpointSelectorIndex(self.indexes.services)
        self.synced: list[str] = []

    async def sync(self, key: str) -> None:
        self.synced.append(key)

    def stored(self, name: str) -> dict[str, Any]:
        found = self.emu.store.get("endpointselectors", NS, name)
        assert found is not None
        return found

    def ready(self, name: str) -> dict[str, Any] | None:
        conditions = (self.stored(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("type") == "Ready"), None)

    def status_patches(self, name: str) -> int:
        return self.emu.requests.count(
            verb="patch", resource="endpointselectors", name=name, subresource="status"
        )


def prepare(emu: Emulator) -> None:
    emu.store.create_namespace(NS)
    install_crd(emu)


@contextlib.asynccontextmanager
async def serving(emu: Emulator) -> AsyncIterator[Served]:
    served = Served(emu)
    api = await open_api_client(emu.kubeconfig_path)
    worker = asyncio.create_task(served.queue.run(served.sync))
    task = asyncio.create_task(
        serve_endpoint_selectors(
            api, api.configuration, served.index, served.router, served.index.keys
        )
    )
    try:
        yield served
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await served.queue.stop(timeout=5)
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
        await api.close()


async def test_the_listing_fills_the_index_and_queues_every_key_then_events_follow() -> None:
    async with run_emulator() as emu:
        prepare(emu)
        endpoint_selector(emu, "listed", match_labels={"app": "web"})
        async with serving(emu) as s:
            await eventually(lambda: s.index.synced, timeout=30)
            assert s.index.served
            await eventually(lambda: s.synced == [key("listed")], timeout=30)
            # Kopf writes the Ready condition of the listed object.
            await eventually(lambda: s.ready("listed") is not None, timeout=30)
            assert s.ready("listed")["status"] == "True"  # type: ignore[index]
            assert s.stored("listed")["status"]["observedGeneration"] == 1
            # A new object: indexed, queued, given its condition.
            endpoint_selector(emu, "new", match_labels={"app": "new"})
            await eventually(lambda: s.ready("new") is not None, timeout=30)
            entry = s.index.get(key("new"))
            assert entry is not None and entry.namespace == NS and entry.name == "new"
            await eventually(lambda: key("new") in s.synced, timeout=30)
            # Deleted: out of the index and queued (its sync deletes the slices).
            s.synced.clear()
            emu.store.delete("endpointselectors", NS, "new")
            await eventually(lambda: s.index.get(key("new")) is None, timeout=30)
            await eventually(lambda: s.synced == [key("new")], timeout=30)


async def test_only_what_a_sync_reads_queues_the_key_and_status_is_written_when_it_differs() -> (
    None
):
    async with run_emulator() as emu:
        prepare(emu)
        endpoint_selector(emu, "sel", match_labels={"app": "web"})
        async with serving(emu) as s:

            def change(edit: Any) -> None:
                current = s.stored("sel")
                edit(current)
                emu.store.update(current)

            async def handled(ready: int, total: int) -> None:
                """Change the counts in the status (a change no sync reads) and wait until its
                event was handled: every event before it was too (one object's events are
                handled in order)."""
                change(lambda o: o["status"].update({"endpoints": total, "readyEndpoints": ready}))
                await eventually(lambda: s.index.shown.get(key("sel")) == (ready, total))
                await s.queue.wait_idle()

            await eventually(lambda: s.ready("sel") is not None, timeout=30)
            await eventually(lambda: s.synced == [key("sel")], timeout=30)
            patches = s.status_patches("sel")
            # Our own status patch coming back, and counts in the status: nothing a sync reads
            # changed, and the status is as desired.
            await handled(2, 3)
            assert s.synced == [key("sel")]
            assert s.status_patches("sel") == patches
            # A label (a sync reads them: the slices copy them) queues it; nothing is written.
            change(lambda o: o["metadata"].setdefault("labels", {}).update({"team": "a"}))
            await handled(1, 3)
            assert s.synced == [key("sel")] * 2
            assert s.status_patches("sel") == patches
            # The spec (and so the generation): queued, and the status follows.
            spec = selector_body("sel", match_labels={"app": "x"})["spec"]
            change(lambda o: o["spec"].update(spec))
            await eventually(
                lambda: s.stored("sel")["status"].get("observedGeneration") == 2, timeout=30
            )
            await s.queue.wait_idle()
            assert s.synced == [key("sel")] * 3
            # A spec made invalid: the condition says so.
            change(lambda o: o["spec"].update({"ports": [{"name": "http", "port": 0}]}))
            await eventually(lambda: (s.ready("sel") or {}).get("status") == "False", timeout=30)
            await s.queue.wait_idle()
            assert s.synced == [key("sel")] * 4


@pytest.mark.looptime(resolution=1 / 1024)
async def test_a_crd_deleted_then_installed_again_is_dropped_then_served_again() -> None:
    async with run_emulator() as emu:
        prepare(emu)
        endpoint_selector(emu, "before", match_labels={"app": "web"})
        served = Served(emu)
        metrics = ApiServingMetrics(CollectorRegistry())
        api = await open_api_client(emu.kubeconfig_path)
        worker = asyncio.create_task(served.queue.run(served.sync))
        task = asyncio.create_task(
            serve_endpoint_selectors(
                api,
                api.configuration,
                served.index,
                served.router,
                served.index.keys,
                api_serving=metrics,
            )
        )

        def gauge() -> float:
            return metrics.served.labels(GROUP, PLURAL)._value.get()  # type: ignore[no-any-return]

        try:
            for _ in range(2):  # any number of times
                await eventually(lambda: served.index.get(key("before")) is not None, timeout=60)
                assert gauge() == 1
                served.synced.clear()
                # The CRD deleted: discovery no longer serves the group.
                emu.store.registry.unserved.add(GROUP)
                await eventually(lambda: len(served.index) == 0, timeout=60)
                # Its EndpointSelectors are dropped and queued (their syncs remove the slices).
                await eventually(lambda: served.synced == [key("before")], timeout=60)
                assert gauge() == 0
                # Installed again: listed, served again, and a new one is served.
                install_crd(emu)
                await eventually(lambda: gauge() == 1, timeout=600)
                endpoint_selector(emu, "after", match_labels={"app": "new"})
                await eventually(lambda: served.ready("after") is not None, timeout=60)
                await eventually(lambda: key("after") in served.synced, timeout=60)
                emu.store.delete("endpointselectors", NS, "after")
                await eventually(lambda: served.index.get(key("after")) is None, timeout=60)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await served.queue.stop(timeout=5)
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
            await api.close()
