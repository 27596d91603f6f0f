"""``watch_endpoints`` and ``list_endpoints`` against the API emulator, over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from endpointslice_operator.view import (
    Change,
    Endpoint,
    EndpointKey,
    ServicePortKey,
    ViewError,
    list_endpoints,
    open_api_client,
    watch_endpoints,
)
from tests.e2e.harness import eventually
from tests.view.objects import KCM, NS, OURS, endpoint, endpoint_slice, service

SLICES = "endpointslices"


class Collector:
    """Runs ``watch_endpoints`` in a task and keeps every change."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.error: BaseException | None = None

    @property
    def synced(self) -> bool:
        return any(c.type == "synced" for c in self.changes)

    def after_sync(self) -> list[tuple[str, str, int, str]]:
        """(type, port name, service port, address) of the changes after ``synced``."""
        index = next(i for i, c in enumerate(self.changes) if c.type == "synced")
        found: list[tuple[str, str, int, str]] = []
        for change in self.changes[index + 1 :]:
            assert isinstance(change.key, EndpointKey)
            found.append((change.type, change.key.port_name, change.key.port, change.key.address))
        return found

    def initial(self) -> list[Change]:
        return self.changes[: next(i for i, c in enumerate(self.changes) if c.type == "synced")]


@contextlib.asynccontextmanager
async def collecting(emu: Emulator, **kwargs: Any) -> AsyncIterator[Collector]:
    collector = Collector()
    api = await open_api_client(emu.kubeconfig_path)

    async def run() -> None:
        try:
            async for change in watch_endpoints(api, **kwargs):
                collector.changes.append(change)
        except Exception as exc:
            collector.error = exc

    task = asyncio.create_task(run())
    try:
        yield collector
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await api.close()


def populate(emu: Emulator) -> None:
    emu.store.create_namespace(NS)
    emu.store.create(service("web", [("http", 80), ("grpc", 90)]))
    emu.store.create(service("hidden", annotated=False))
    emu.store.create(
        endpoint_slice(
            "web-kcm",
            "web",
            [endpoint("10.0.0.1"), endpoint("10.0.0.2", ready=False)],
            managed_by=KCM,
        )
    )
    # Another manager lists 10.0.0.2 ready, and a port only it has.
    emu.store.create(
        endpoint_slice(
            "web-ours",
            "web",
            [endpoint("10.0.0.2"), endpoint("10.0.0.3")],
            ports=[("http", 8080), ("grpc", 9090)],
            managed_by=OURS,
        )
    )
    emu.store.create(endpoint_slice("hidden-1", "hidden", [endpoint("10.0.9.1")]))


async def test_the_current_view_then_synced_then_the_changes() -> None:
    async with run_emulator() as emu:
        populate(emu)
        async with collecting(emu) as collector:
            await eventually(lambda: collector.synced or collector.error)
            assert collector.error is None
            initial = collector.initial()
            assert {c.type for c in initial} == {"added"}
            keys = [c.key for c in initial]
            assert keys == sorted(keys)  # type: ignore[type-var]
            assert [(k.port_name, k.port, k.address) for k in keys] == [  # type: ignore[union-attr]
                ("grpc", 90, "10.0.0.2"),
                ("grpc", 90, "10.0.0.3"),
                ("http", 80, "10.0.0.1"),
                ("http", 80, "10.0.0.2"),
                ("http", 80, "10.0.0.3"),
            ]
            by_key = {c.key: c.endpoint for c in initial}
            duplicate = by_key[EndpointKey(NS, "web", "http", 80, "TCP", "10.0.0.2")]
            assert isinstance(duplicate, Endpoint) and duplicate.slice == "web-ours"  # ready wins

            # The ready duplicate goes: the other manager's not-ready copy is not shown.
            emu.store.delete(SLICES, NS, "web-ours")
            await eventually(lambda: len(collector.after_sync()) == 4)
            assert sorted(collector.after_sync()) == [
                ("removed", "grpc", 90, "10.0.0.2"),
                ("removed", "grpc", 90, "10.0.0.3"),
                ("removed", "http", 80, "10.0.0.2"),
                ("removed", "http", 80, "10.0.0.3"),
            ]
            # A port renamed in the slice: from the http service port to the grpc one.
            emu.store.patch(
                SLICES,
                NS,
                "web-kcm",
                {"ports": [{"name": "grpc", "port": 9090, "protocol": "TCP"}]},
            )
            await eventually(lambda: len(collector.after_sync()) == 6)
            assert sorted(collector.after_sync()[4:]) == [
                ("added", "grpc", 90, "10.0.0.1"),
                ("removed", "http", 80, "10.0.0.1"),
            ]
            # The Service's port renumbered.
            emu.store.patch(
                "services",
                NS,
                "web",
                {"spec": {"ports": [{"name": "grpc", "port": 91, "protocol": "TCP"}]}},
            )
            await eventually(lambda: len(collector.after_sync()) == 8)
            assert collector.after_sync()[6:] == [
                ("removed", "grpc", 90, "10.0.0.1"),
                ("added", "grpc", 91, "10.0.0.1"),
            ]
            # The annotation taken off: the Service leaves the view.
            emu.store.patch(
                "services",
                NS,
                "web",
                {"metadata": {"annotations": {"endpointslice-operator.io/view": None}}},
            )
            await eventually(lambda: len(collector.after_sync()) == 9)
            assert collector.after_sync()[8] == ("removed", "grpc", 91, "10.0.0.1")


