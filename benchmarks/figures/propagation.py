"""Propagation latency: a pod status write until the slice write is visible on a watch.

The cluster (full mode): 1,000 opted-in Services x 10 pods plus 1,000 other Services x 10 pods,
in an emulator process. The operator runs as its own process with batch period 0. Readiness
flips arrive at a steady rate (50/s for 30 s in full mode), each on a pod not flipped before; a
slice watch in this process times each flip until a slice shows the pod's new readiness.

The baseline is the same measurement, on the same emulator, with the operator stopped and
:mod:`benchmarks.lib.minimal_controller` (watch pods, PUT the slice) running instead.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from ..figure import Figure
from ..lib import minimal_controller
from ..lib.client import LatencyTracker, flip_ready, percentile, slice_watch
from ..lib.cluster import MANAGED_BY, Scenario
from ..lib.probes import wait_quiet, wait_slices
from ..lib.processes import (
    UNLIMITED_WRITES,
    EmulatorHandle,
    emulator_process,
    minimal_controller_process,
    operator_process,
)

DRAIN_TIMEOUT = 15.0
"""How long the last flips may take to show before they count as lost."""


@dataclass(frozen=True, slots=True)
class Load:
    scenario: Scenario
    rate: float
    seconds: float

    @property
    def flips(self) -> int:
        return max(1, round(self.rate * self.seconds))


LOADS = {
    "full": Load(Scenario(1000, 10, other_services=1000, other_pods_per_service=10), 50, 30),
    "quick": Load(Scenario(100, 10, other_services=100, other_pods_per_service=10), 50, 6),
    "tiny": Load(Scenario(10, 5, other_services=10, other_pods_per_service=5), 20, 1),
}


@dataclass(slots=True)
class Result:
    latencies: list[float]
    lost: int


class FlipSource:
    """Hands out pods to flip, each one once while it can (consecutive pods hit different
    Services), and remembers each pod's readiness."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.next = 0
        self.ready: dict[str, bool] = {}

    def take(self) -> tuple[str, bool]:
        _, pod = self.scenario.opted_in_pod(self.next)
        self.next += 1
        ready = not self.ready.get(pod, True)
        self.ready[pod] = ready
        return pod, ready


async def measure(
    session: aiohttp.ClientSession,
    emulator: EmulatorHandle,
    load: Load,
    source: FlipSource,
    managed_by: str,
) -> Result:
    """Flip ``load.flips`` pods at ``load.rate`` and time each until a slice shows it."""
    tracker = LatencyTracker()
    namespace = load.scenario.namespace
    async with slice_watch(session, emulator.url, namespace, managed_by, tracker.observe):
        writes: set[asyncio.Task[None]] = set()
        began = time.perf_counter()
        for number in range(load.flips):
            delay = began + number / load.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            pod, ready = source.take()
            tracker.expect(pod, ready)
            task = asyncio.create_task(flip_ready(session, emulator.url, namespace, pod, ready))
            writes.add(task)
            task.add_done_callback(writes.discard)
        await asyncio.gather(*writes)
        await tracker.wait_drained(DRAIN_TIMEOUT)
    lost = len(tracker.pending)
    return Result(tracker.latencies + [DRAIN_TIMEOUT] * lost, lost)


async def run(mode: str, workdir: Path) -> list[Figure]:
    load = LOADS.get(mode, LOADS["quick"])
    scenario = load.scenario
    source = FlipSource(scenario)
    async with (
        aiohttp.ClientSession() as session,
        emulator_process(scenario, workdir) as emulator,
    ):
        async with operator_process(emulator.kubeconfig, extra=UNLIMITED_WRITES):
            await wait_slices(session, emulator.control, MANAGED_BY, scenario.services)
            await wait_quiet(session, emulator.control, quiet=0.5)
            ours = await measure(session, emulator, load, source, MANAGED_BY)
        async with minimal_controller_process(emulator.url, scenario.namespace):
            baseline = await measure(session, emulator, load, source, minimal_controller.MANAGED_BY)
    for who, result in (("operator", ours), ("baseline", baseline)):
        if result.lost:
            sys.stderr.write(
                f"propagation: {result.lost} flips not seen within {DRAIN_TIMEOUT} s ({who})\n"
            )
    ms = 1000.0
    figures = [
        Figure(
            f"propagation_p{int(share * 100)}_ms",
            percentile(ours.latencies, share) * ms,
            "ms",
            percentile(baseline.latencies, share) * ms,
        )
        for share in (0.5, 0.99)
    ]
    if ours.lost or baseline.lost:
        figures.append(
            Figure("propagation_lost_flips", float(ours.lost), "flips", float(baseline.lost))
        )
    return figures


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="bench-propagation-") as workdir:
        return asyncio.run(run(mode, Path(workdir)))
