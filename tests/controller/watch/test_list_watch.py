"""List+watch without Kopf (``controller.list_watch``) against the API emulator over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.watch.kopf_wiring import load_client_configuration
from endpointslice_operator.controller.watch.list_watch import ListWatcher
from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from tests.e2e.harness import NS, eventually, pod, service, set_ready, settings

Seen = list[tuple[str | None, str]]


class Recorder:
    def __init__(self) -> None:
        self.seen: Seen = []

    def __call__(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        metadata = obj["metadata"]
        self.seen.append((event_type, f"{metadata['namespace']}/{metadata['name']}"))


@contextlib.asynccontextmanager
async def watching(
    emu: Emulator, handler: Any, kind: str = "pods", **kwargs: Any
) -> AsyncIterator[ListWatcher]:
    configuration = await load_client_configuration(settings(emu))
    async with ApiClient(configuration) as api_client:
        watcher = ListWatcher(api_client, kind, handler, **kwargs)
        task = asyncio.create_task(watcher.run())
        try:
            yield watcher
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _lists(emu: Emulator) -> int:
    return emu.requests.count(verb="list", resource="pods")


async def test_lists_page_by_page_then_delivers_watch_events_in_order() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace("e2e")
        for i in range(5):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        recorder = Recorder()
        async with watching(emu, recorder, page_size=2) as watcher:
            await eventually(lambda: watcher.listings == 1)
            assert recorder.seen == [(None, f"e2e/web-{i}") for i in range(5)]
            assert _lists(emu) == 3  # 2 + 2 + 1
            pod(emu, "web-5", "10.1.0.6")
            set_ready(emu, "web-5", False)
            emu.store.delete("pods", "e2e", "web-0")
            await eventually(lambda: len(recorder.seen) == 8)
        assert recorder.seen[5:] == [
            ("ADDED", "e2e/web-5"),
            ("MODIFIED", "e2e/web-5"),
            ("DELETED", "e2e/web-0"),
        ]


async def test_watches_only_the_given_namespaces() -> None:
    async with run_emulator() as emu:
        for namespace in ("a", "b", "c"):
            emu.store.create_namespace(namespace)
            pod(emu, "p", "10.1.0.1", namespace=namespace)
        recorder = Recorder()
        async with watching(emu, recorder, namespaces=["a", "c"]) as watcher:
            await eventually(lambda: watcher.listings == 2)
            pod(emu, "q", "10.1.0.2", namespace="b")
            pod(emu, "q", "10.1.0.2", namespace="c")
            await eventually(lambda: ("ADDED", "c/q") in recorder.seen)
        assert sorted(recorder.seen, key=str) == sorted(
            [(None, "a/p"), (None, "c/p"), ("ADDED", "c/q")], key=str
        )


async def test_a_failing_handler_does_not_stop_the_watch() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace("e2e")
        recorder = Recorder()

        def handler(event_type: str | None, obj: Mapping[str, Any]) -> None:
            recorder(event_type, obj)
            if obj["metadata"]["name"] == "bad":
                raise RuntimeError("boom")

        async with watching(emu, handler) as watcher:
            await eventually(lambda: watcher.listings == 1)
            pod(emu, "bad", "10.1.0.1")
            pod(emu, "good", "10.1.0.2")
            await eventually(lambda: ("ADDED", "e2e/good") in recorder.seen)


@pytest.mark.looptime
async def test_a_dropped_watch_resumes_from_its_version_without_listing_again() -> None:
    drops = FaultConfig(watch_drop_seconds=3.0, fault_resources={"pods"})
    async with run_emulator(faults=drops) as emu:
        emu.store.create_namespace("e2e")
        pod(emu, "web-0", "10.1.0.1")
        recorder = Recorder()
        async with watching(emu, recorder, backoff=1.0) as watcher:
            await eventually(lambda: emu.faults_injected["watch_drop"] >= 2, timeout=30)
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: ("ADDED", "e2e/web-1") in recorder.seen, timeout=30)
            assert watcher.listings == 1 and _lists(emu) == 1
        assert recorder.seen == [(None, "e2e/web-0"), ("ADDED", "e2e/web-1")]


@pytest.mark.looptime
async def test_a_watch_cut_mid_stream_resumes_from_the_last_version_delivered() -> None:
    """client-go's reflector semantics: a stream that breaks (the emulator aborts the
    connection, as a killed kube-apiserver does) resumes from the last version it delivered,
    not from the one it started at: no event twice, no new listing."""
    drops = FaultConfig(watch_drop_seconds=5.0, fault_resources={"pods"})
    async with run_emulator(faults=drops) as emu:
        emu.store.create_namespace("e2e")
        pod(emu, "web-0", "10.1.0.1")
        recorder = Recorder()
        async with watching(emu, recorder, backoff=1.0) as watcher:
            await eventually(lambda: watcher.listings == 1)
            for i in range(1, 7):  # events in every window, each window cut mid-stream
                pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
                set_ready(emu, f"web-{i}", False)
                await asyncio.sleep(2.5)
            await eventually(lambda: emu.faults_injected["watch_drop"] >= 4, timeout=60)
            await eventually(lambda: ("MODIFIED", "e2e/web-6") in recorder.seen, timeout=30)
            await asyncio.sleep(12)  # two more cuts, nothing new: nothing delivered again
            assert watcher.listings == 1 and _lists(emu) == 1
        expected: list[tuple[str | None, str]] = [(None, "e2e/web-0")]
        for i in range(1, 7):
            expected += [("ADDED", f"e2e/web-{i}"), ("MODIFIED", f"e2e/web-{i}")]
        assert recorder.seen == expected


@pytest.mark.looptime
async def test_410_gone_lists_again() -> None:
    drops = FaultConfig(watch_drop_seconds=3.0, fault_resources={"pods"})
    async with run_emulator(faults=drops) as emu:
        emu.store.create_namespace("e2e")
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        recorder = Recorder()
        async with watching(emu, recorder, backoff=1.0) as watcher:
            await eventually(lambda: watcher.listings == 1)
            emu.faults.gone_rate = 1.0
            await eventually(lambda: emu.faults_injected["gone"] >= 1, interval=0.01, timeout=30)
            # Deleted while every watch expires at once: only a new listing can tell.
            emu.store.delete("pods", "e2e", "web-1")
            listed = watcher.listings
            await eventually(lambda: watcher.listings >= listed + 2, timeout=30)
            emu.faults.gone_rate = 0.0
            pod(emu, "web-2", "10.1.0.3")
            # Seen by the watch, or by one last listing if one was due.
            await eventually(lambda: recorder.seen[-1][1] == "e2e/web-2", timeout=30)
        assert recorder.seen[:2] == [(None, "e2e/web-0"), (None, "e2e/web-1")]
        assert ("DELETED", "e2e/web-1") not in recorder.seen
        assert {event for event, _ in recorder.seen[:-1]} == {None}
        # At least one re-listing showed web-0 without web-1.
        assert recorder.seen.count((None, "e2e/web-0")) > recorder.seen.count((None, "e2e/web-1"))


async def test_endpointslices_are_listed_and_watched_too() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace("e2e")

        def endpoint_slice(name: str) -> dict[str, Any]:
            return {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": "e2e"},
                "addressType": "IPv4",
                "endpoints": [],
            }

        emu.store.create(endpoint_slice("s-0"))
        recorder = Recorder()
        async with watching(emu, recorder, "endpointslices") as watcher:
            await eventually(lambda: watcher.listings == 1)
            emu.store.create(endpoint_slice("s-1"))
            emu.store.delete("endpointslices", "e2e", "s-0")
            await eventually(lambda: len(recorder.seen) == 3)
        assert recorder.seen == [(None, "e2e/s-0"), ("ADDED", "e2e/s-1"), ("DELETED", "e2e/s-0")]


async def test_services_are_listed_and_watched_too() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace("e2e")
        service(emu, "svc-0")
        recorder = Recorder()
        async with watching(emu, recorder, "services") as watcher:
            await eventually(lambda: watcher.listings == 1)
            service(emu, "svc-1")
            emu.store.delete("services", NS, "svc-0")
            await eventually(lambda: len(recorder.seen) == 3)
        assert recorder.seen == [
            (None, f"{NS}/svc-0"),
            ("ADDED", f"{NS}/svc-1"),
            ("DELETED", f"{NS}/svc-0"),
        ]


async def test_other_kinds_are_refused() -> None:
    async with run_emulator() as emu:
        configuration = await load_client_configuration(settings(emu))
        async with ApiClient(configuration) as api_client:
            with pytest.raises(ValueError, match="nodes"):
                ListWatcher(api_client, "nodes", Recorder())


async def test_a_listing_behind_what_was_seen_reports_a_reset(tmp_path: Any) -> None:
    """The server came back with older state: its 410 makes the watcher list again, and that
    listing's resourceVersion is below the watermark."""
    from endpointslice_operator.controller.api.reset import Watermark
    from endpointslice_operator.testing.controlplane import free_port

    port, kubeconfig = free_port(), tmp_path / "kubeconfig"
    resets: list[str] = []
    watermark = Watermark()
    configuration: Any = None
    async with run_emulator(port=port, kubeconfig_path=kubeconfig) as first:
        configuration = await load_client_configuration(settings(first))
    recorder = Recorder()
    async with ApiClient(configuration) as api_client:
        watcher = ListWatcher(
            api_client, "pods", recorder, watermark=watermark, on_reset=resets.append, backoff=0.1
        )
        task: asyncio.Task[None] | None = None
        try:
            async with run_emulator(port=port, kubeconfig_path=kubeconfig) as first:
                first.store.create_namespace("e2e")
                for i in range(20):
                    pod(first, f"web-{i}", f"10.1.0.{i + 1}")
                task = asyncio.create_task(watcher.run())
                await eventually(lambda: watcher.listings == 1)
                seen = watermark.value
                assert seen >= 20
            async with run_emulator(
                port=port,
                kubeconfig_path=kubeconfig,
                faults=FaultConfig(gone_rate=1.0, fault_resources={"pods"}),
            ) as second:
                second.store.create_namespace("e2e")
                pod(second, "web-new", "10.2.0.1")
                await eventually(lambda: resets, timeout=30)
            assert resets == [
                f"pods in all namespaces listed at resourceVersion {second.store.resource_version}"
                f", below the {seen} already seen"
            ]
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