@pytest.mark.looptime
async def test_a_relisting_after_410_removes_what_was_deleted_meanwhile() -> None:
    drops = FaultConfig(watch_drop_seconds=3.0, fault_resources={SLICES, "services"})
    async with run_emulator(faults=drops) as emu:
        populate(emu)
        async with collecting(emu, services=["web"], backoff=1.0) as collector:
            await eventually(lambda: collector.synced, timeout=30)
            lists = emu.requests.count(verb="list", resource=SLICES)
            emu.faults.gone_rate = 1.0
            await eventually(lambda: emu.faults_injected["gone"] >= 4, interval=0.01, timeout=30)
            # Deleted while every watch expires: no DELETED event, only a listing can tell.
            emu.store.delete(SLICES, NS, "web-ours")
            await eventually(
                lambda: emu.requests.count(verb="list", resource=SLICES) >= lists + 2, timeout=30
            )
            emu.faults.gone_rate = 0.0
            await eventually(lambda: len(collector.after_sync()) == 4, timeout=30)
            assert {t for t, *_ in collector.after_sync()} == {"removed"}
            # And the watches go on after it.
            emu.store.create(endpoint_slice("web-new", "web", [endpoint("10.0.0.7")]))
            await eventually(lambda: len(collector.after_sync()) == 5, timeout=30)
            assert collector.after_sync()[4] == ("added", "http", 80, "10.0.0.7")
        assert collector.error is None


async def test_gather_over_http() -> None:
    async with run_emulator() as emu:
        populate(emu)
        async with collecting(emu, gather=True, policy="all") as collector:
            await eventually(lambda: collector.synced)
            initial = collector.initial()
            http = ServicePortKey(NS, "web", "http", 80, "TCP")
            assert [c.key for c in initial] == [ServicePortKey(NS, "web", "grpc", 90, "TCP"), http]
            assert initial[1].to_json()["endpoint"]["addresses"] == [
                "10.0.0.1",
                "10.0.0.2",
                "10.0.0.3",
            ]
            emu.store.delete(SLICES, NS, "web-kcm")
            await eventually(lambda: len(collector.changes) == len(initial) + 2)
            last = collector.changes[-1]
            assert (last.type, last.key) == ("updated", http)
            assert last.to_json()["endpoint"]["addresses"] == ["10.0.0.2", "10.0.0.3"]


async def test_list_endpoints_is_a_synchronous_snapshot() -> None:
    async with run_emulator() as emu:
        populate(emu)
        found = await asyncio.to_thread(
            list_endpoints, emu.kubeconfig_path, services="hidden", managed_by=KCM
        )
        assert list(found) == [EndpointKey(NS, "hidden", "http", 80, "TCP", "10.0.9.1")]
        gathered = await asyncio.to_thread(
            list_endpoints, emu.kubeconfig_path, namespace=NS, selector="missing", gather=True
        )
        assert gathered == {}


async def test_a_failing_first_listing_raises(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with run_emulator() as emu:
        kubeconfig.write_text(Path(emu.kubeconfig_path).read_text())
    # The emulator is gone: nothing answers at its address.
    with pytest.raises(ViewError, match="cannot list"):
        await asyncio.to_thread(list_endpoints, kubeconfig)


async def test_the_view_of_an_endpoint_selector_over_http() -> None:
    from endpointslice_operator.view import snapshot

    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.registry.unserved.discard("endpointslice-operator.io")  # the CRD
        emu.store.create(
            {
                "apiVersion": "endpointslice-operator.io/v1alpha1",
                "kind": "EndpointSelector",
                "metadata": {"name": "sel", "namespace": NS},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "ports": [{"name": "http", "port": 8080}],
                },
            }
        )
        selected = endpoint_slice("sel-1", "unused", [endpoint("10.0.5.1")], managed_by=OURS)
        labels = selected["metadata"]["labels"]
        del labels["kubernetes.io/service-name"]
        labels["endpointslice-operator.io/endpoint-selector-name"] = "sel"
        emu.store.create(selected)
        async with await open_api_client(emu.kubeconfig_path) as api:
            found = await snapshot(api, endpoint_selectors="sel")
            # Service names do not narrow what an EndpointSelector's view lists
            also = await snapshot(api, endpoint_selectors="sel", services="unrelated")
    assert [c.key.address for c in found] == ["10.0.5.1"]  # type: ignore[union-attr]
    assert [c.key.address for c in also] == ["10.0.5.1"]  # type: ignore[union-attr]


async def test_open_api_client_takes_the_prefix_given_over_the_environments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENDPOINTSLICE_OPERATOR_ANNOTATION_PREFIX", "Not a prefix!")
    async with run_emulator() as emu:
        with pytest.raises(ValueError, match="annotation_prefix"):
            await open_api_client(emu.kubeconfig_path)
        api = await open_api_client(emu.kubeconfig_path, "example.com")
        await api.close()


@pytest.mark.looptime
async def test_a_quiet_watch_is_ended_by_the_server_not_given_up_by_the_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No bookmark but the one just before the server's timeout (300 s by default): nothing
    # arrives on the watches for almost five minutes, which the client must wait out.
    async with run_emulator(bookmark_interval=1000.0) as emu:
        populate(emu)

        def watches() -> int:
            return sum(emu.requests.count(verb="watch", resource=k) for k in ("services", SLICES))

        with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller"):
            async with collecting(emu, services=["web"]) as collector:
                await eventually(lambda: collector.synced, timeout=30)
                assert watches() == 2
                await asyncio.sleep(290)
                assert watches() == 2  # still the first two
                await asyncio.sleep(15)
                assert watches() == 4  # ended by the server, resumed
                emu.store.create(endpoint_slice("web-new", "web", [endpoint("10.0.0.7")]))
                await eventually(lambda: len(collector.after_sync()) == 1, timeout=30)
                assert collector.after_sync() == [("added", "http", 80, "10.0.0.7")]
            assert collector.error is None
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
