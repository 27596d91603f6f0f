"""HealthServer over real HTTP on a free port."""

from __future__ import annotations

import aiohttp
import pytest

from endpointslice_operator.controller.runtime.health import HealthServer, ListenError
from endpointslice_operator.metrics import OperatorMetrics


async def get(url: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


async def test_probes_and_metrics_over_http() -> None:
    metrics = OperatorMetrics()
    async with HealthServer(metrics, host="127.0.0.1", port=0) as server:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"

        assert await get(f"{server.url}/healthz") == (200, "text/plain; charset=utf-8", "ok")
        status, _, body = await get(f"{server.url}/readyz")
        assert (status, body) == (503, "not ready")
        server.set_ready(True)
        assert (await get(f"{server.url}/readyz"))[0] == 200
        server.set_ready(False)
        assert (await get(f"{server.url}/readyz"))[0] == 503

        metrics.record_change("create")
        metrics.set_leader(True)
        status, content_type, text = await get(f"{server.url}/metrics")
        assert status == 200
        assert content_type == "text/plain; version=0.0.4; charset=utf-8"
        assert 'endpoint_slice_controller_changes{operation="create"} 1\n' in text
        assert "endpointslice_operator_leader 1\n" in text
        # Served live: a later change shows in the next scrape.
        metrics.record_change("create")
        assert 'changes{operation="create"} 2\n' in (await get(f"{server.url}/metrics"))[2]

        status, _, _ = await get(f"{server.url}/other")
        assert status == 404


async def test_stop_closes_the_port_and_start_again_works() -> None:
    server = HealthServer(OperatorMetrics(), host="127.0.0.1", port=0)
    await server.start()
    url = server.url
    with pytest.raises(RuntimeError):
        await server.start()
    await server.stop()
    with pytest.raises(RuntimeError):
        _ = server.port
    with pytest.raises(aiohttp.ClientConnectionError):
        await get(f"{url}/healthz")
    await server.stop()  # idempotent
    await server.start()
    assert (await get(f"{server.url}/healthz"))[0] == 200
    await server.stop()


async def test_a_busy_port_fails_start_cleanly() -> None:
    async with HealthServer(OperatorMetrics(), host="127.0.0.1", port=0) as first:
        second = HealthServer(OperatorMetrics(), host="127.0.0.1", port=first.port)
        with pytest.raises(ListenError, match=r"\(--metrics-host / --metrics-port\)"):
            await second.start()
        with pytest.raises(RuntimeError):
            _ = second.port
