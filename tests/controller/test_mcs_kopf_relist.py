"""Kopf's re-listing of this cluster's ServiceExports and ServiceImports: what it left out is
asked for (over HTTP, the emulator serving the MCS API), and only an answer that it is gone
drops it from the multi-cluster cache (virtual time: looptime)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from kubernetes_asyncio.config import new_client_from_config

from endpointslice_operator.controller.api_client import OperatorApiClient
from endpointslice_operator.controller.kopf_wiring import load_client_configuration
from endpointslice_operator.controller.mcs.cache import Key, LocalCache
from endpointslice_operator.controller.mcs.kopf_handlers import (
    GROUP,
    relistings_of,
    serve_exports_and_imports,
)
from endpointslice_operator.controller.relist import RELIST_QUIET_PERIOD
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.faults import LATENCY
from tests.e2e.harness import eventually, settings

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


async def test_a_relisting_forgets_only_what_the_server_says_is_gone() -> None:
    async with run_emulator() as emu:
        emu.store.registry.unserved.discard(GROUP)
        emu.store.create_namespace(NS)
        changed: list[Key] = []
        cache = LocalCache(changed.append, "ours")
        for name in ("kept", "gone", "still-there", "recreated"):
            cache.handler("serviceexports")("ADDED", create(emu, "ServiceExport", name))
        cache.handler("serviceimports")("ADDED", create(emu, "ServiceImport", "import"))
        emu.store.delete("serviceexports", NS, "gone")
        emu.store.delete("serviceexports", NS, "recreated")
        create(emu, "ServiceExport", "recreated")  # another object under the name
        api_client = await new_client_from_config(config_file=str(emu.kubeconfig_path))
        try:
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
        finally:
            await api_client.close()


async def test_events_outside_a_relisting_start_nothing() -> None:
    async with run_emulator() as emu:
        emu.store.registry.unserved.discard(GROUP)
        emu.store.create_namespace(NS)
        cache = LocalCache(lambda _key: None, "ours")
        cache.handler("serviceexports")("ADDED", create(emu, "ServiceExport", "a"))
        emu.store.delete("serviceexports", NS, "a")
        api_client = await new_client_from_config(config_file=str(emu.kubeconfig_path))
        try:
            exports = relistings_of(api_client, cache)["serviceexports"]
            exports.note("MODIFIED", (NS, "a"))
            exports.note("DELETED", (NS, "b"))
            assert not exports.running
            await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
            assert set(cache.exports) == {(NS, "a")}
            assert emu.requests.count(verb="get", resource="serviceexports") == 0
        finally:
            await api_client.close()


async def test_kopf_relisting_after_410_drops_the_export_deleted_meanwhile() -> None:
    async with run_emulator() as emu:
        emu.store.registry.unserved.discard(GROUP)
        emu.store.create_namespace(NS)
        for name in ("kept", "gone"):
            create(emu, "ServiceExport", name)
        create(emu, "ServiceImport", "import")
        changed: list[Key] = []
        cache = LocalCache(changed.append, "ours")
        configuration = await load_client_configuration(settings(emu))
        async with OperatorApiClient(configuration) as api_client:
            serving = asyncio.create_task(
                serve_exports_and_imports(api_client, configuration, cache, namespaces=[NS])
            )
            try:
                await eventually(
                    lambda: emu.requests.count(verb="watch", resource="serviceexports") > 0
                )
                assert set(cache.exports) == {(NS, "kept"), (NS, "gone")}
                assert set(cache.imports) == {(NS, "import")}
                # Kopf's handlers see events (malformed ones are skipped).
                create(emu, "ServiceExport", "new")
                await eventually(lambda: (NS, "new") in cache.exports)
                # Kopf's watch ends, its resumption is slow to reach the server while "gone" is
                # deleted, and the history is compacted: Kopf gets 410 and lists again.
                emu.faults.fault_verbs = {"watch"}
                emu.faults.fault_resources = {"serviceexports"}
                emu.faults.latency = 30.0
                held = emu.faults_injected[LATENCY]
                emu.store.close_watchers("serviceexports")
                await eventually(lambda: emu.faults_injected[LATENCY] > held)
                emu.faults.latency = 0.0
                emu.store.delete("serviceexports", NS, "gone")
                emu.store.compact("serviceexports")
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
