"""Every API request has a client-side timeout (``--api-timeout``): an API server that accepts
connections and never answers fails the request instead of holding a worker for ever.

The hung server is a real TCP listener on loopback that reads what it is sent and never writes
a byte; time is virtual (looptime), so the 30 s default costs nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api

from endpointslice_operator.controller.api.client import DEFAULT_API_TIMEOUT, OperatorApiClient
from endpointslice_operator.controller.api.writer import SliceWriter
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.testing import Emulator, run_emulator

pytestmark = pytest.mark.looptime

NS = "t"


class HungServer:
    """Accepts every connection, reads every request, answers none."""

    def __init__(self) -> None:
        self.connections = 0
        self._readers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._readers.append(writer)
        while await reader.read(65536):
            pass

    async def __aenter__(self) -> HungServer:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._readers:
            writer.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"


def client_for(url: str, **kwargs: Any) -> OperatorApiClient:
    configuration = Configuration(host=url)
    configuration.api_key = {"BearerToken": "Bearer t"}
    return OperatorApiClient(configuration, **kwargs)


def endpoint_slice(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"namespace": NS, "name": name, "labels": {"app": "x"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        "ports": [],
    }


@pytest.fixture
async def hung() -> AsyncIterator[HungServer]:
    async with HungServer() as server:
        yield server


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator() as emulator:
        emulator.store.create_namespace(NS)
        yield emulator


async def test_a_write_to_a_hung_server_fails_after_the_timeout(hung: HungServer) -> None:
    """On the writers' own kept-alive connections (:mod:`.keepalive`)."""
    loop = asyncio.get_running_loop()
    async with client_for(hung.url, api_timeout=7.0) as api:
        assert api.keepalive is not None
        started = loop.time()
        with pytest.raises(TimeoutError):
            await SliceWriter(api).create(endpoint_slice("a"))
        assert loop.time() - started == pytest.approx(7.0, abs=0.5)
    assert hung.connections == 1


async def test_a_write_through_a_hung_proxy_fails_after_the_timeout(hung: HungServer) -> None:
    """Through a proxy the writes go over the client's aiohttp session, with the same timeout."""
    loop = asyncio.get_running_loop()
    configuration = Configuration(host="http://api.invalid:8080")
    configuration.api_key = {"BearerToken": "Bearer t"}
    configuration.proxy = hung.url
    async with OperatorApiClient(configuration, api_timeout=9.0) as api:
        assert api.keepalive is None
        started = loop.time()
        with pytest.raises(TimeoutError):
            await SliceWriter(api).create(endpoint_slice("a"))
        assert loop.time() - started == pytest.approx(9.0, abs=0.5)
    assert hung.connections == 1


async def test_a_stock_api_client_write_gets_the_default_timeout(hung: HungServer) -> None:
    loop = asyncio.get_running_loop()
    configuration = Configuration(host=hung.url)
    configuration.api_key = {"BearerToken": "Bearer t"}
    async with ApiClient(configuration) as api:
        started = loop.time()
        with pytest.raises(TimeoutError):
            await SliceWriter(api).create(endpoint_slice("a"))
        assert loop.time() - started == pytest.approx(DEFAULT_API_TIMEOUT, abs=0.5)


async def test_generated_methods_get_the_default_timeout_too(hung: HungServer) -> None:
    loop = asyncio.get_running_loop()
    async with client_for(hung.url) as api:
        started = loop.time()
        with pytest.raises(TimeoutError):
            await CoreV1Api(api).read_namespace("default")
        assert loop.time() - started == pytest.approx(DEFAULT_API_TIMEOUT, abs=0.5)


async def test_a_timeout_given_by_the_caller_wins(hung: HungServer) -> None:
    loop = asyncio.get_running_loop()
    async with client_for(hung.url, api_timeout=100.0) as api:
        started = loop.time()
        with pytest.raises(TimeoutError):
            await CoreV1Api(api).read_namespace("default", _request_timeout=3)
        assert loop.time() - started == pytest.approx(3.0, abs=0.5)


async def test_the_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="api_timeout"):
        client_for("http://127.0.0.1:1", api_timeout=0)


async def test_a_hung_server_does_not_stall_the_worker(hung: HungServer, emu: Emulator) -> None:
    """One worker; the first key's write hangs on the dead server, the second key's write goes
    to a live one. The worker gives up the first after the timeout (its key retried with
    backoff, as any failed sync), takes the second, and the dead server is tried again."""
    loop = asyncio.get_running_loop()
    timeout = 10.0
    async with (
        client_for(hung.url, api_timeout=timeout) as dead,
        client_for(emu.url, api_timeout=timeout) as live,
    ):
        writers = {"ns/dead": SliceWriter(dead), "ns/live": SliceWriter(live)}
        calls: list[tuple[float, str]] = []
        written: list[str] = []

        async def sync(key: str) -> None:
            calls.append((loop.time(), key))
            name = key.split("/")[1] + f"-{len(calls)}"
            await writers[key].create(endpoint_slice(name))
            written.append(key)

        queue = ServiceQueue(workers=1, base_backoff=1.0, max_retries=1)
        started = loop.time()
        queue.add("ns/dead")
        queue.add("ns/live")
        runner = asyncio.create_task(queue.run(sync))
        await queue.wait_idle()
        await queue.stop()
        await runner

    keys = [key for _, key in calls]
    assert keys == ["ns/dead", "ns/live", "ns/dead"]
    assert written == ["ns/live"]
    # The live write started once the dead one timed out, not later.
    assert calls[1][0] - started == pytest.approx(timeout, abs=0.5)
    assert hung.connections >= 1
    assert emu.store.get("endpointslices", NS, "live-2") is not None
