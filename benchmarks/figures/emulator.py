"""Emulator figures: requests per second served while holding 100,000 objects.

The emulator is loaded with EndpointSlices spread over namespaces (100,000 in both modes: the
size the emulator promises to hold), then an aiohttp client in the same process keeps a bounded
number of requests in flight over loopback: a mix of GET by name, LIST with a label selector
within a namespace, and PATCH of a slice's endpoints. Client and server share one event loop and
one core, so the number is a floor for what an operator under test sees.

The baseline is the same client against a bare aiohttp handler answering a fixed JSON body on
the same loop: what the HTTP stack alone can do here, measured in the same run.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from endpointslice_operator.testing import Emulator, run_emulator

from ..figure import Figure

OBJECTS = 100_000
NAMESPACES = 1_000
CONCURRENCY = 16
REQUESTS = {"quick": 3_000, "full": 20_000}
ROUNDS = {"quick": 1, "full": 3}

Request = Callable[[aiohttp.ClientSession, int], Awaitable[int]]


def _slice(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"web-{index}",
            "namespace": f"ns-{index % NAMESPACES}",
            "labels": {
                "kubernetes.io/service-name": f"svc-{index % 7}",
                "endpointslice.kubernetes.io/managed-by": "bench",
            },
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256 or 1}"],
                "conditions": {"ready": True},
            }
        ],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


def load(emulator: Emulator, objects: int = OBJECTS) -> None:
    """Fill the store with ``objects`` slices over ``NAMESPACES`` namespaces."""
    for ns in range(min(NAMESPACES, objects)):
        emulator.store.create_namespace(f"ns-{ns}")
    for index in range(objects):
        emulator.store.create(_slice(index))


def emulator_mix(base: str, objects: int) -> Request:
    """GET by name (3 in 5), LIST by label in a namespace (1 in 5), PATCH (1 in 5)."""

    async def request(session: aiohttp.ClientSession, n: int) -> int:
        index = (n * 7919) % objects
        path = f"{base}/apis/discovery.k8s.io/v1/namespaces/ns-{index % NAMESPACES}/endpointslices"
        kind = n % 5
        if kind == 3:
            params = {"labelSelector": f"kubernetes.io/service-name=svc-{index % 7}"}
            async with session.get(path, params=params) as response:
                await response.read()
                return response.status
        if kind == 4:
            patch = {"endpoints": [{"addresses": [f"10.200.{n // 250 % 250}.{n % 250 + 1}"]}]}
            headers = {"Content-Type": "application/merge-patch+json"}
            async with session.patch(
                f"{path}/web-{index}", json=patch, headers=headers
            ) as response:
                await response.read()
                return response.status
        async with session.get(f"{path}/web-{index}") as response:
            await response.read()
            return response.status

    return request


async def drive(request: Request, total: int, concurrency: int = CONCURRENCY) -> float:
    """Run ``total`` requests with ``concurrency`` in flight; return requests per second."""
    counter = itertools.count()
    failures: list[int] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            while (n := next(counter)) < total:
                status = await request(session, n)
                if status >= 400:
                    failures.append(status)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed, e.g. HTTP {failures[0]}")
    return total / elapsed


async def bare_aiohttp_rate(total: int) -> float:
    body = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}'

    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:

        async def request(session: aiohttp.ClientSession, n: int) -> int:
            async with session.get(f"http://127.0.0.1:{port}/api/v1/x/{n}") as response:
                await response.read()
                return response.status

        return await drive(request, total)
    finally:
        await runner.cleanup()


async def measure(mode: str, objects: int = OBJECTS) -> tuple[float, float]:
    total, rounds = REQUESTS[mode], ROUNDS[mode]
    async with run_emulator() as emulator:
        load(emulator, objects)
        mix = emulator_mix(emulator.url, objects)
        served, bare = 0.0, 0.0
        for _ in range(rounds):  # interleaved, best of each
            served = max(served, await drive(mix, total))
            bare = max(bare, await bare_aiohttp_rate(total))
        assert emulator.store.count("endpointslices") == objects
    return served, bare


def collect(mode: str) -> list[Figure]:
    served, bare = asyncio.run(measure(mode))
    return [Figure("emulator_requests_per_s", served, "req/s", baseline=bare)]
