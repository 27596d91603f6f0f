"""Kopf as a client: an in-process operator watching through the emulator.

Kopf lists, then watches from the list's resourceVersion with bookmarks; after a dropped stream
it resumes from the last version it saw, and after a 410 it lists again. Each object change
must reach the handlers exactly once.

They run on virtual time (looptime): Kopf's timers and the emulator's stream cuts cost no wall
time, while the HTTP traffic between them is real.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml

from endpointslice_operator.testing import Emulator, FaultConfig, RequestLog, run_emulator
from tests.emulator.conftest import endpoint_slice, pod

pytestmark = pytest.mark.looptime

Seen = tuple[str, str | None, str, str]  # (plural, event type, name, resourceVersion)


class Recorder:
    """Collects (resource, type, name, resourceVersion) from handlers and lets tests wait."""

    def __init__(self) -> None:
        self.events: list[Seen] = []
        self._changed = asyncio.Condition()

    async def add(self, item: Seen) -> None:
        async with self._changed:
            self.events.append(item)
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[list[Seen]], bool], timeout: float = 20) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: predicate(self.events))

    def of(self, plural: str, name: str) -> list[Seen]:
        return [e for e in self.events if e[0] == plural and e[2] == name]


def login_from(path: Path) -> kopf.ConnectionInfo:
    """What kopf.login_with_kubeconfig does, for one explicit file (no environment needed)."""
    config = yaml.safe_load(path.read_text())
    context = next(
        c["context"] for c in config["contexts"] if c["name"] == config["current-context"]
    )
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    return kopf.ConnectionInfo(
        server=cluster["server"],
        token=user.get("token"),
        default_namespace=context.get("namespace"),
    )


@contextlib.asynccontextmanager
async def kopf_operator(
    emu: Emulator,
    recorder: Recorder,
    *,
    namespaces: tuple[str, ...] = (),
    initial_streaming: bool = False,
) -> AsyncIterator[None]:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return login_from(emu.kubeconfig_path)

    def record(plural: str) -> Callable[..., Any]:
        async def handler(event: dict[str, Any], name: str, **_: Any) -> None:
            await recorder.add(
                (plural, event["type"], name, event["object"]["metadata"]["resourceVersion"])
            )

        return handler

    kopf.on.event("v1", "services", registry=registry)(record("services"))
    kopf.on.event("v1", "pods", registry=registry)(record("pods"))
    kopf.on.event("discovery.k8s.io", "v1", "endpointslices", registry=registry)(
        record("endpointslices")
    )
    if not namespaces:
        kopf.on.event("v1", "nodes", registry=registry)(record("nodes"))

    settings = kopf.OperatorSettings()
    settings.peering.standalone = True
    settings.posting.enabled = False
    settings.watching.reconnect_backoff = 0.05
    settings.watching.initial_streaming = initial_streaming
    settings.networking.request_timeout = 10
    settings.queueing.idle_timeout = 0.5
    settings.queueing.exit_timeout = 0.1
    stop = asyncio.Event()
    ready = asyncio.Event()
    task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=settings,
            standalone=True,
            clusterwide=not namespaces,
            namespaces=namespaces,
            stop_flag=stop,
            ready_flag=ready,
        )
    )
    try:
        async with asyncio.timeout(20):
            await ready.wait()
        yield
    finally:
        stop.set()
        async with asyncio.timeout(20):
            await task


@pytest.fixture(autouse=True)
def quiet_kopf(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kopf")


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    }


def slice_watches(log: RequestLog) -> int:
    return log.count(verb="watch", resource="endpointslices")


def more_watches_than(count: int) -> Callable[[RequestLog], bool]:
    return lambda log: slice_watches(log) > count


def _bump(emu: Emulator, plural: str, namespace: str | None, name: str, value: str) -> str:
    updated = emu.store.patch(plural, namespace, name, {"metadata": {"labels": {"step": value}}})
    return str(updated["metadata"]["resourceVersion"])


@pytest.mark.parametrize("initial_streaming", [False, True], ids=["list-then-watch", "watch-list"])
async def test_each_change_is_received_once(initial_streaming: bool) -> None:
    recorder = Recorder()
    async with run_emulator() as emu:
        emu.store.create(service("web"))
        emu.store.create(pod("web-1", {"app": "web"}))
        emu.store.create(node("node-a"))
        emu.store.create(endpoint_slice("web-abc"))
        async with kopf_operator(emu, recorder, initial_streaming=initial_streaming):
            await recorder.wait_for(lambda events: len({e[:1] + e[2:3] for e in events}) >= 4)
            versions = [
                _bump(emu, "services", "default", "web", "1"),
                _bump(emu, "pods", "default", "web-1", "1"),
                _bump(emu, "nodes", None, "node-a", "1"),
                _bump(emu, "endpointslices", "default", "web-abc", "1"),
            ]
            await recorder.wait_for(
                lambda events: all(any(e[3] == rv for e in events) for rv in versions)
            )
            emu.store.delete("pods", "default", "web-1")
            await recorder.wait_for(lambda events: ("pods", "DELETED") in {e[:2] for e in events})

    for plural, name in [
        ("services", "web"),
        ("pods", "web-1"),
        ("nodes", "node-a"),
        ("endpointslices", "web-abc"),
    ]:
        types = [e[1] for e in recorder.of(plural, name)]
        expected = [None, "MODIFIED", "DELETED"] if plural == "pods" else [None, "MODIFIED"]
        assert types == expected, (plural, recorder.of(plural, name))


@pytest.mark.parametrize("pattern", ["team", "te*"])
async def test_namespaced_operator_sees_only_its_namespace(pattern: str) -> None:
    recorder = Recorder()
    async with run_emulator() as emu:
        emu.store.create_namespace("team")
        emu.store.create(service("mine"), namespace="team")
        emu.store.create(service("other"), namespace="default")
        async with kopf_operator(emu, recorder, namespaces=(pattern,)):
            await recorder.wait_for(
                lambda events: ("services", None, "mine") in {e[:3] for e in events}
            )
            rv = _bump(emu, "services", "team", "mine", "2")
            _bump(emu, "services", "default", "other", "2")
            await recorder.wait_for(lambda events: any(e[3] == rv for e in events))
    assert not recorder.of("services", "other")


async def test_resumes_after_dropped_streams_without_loss_or_duplicates() -> None:
    recorder = Recorder()
    faults = FaultConfig(watch_drop_seconds=3)
    async with run_emulator(faults=faults) as emu:
        emu.store.create(endpoint_slice("s"))
        async with kopf_operator(emu, recorder):
            await recorder.wait_for(lambda events: bool(recorder.of("endpointslices", "s")))
            versions = []
            for step in range(5):
                # Let the stream be cut and resumed (a new watch request) before each change.
                await emu.requests.wait_for(more_watches_than(slice_watches(emu.requests)), 20)
                versions.append(_bump(emu, "endpointslices", "default", "s", str(step)))
            await recorder.wait_for(lambda events: any(e[3] == versions[-1] for e in events))
        assert emu.requests.count(verb="watch", resource="endpointslices") > 2
    seen = [e for e in recorder.of("endpointslices", "s") if e[1] == "MODIFIED"]
    assert [e[3] for e in seen] == versions


async def test_relists_after_410_and_misses_nothing() -> None:
    recorder = Recorder()
    faults = FaultConfig(watch_drop_seconds=3, gone_rate=1.0)
    async with run_emulator(faults=faults) as emu:
        emu.store.create(endpoint_slice("s"))
        async with kopf_operator(emu, recorder):
            await recorder.wait_for(lambda events: bool(recorder.of("endpointslices", "s")))
            await emu.requests.wait_for(
                lambda log: log.count(verb="list", resource="endpointslices") >= 3, timeout=20
            )
            assert emu.faults_injected["gone"] >= 2
            rv = _bump(emu, "endpointslices", "default", "s", "after-gone")
            await recorder.wait_for(lambda events: any(e[3] == rv for e in events))
        assert emu.requests.count(verb="list", resource="endpointslices") >= 2
    modified = [e for e in recorder.of("endpointslices", "s") if e[3] == rv]
    # Seen once: either as the change itself or in the listing that followed a 410.
    assert len(modified) == 1