async def test_listing_hooks_and_fail_fast_for_one_shot_clients() -> None:
    """``on_listing``/``on_listed`` bracket each listing; with ``fail_fast`` a failure of the
    first listing ends ``run`` with the error, and after a listing failures are retried."""
    failing = FaultConfig(fail_rate=1.0, fault_verbs={"list"}, fault_resources={"pods"})
    async with run_emulator(faults=failing) as emu:
        emu.store.create_namespace("e2e")
        pod(emu, "web-0", "10.1.0.1")
        configuration = await load_client_configuration(settings(emu))
        async with ApiClient(configuration) as api_client:
            watcher = ListWatcher(api_client, "pods", Recorder(), fail_fast=True, backoff=0.05)
            with pytest.raises(ApiError):
                await asyncio.wait_for(watcher.run(), 10)

        emu.faults.fail_rate = 0.0
        recorder = Recorder()
        marks: list[str] = []

        def listing(scope: str | None) -> None:
            marks.append(f"begin {scope} after {len(recorder.seen)}")

        def listed(scope: str | None) -> None:
            marks.append(f"end {scope} after {len(recorder.seen)}")

        async with watching(
            emu, recorder, on_listing=listing, on_listed=listed, fail_fast=True, backoff=0.05
        ) as watcher:
            await eventually(lambda: watcher.listings == 1)
            assert marks == ["begin None after 0", "end None after 1"]
