"""Fault injection: targeted, seeded, counted, and changeable at runtime."""

from __future__ import annotations

import asyncio
from collections import Counter

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from tests.emulator.conftest import SLICES, Client, endpoint_slice

pytestmark = pytest.mark.looptime  # latencies, drops and watch timeouts on virtual time


async def statuses(client: Client, count: int) -> list[int]:
    results = []
    for index in range(count):
        status, _ = await client.post(SLICES, endpoint_slice(f"s{index}"))
        results.append(status)
    return results


async def test_fail_rate_answers_500_503_429_with_retry_after(
    emu: Emulator, client: Client
) -> None:
    emu.faults.fail_rate = 1.0
    codes = Counter(await statuses(client, 60))
    assert set(codes) == {500, 503, 429}
    assert sum(codes.values()) == 60
    assert emu.faults_injected["internal_error"] == codes[500]
    assert emu.faults_injected["service_unavailable"] == codes[503]
    assert emu.faults_injected["too_many_requests"] == codes[429]
    async with client.session.post(emu.url + SLICES, json=endpoint_slice("x")) as response:
        body = await response.json()
        assert body["kind"] == "Status" and body["code"] == response.status
        if response.status in (429, 503):
            assert response.headers["Retry-After"] == "1"
            assert body["details"]["retryAfterSeconds"] == 1
    assert emu.store.count("endpointslices") == 0


async def test_faults_only_hit_targeted_verbs_and_resources(emu: Emulator, client: Client) -> None:
    emu.faults.fail_rate = 1.0
    status, _ = await client.get(SLICES)  # list is not a default fault verb
    assert status == 200
    status, _ = await client.post(
        "/api/v1/namespaces/default/services",
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}]},
        },
    )
    assert status == 201  # services are not a default fault resource
    emu.faults.fault_resources = {"*"}
    emu.faults.fault_verbs = {"list"}
    status, _ = await client.get("/api/v1/namespaces/default/services")
    assert status in (500, 503, 429)


async def test_conflict_rate(emu: Emulator, client: Client) -> None:
    emu.store.create(endpoint_slice("web"))
    emu.faults = FaultConfig(conflict_rate=1.0)
    status, body = await client.patch(f"{SLICES}/web", {"metadata": {"labels": {"a": "b"}}})
    assert status == 409 and body["reason"] == "Conflict"
    assert emu.faults_injected["conflict"] == 1
    status, _ = await client.post(SLICES, endpoint_slice("new"))
    assert status == 201  # creates do not conflict


async def test_same_seed_same_faults() -> None:
    async def run(seed: int) -> list[int]:
        async with run_emulator(seed=seed, faults=FaultConfig(fail_rate=0.5)) as emu:
            async with aiohttp.ClientSession() as session:
                return await statuses(Client(session, emu.url), 30)

    first, second, other = await run(11), await run(11), await run(12)
    assert first == second
    assert first != other
    assert 0 < first.count(201) < 30


async def test_latency_is_added_to_targeted_requests(emu: Emulator, client: Client) -> None:
    emu.faults.latency = 2.5
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.post(SLICES, endpoint_slice("slow"))
    assert loop.time() - started == pytest.approx(2.5, abs=0.01)
    started = loop.time()
    await client.get(SLICES)
    assert loop.time() - started < 0.01
    assert emu.faults_injected["latency"] == 1


async def test_watch_drop_aborts_the_stream(emu: Emulator, client: Client) -> None:
    emu.faults.watch_drop_seconds = 0.05
    with pytest.raises(aiohttp.ClientPayloadError):
        async with client.session.get(emu.url + SLICES, params={"watch": "1"}) as response:
            await response.read()
    assert emu.faults_injected["watch_drop"] == 1


async def test_gone_on_resume(emu: Emulator, client: Client) -> None:
    emu.faults.gone_rate = 1.0
    params = {"watch": "1", "resourceVersion": str(emu.store.resource_version)}
    async with client.session.get(emu.url + SLICES, params=params) as response:
        assert response.status == 200
        lines = (await response.read()).splitlines()
    assert len(lines) == 1 and b'"code":410' in lines[0] and b'"ERROR"' in lines[0]
    assert emu.faults_injected["gone"] == 1
    # A watch without a version has nothing to resume and is never answered 410.
    async with client.session.get(
        emu.url + SLICES, params={"watch": "1", "timeoutSeconds": "1"}
    ) as response:
        assert b"ERROR" not in await response.read()


async def test_watch_drop_enabled_at_runtime_cuts_open_streams(
    emu: Emulator, client: Client
) -> None:
    with pytest.raises(aiohttp.ClientPayloadError):
        async with client.session.get(emu.url + SLICES, params={"watch": "1"}) as response:
            await asyncio.sleep(5)  # virtual time: the stream is idle and intact
            assert emu.faults_injected["watch_drop"] == 0
            emu.faults.watch_drop_seconds = 10  # counted from the stream's start
            await response.read()
    assert emu.faults_injected["watch_drop"] == 1
    assert asyncio.get_running_loop().time() == pytest.approx(10, abs=1.1)


# Start times (in looptime's default 1e-6 ticks) at which ``start + 3.0`` in floating point lies
# above every reachable clock value; before CLOCK_SLACK the watch loop spun at one instant there.
AWKWARD_STARTS = (0.008548, 0.014127, 0.019706)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("start", AWKWARD_STARTS)
async def test_watch_deadlines_are_reached_on_a_quantized_clock(
    emu: Emulator, client: Client, start: float
) -> None:
    loop = asyncio.get_running_loop()
    await asyncio.sleep(start - loop.time())
    async with client.session.get(
        emu.url + SLICES, params={"watch": "1", "timeoutSeconds": "3"}
    ) as response:
        await response.read()  # ends at the timeout
    assert loop.time() == pytest.approx(start + 3.0, abs=0.01)
    await asyncio.sleep(start + 10.0 - loop.time())
    emu.faults.watch_drop_seconds = 3.0
    with pytest.raises(aiohttp.ClientPayloadError):
        async with client.session.get(emu.url + SLICES, params={"watch": "1"}) as response:
            await response.read()
    assert emu.faults_injected["watch_drop"] == 1
    assert loop.time() == pytest.approx(start + 13.0, abs=0.01)
