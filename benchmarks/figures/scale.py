"""Scale: start-up, memory and sustained event throughput of the operator process.

Two clusters with the same Services (``S``) and their slices already right, in an emulator
process: one pod per Service, then ten (full mode: 10,000 Services, 100,000 pods). For each,
the operator starts as its own process:

* ``startup_s``: from spawning the process to ``/readyz`` answering 200 (initial listings in)
  on the large cluster; the scale is in the unit. Baseline: a plain client listing the same
  Pods, Services, EndpointSlices and Nodes in one request each and decoding the JSON.
* ``startup_synced_s``: until every Service has been synced once, and ``startup_writes``: the
  slice writes those syncs made (must be 0: the slices are right already).
* ``memory_per_pod_bytes``: RSS growth per pod between the two clusters (the Services and
  slices are the same in both, so the difference is the pods and their endpoints). Baseline:
  the average size of one pod's JSON as the API server sends it.
* ``rss_mb``: the operator's RSS on the large cluster, with the small cluster's as baseline.
* ``events_per_s_sustained``: opted-in pods' readiness flips once each (three per Service:
  30,000 pods in full mode, 1,500 in quick), written into the emulator's store as fast as it
  takes them; the rate is the number of flips over the time until the last of them shows in a
  slice (seen by a slice watch here).
  Baseline: the rate at which a plain watch client merely receives and decodes the same pod
  events.
  ``cpu_us_per_event``: the operator's CPU time (user + system) over the same flips, per flip,
  syncs and writes included; baseline: the plain client's CPU time per event.
  ``events_queue_depth_max``: the largest work-queue depth sampled meanwhile; the queue holds
  each Service at most once, so it is bounded by the Services (the baseline).
  ``emulator_cpu_us_per_event``: the emulator process's CPU time over the same flips, per
  flip (the flip itself, serving the operator's writes, both watches); baseline: the same for
  the plain client's flips (the flip and one watch). Where the rate is not the operator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson

from ..figure import Figure
from ..lib.client import LatencyTracker, slice_watch
from ..lib.cluster import MANAGED_BY, OPTED_IN_LABEL, Scenario
from ..lib.probes import metric, slice_writes, wait_quiet
from ..lib.processes import (
    UNLIMITED_WRITES,
    EmulatorHandle,
    OperatorHandle,
    cpu_seconds,
    emulator_process,
    operator_process,
    rss_bytes,
)

SERVICES = {"full": 10_000, "quick": 500, "tiny": 20}
FLIPS_PER_SERVICE = 3
"""Readiness flips for ``events_per_s_sustained``: this many per Service at every scale (one
per pod, consecutive flips on different Services), so that each Service's flips are spread
over the run the same way at 5,000 and 100,000 pods. The share of flips that coalesce into one
sync depends on that spread (a Service still queued takes the next flip along), and with it
the CPU per flip: 10 flips per Service at 500 Services cost 100 us each, 3 per Service 220 us,
the same as at 100,000 pods."""
PODS_SMALL, PODS_LARGE = 1, 10
SYNC_TIMEOUT = 900.0
CHURN_TIMEOUT = 300.0
DEPTH_SAMPLE_INTERVAL = 0.5
SETTLE = 1.0
"""Seconds to let the operator's allocations settle before reading its RSS."""
MB = 1024 * 1024

LISTS = (
    "/api/v1/namespaces/{namespace}/pods",
    "/api/v1/namespaces/{namespace}/services",
    "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
    "/api/v1/nodes",
)


@dataclass(frozen=True, slots=True)
class Run:
    """What one operator start on one cluster measured."""

    startup_s: float
    synced_s: float
    writes: int
    rss: int
    list_s: float
    pod_bytes: float


async def _list_floor(
    session: aiohttp.ClientSession, emulator: EmulatorHandle
) -> tuple[float, int]:
    """Seconds to list and decode everything the operator lists; bytes of the pod listing."""
    pod_bytes = 0
    began = time.perf_counter()
    for path in LISTS:
        async with session.get(emulator.url + path.format(namespace="bench")) as response:
            response.raise_for_status()
            raw = await response.read()
        json.loads(raw)
        if "/pods" in path:
            pod_bytes = len(raw)
    return time.perf_counter() - began, pod_bytes


async def _synced(session: aiohttp.ClientSession, operator: OperatorHandle, services: int) -> None:
    deadline = time.monotonic() + SYNC_TIMEOUT
    while True:
        done = 0.0
        for name in ("endpoint_slice_controller_syncs", "endpoint_slice_controller_syncs_total"):
            done += await metric(session, operator.metrics_url, name)
        if done >= services:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{done:.0f} of {services} Services synced in {SYNC_TIMEOUT} s")
        await asyncio.sleep(0.1)


async def _start(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, scenario: Scenario
) -> tuple[Run, contextlib.AsyncExitStack, OperatorHandle]:
    list_s, listing_bytes = await _list_floor(session, emulator)
    before = await slice_writes(session, emulator.control)
    stack = contextlib.AsyncExitStack()
    try:
        began = time.perf_counter()
        operator = await stack.enter_async_context(
            operator_process(emulator.kubeconfig, extra=UNLIMITED_WRITES)
        )
        await _synced(session, operator, scenario.services)
        synced_s = time.perf_counter() - began
        await asyncio.sleep(SETTLE)
        writes = await slice_writes(session, emulator.control) - before
        run = Run(
            startup_s=operator.startup_s,
            synced_s=synced_s,
            writes=writes,
            rss=rss_bytes(operator.pid),
            list_s=list_s,
            pod_bytes=listing_bytes / max(1, scenario.pods),
        )
    except BaseException:
        await stack.aclose()
        raise
    return run, stack, operator


