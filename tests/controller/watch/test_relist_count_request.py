"""The count of a re-listing check as the API server receives it: one object asked for
(``limit=1``: the server's remainingItemCount tells the rest) and the client's bearer token, as
every request of the operator carries (the emulator needs none: a recording server in front of
it sees the request; tests/realcluster/test_relist_count.py has a real server refuse it)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient
from endpointslice_operator.controller.watch.relist import Relisting
from endpointslice_operator.testing import run_emulator
from tests.controller.api.test_writer import RecordingServer
from tests.e2e.harness import NS, pod

pytestmark = pytest.mark.looptime


@contextlib.asynccontextmanager
async def _serving(server: RecordingServer) -> AsyncIterator[None]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield
    finally:
        await runner.cleanup()


async def test_the_count_asks_for_one_object_with_the_bearer_token() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        for name in ("a", "b", "c"):
            pod(emu, name, "10.1.0.1")
        server = RecordingServer(emu)
        async with _serving(server):
            configuration = Configuration(host=server.url)
            configuration.api_key = {"BearerToken": "the-token"}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
            async with OperatorApiClient(configuration) as api:
                relisting = Relisting(
                    api,
                    "/api/v1",
                    "pods",
                    held=list,
                    uid_of=lambda key: None,
                    forget=lambda key: None,
                )
                assert await relisting.count(NS) == 3
        [seen] = server.seen
        url = urlsplit(seen.url)
        assert (seen.method, url.path) == ("GET", f"/api/v1/namespaces/{NS}/pods")
        assert parse_qs(url.query) == {"limit": ["1"]}
        assert seen.headers.get("Authorization") == "Bearer the-token"
