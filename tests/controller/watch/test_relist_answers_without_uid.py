"""An object the server answers for without a UID (or without metadata) is no proof of a
deletion: the re-listing check keeps it, as it keeps one answered under the UID it holds (a
small HTTP server in place of the API server answers so; the emulator always gives a UID)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient
from endpointslice_operator.controller.watch.relist import RELIST_QUIET_PERIOD, Key, Relisting

pytestmark = pytest.mark.looptime

ANSWERS: dict[str, Any] = {
    "no-uid": {"metadata": {"name": "no-uid", "namespace": "ns"}},
    "empty-uid": {"metadata": {"name": "empty-uid", "namespace": "ns", "uid": ""}},
    "junk-metadata": {"metadata": "junk"},
    "no-metadata": {"kind": "Pod"},
}


@contextlib.asynccontextmanager
async def _answering() -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(ANSWERS[request.match_info["name"]])

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/pods/{name}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_an_answer_without_a_uid_keeps_the_object() -> None:
    uids: dict[Key, str] = {("ns", name): f"uid-{name}" for name in ANSWERS}
    forgotten: list[Key] = []
    async with _answering() as url, OperatorApiClient(Configuration(host=url)) as api:
        relisting = Relisting(
            api,
            "/api/v1",
            "pods",
            held=lambda: list(uids),
            uid_of=uids.get,
            forget=forgotten.append,
        )
        relisting.begin("ns")
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
    assert (relisting.checked, relisting.forgotten) == (len(ANSWERS), 0)
    assert forgotten == []