async def _max_depth(
    session: aiohttp.ClientSession, operator: OperatorHandle, out: list[float]
) -> None:
    while True:
        out.append(await metric(session, operator.metrics_url, "workqueue_depth"))
        await asyncio.sleep(DEPTH_SAMPLE_INTERVAL)


async def _churn(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, count: int, start: int
) -> None:
    url = f"{emulator.control}/churn?count={count}&start={start}"
    async with session.post(url, timeout=aiohttp.ClientTimeout(total=CHURN_TIMEOUT)) as response:
        response.raise_for_status()
        await response.read()


async def _events_through_operator(
    session: aiohttp.ClientSession,
    emulator: EmulatorHandle,
    operator: OperatorHandle,
    scenario: Scenario,
    count: int,
) -> tuple[float, float, float, float]:
    """Flip ``count`` opted-in pods once each through the store; (events/s until all show,
    operator CPU seconds per event, max work-queue depth, emulator CPU seconds per event)."""
    tracker = LatencyTracker()
    depths: list[float] = []
    await wait_quiet(session, emulator.control, quiet=0.5)
    async with slice_watch(session, emulator.url, scenario.namespace, MANAGED_BY, tracker.observe):
        for number in range(count):
            _, pod = scenario.opted_in_pod(number)
            tracker.expect(pod, False)
        sampler = asyncio.create_task(_max_depth(session, operator, depths))
        try:
            began, cpu = time.perf_counter(), cpu_seconds(operator.pid)
            served = cpu_seconds(emulator.pid)
            await _churn(session, emulator, count, 0)
            await tracker.wait_drained(CHURN_TIMEOUT)
            elapsed, cpu = time.perf_counter() - began, cpu_seconds(operator.pid) - cpu
            served = cpu_seconds(emulator.pid) - served
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
    if tracker.pending:
        raise TimeoutError(f"{len(tracker.pending)} flips not seen in {CHURN_TIMEOUT} s")
    return count / elapsed, cpu / count, max(depths, default=0.0), served / count


async def _events_plain_watch(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, scenario: Scenario, count: int
) -> tuple[float, float, float]:
    """Flip the same pods back; (events/s a plain client receives and decodes them at, its
    CPU seconds per event, the emulator's CPU seconds per event)."""
    pods_url = emulator.url + LISTS[0].format(namespace=scenario.namespace)
    selector = f"{OPTED_IN_LABEL}=true"
    async with session.get(pods_url, params={"labelSelector": selector, "limit": "1"}) as response:
        response.raise_for_status()
        version = (await response.json())["metadata"]["resourceVersion"]
    params = {"watch": "1", "labelSelector": selector, "resourceVersion": version}
    timeout = aiohttp.ClientTimeout(total=CHURN_TIMEOUT)
    async with session.get(pods_url, params=params, timeout=timeout) as response:
        response.raise_for_status()
        began, cpu = time.perf_counter(), time.process_time()
        served = cpu_seconds(emulator.pid)
        churn = asyncio.create_task(_churn(session, emulator, count, 0))
        seen = 0
        try:
            async for line in response.content:
                if line.strip() and orjson.loads(line).get("type") == "MODIFIED":
                    seen += 1
                    if seen == count:
                        break
            elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
        finally:
            await churn
        served = cpu_seconds(emulator.pid) - served
    return count / elapsed, cpu / count, served / count


async def run(mode: str, workdir: Path) -> list[Figure]:
    services = SERVICES.get(mode, SERVICES["quick"])
    small = Scenario(services, PODS_SMALL, slices=True)
    large = Scenario(services, PODS_LARGE, slices=True)
    churn = min(large.opted_in_pods, services * FLIPS_PER_SERVICE)
    async with aiohttp.ClientSession() as session:
        async with emulator_process(small, workdir) as emulator:
            first, stack, _ = await _start(session, emulator, small)
            await stack.aclose()
        async with emulator_process(large, workdir) as emulator:
            second, stack, operator = await _start(session, emulator, large)
            async with stack:
                events_per_s, cpu_per_event, depth, served = await _events_through_operator(
                    session, emulator, operator, large, churn
                )
            plain_per_s, plain_cpu_per_event, plain_served = await _events_plain_watch(
                session, emulator, large, churn
            )
    scale = f"{large.pods} pods, {services} svc"
    return [
        Figure("startup_s", second.startup_s, f"s ({scale})", second.list_s),
        # No baseline: the time to the first syncs done (no run of anything else compares),
        # and the writes at start-up (its goal, 0, is in benchmarks/goals.py).
        Figure("startup_synced_s", second.synced_s, f"s ({scale})"),
        Figure("startup_writes", float(second.writes), "writes"),
        Figure(
            "memory_per_pod_bytes",
            (second.rss - first.rss) / (large.pods - small.pods),
            "B/pod",
            second.pod_bytes,
        ),
        Figure("rss_mb", second.rss / MB, f"MB ({scale})", first.rss / MB),
        Figure("events_per_s_sustained", events_per_s, "events/s", plain_per_s),
        Figure("cpu_us_per_event", cpu_per_event * 1e6, "us", plain_cpu_per_event * 1e6),
        Figure("events_queue_depth_max", depth, "keys"),
        Figure("scale_services", float(services), "Services"),
        Figure("emulator_cpu_us_per_event", served * 1e6, "us", plain_served * 1e6),
    ]


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as workdir:
        return asyncio.run(run(mode, Path(workdir)))
