"""Kopf's re-listing of this cluster's ServiceExports and ServiceImports: what it left out is
asked for (over HTTP, the emulator serving the MCS API), and only an answer that it is gone
drops it from the multi-cluster cache (virtual time: looptime)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import Configuration
from prometheus_client import CollectorRegistry

from endpointslice_operator.controller.api.client import OperatorApiClient
from endpointslice_operator.controller.mcs.cache import Key, LocalCache
from endpointslice_operator.controller.mcs.kopf_handlers import (
    GROUP,
    relistings_of,
    serve_exports_and_imports,
)
from endpointslice_operator.controller.watch.kopf_wiring import load_client_configuration
from endpointslice_operator.controller.watch.relist import COUNT_INTERVAL, RELIST_QUIET_PERIOD
from endpointslice_operator.metrics import ApiServingMetrics
from endpointslice_operator.testing import Emulator, run_emulator
from tests.e2e.harness import eventually, settings
from tests.e2e.watch_gap import miss_deletions

pytestmark = pytest.mark.looptime

NS = "ns"


def create(emu: Emulator, kind: str, name: str) -> dict[str, object]:
    obj = emu.store.create(
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": kind,
            "metadata": {"namespace": NS, "name": name},
            "spec": {},
        }
    )
    return dict(obj)


@contextlib.asynccontextmanager
async def mcs_api() -> AsyncIterator[tuple[Emulator, Configuration, OperatorApiClient]]:
    """An emulator serving the MCS API, with a namespace NS, and a client of it."""
    async with run_emulator() as emu:
        emu.store.registry.unserved.discard(GROUP)
        emu.store.create_namespace(NS)
        configuration = await load_client_configuration(settings(emu))
        async with OperatorApiClient(configuration) as api_client:
            yield emu, configuration, api_client


async def test_a_relisting_forgets_only_what_the_server_says_is_gone() -> None:
    async with mcs_api() as (emu, _, api_client):
        changed: list[Key] = []
        cache = LocalCache(changed.append, "ours")
        for name in ("kept", "gone", "still-there", "recreated"):
            cache.handler("serviceexports")("ADDED", create(emu, "ServiceExport", name))
        cache.handler("serviceimports")("ADDED", create(emu, "ServiceImport", "import"))
        emu.store.delete("serviceexports", NS, "gone")
        emu.store.delete("serviceexports", NS, "recreated")
        create(emu, "ServiceExport", "recreated")  # another object under the name
        relistings = relistings_of(api_client, cache)
        exports = relistings["serviceexports"]
        changed.clear()
        exports.note(None, (NS, "kept"))  # Kopf lists again: the re-listing starts
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert set(cache.exports) == {(NS, "kept"), (NS, "still-there")}
        assert sorted(changed) == [(NS, "gone"), (NS, "recreated")]
        assert (exports.checked, exports.forgotten) == (3, 2)
        # ServiceImports have a re-listing of their own: nothing started there.
        assert relistings["serviceimports"].checked == 0
        assert set(cache.imports) == {(NS, "import")}
        emu.store.delete("serviceimports", NS, "import")
        relistings["serviceimports"].begin()
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert cache.imports == {}


async def test_events_outside_a_relisting_start_nothing() -> None:
    async with mcs_api() as (emu, _, api_client):
        cache = LocalCache(lambda _key: None, "ours")
        cache.handler("serviceexports")("ADDED", create(emu, "ServiceExport", "a"))
        emu.store.delete("serviceexports", NS, "a")
        exports = relistings_of(api_client, cache)["serviceexports"]
        exports.note("MODIFIED", (NS, "a"))
        exports.note("DELETED", (NS, "b"))
        assert not exports.running
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert set(cache.exports) == {(NS, "a")}
        assert emu.requests.count(verb="get", resource="serviceexports") == 0


async def test_kopf_relisting_after_410_drops_the_export_deleted_meanwhile() -> None:
    async with mcs_api() as (emu, configuration, api_client):
        for name in ("kept", "gone"):
            create(emu, "ServiceExport", name)
        create(emu, "ServiceImport", "import")
        changed: list[Key] = []
        cache = LocalCache(changed.append, "ours")
        serving = asyncio.create_task(
            serve_exports_and_imports(api_client, configuration, cache, namespaces=[NS])
        )
        try:
            await eventually(
                lambda: emu.requests.count(verb="watch", resource="serviceexports") > 0
            )
            assert set(cache.exports) == {(NS, "kept"), (NS, "gone")}
            assert set(cache.imports) == {(NS, "import")}
            # Kopf's handlers see the events.
            create(emu, "ServiceExport", "new")
            await eventually(lambda: (NS, "new") in cache.exports)
            # A deletion in the gap between Kopf's expired watch and its re-listing.
            await miss_deletions(emu, "serviceexports", NS, ("gone",))
            changed.clear()
            await eventually(lambda: (NS, "gone") not in cache.exports, timeout=60)
            assert set(cache.exports) == {(NS, "kept"), (NS, "new")}
            assert (NS, "gone") in changed
            assert emu.requests.count(verb="get", resource="serviceexports") == 1
            assert set(cache.imports) == {(NS, "import")}
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving


async def test_the_last_export_deleted_in_the_gap_is_found_by_the_count() -> None:
    # Kopf's re-listing delivers nothing, so its handlers see no event: the count finds it.
    async with mcs_api() as (emu, configuration, api_client):
        create(emu, "ServiceExport", "gone")
        cache = LocalCache(lambda _key: None, "ours")
        serving = asyncio.create_task(
            serve_exports_and_imports(api_client, configuration, cache, namespaces=[NS])
        )
        try:
            await eventually(lambda: emu.requests.count(verb="watch", resource="serviceexports"))
            started = asyncio.get_running_loop().time()
            await miss_deletions(emu, "serviceexports", NS, ("gone",))
            await asyncio.sleep(35)  # Kopf has listed again: nothing
            assert set(cache.exports) == {(NS, "gone")}
            await eventually(lambda: not cache.exports, timeout=COUNT_INTERVAL)
            assert asyncio.get_running_loop().time() - started <= COUNT_INTERVAL + 5
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving


async def test_the_crds_deleted_then_installed_again_are_dropped_then_served_again() -> None:
    async with mcs_api() as (emu, configuration, api_client):
        create(emu, "ServiceExport", "web")
        create(emu, "ServiceImport", "web")
        changed: list[Key] = []
        cache = LocalCache(changed.append, "ours")
        metrics = ApiServingMetrics(CollectorRegistry())

        def served() -> float:
            value = metrics.served.labels(GROUP, "serviceexports")._value.get()
            return value  # type: ignore[no-any-return]

        serving = asyncio.create_task(
            serve_exports_and_imports(
                api_client, configuration, cache, namespaces=[NS], api_serving=metrics
            )
        )
        try:
            for _ in range(2):
                await eventually(lambda: (NS, "web") in cache.exports, timeout=60)
                assert served() == 1
                changed.clear()
                emu.store.registry.unserved.add(GROUP)  # the CRDs deleted
                await eventually(lambda: not cache.exports and not cache.imports, timeout=60)
                assert (NS, "web") in changed
                assert served() == 0
                emu.store.registry.unserved.discard(GROUP)  # applied again
                await eventually(lambda: served() == 1, timeout=600)
                create(emu, "ServiceExport", "new")
                await eventually(lambda: (NS, "new") in cache.exports, timeout=60)
                emu.store.delete("serviceexports", NS, "new")
                await eventually(lambda: (NS, "new") not in cache.exports, timeout=60)
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
