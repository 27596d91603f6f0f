"""API writes: how many EndpointSlice writes the operator makes per change.

* ``api_writes_per_ready_flip``: one Service with 100 pods; one pod's readiness flips back and
  forth, each flip waited for on a slice watch. Baseline: the same flips with
  :mod:`benchmarks.lib.minimal_controller` (one PUT per pod change, as upstream writes once per
  endpoint change).
* ``api_writes_rollout_100_batch_0s`` / ``_batch_1s``: a rolling replacement of all 100 pods,
  one pod at a time, the way a Deployment and the kubelet drive it: create the new pod (Pending),
  the kubelet reports it Running with an IP, then Ready, then the old pod is deleted; one such
  API write every ``STEP`` seconds. With batch period 0 the operator follows every step; with
  1 s, changes within a second coalesce. Baseline of the 0 s figure: the endpoint changes the
  rollout makes (3 per pod: appears not ready, becomes ready, goes away), which is what
  upstream writes at batch period 0; of the 1 s figure: the 0 s figure.

All counts are EndpointSlice creates, updates, patches and deletes served by the emulator,
counted once the operator has been quiet for longer than its batch period.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from ..figure import Figure
from ..lib import minimal_controller
from ..lib.client import (
    LatencyTracker,
    create_pod,
    delete_pod,
    flip_ready,
    patch_status,
    ready_condition,
    slice_watch,
)
from ..lib.cluster import MANAGED_BY, Scenario, pod_body, pod_ip
from ..lib.probes import wait_quiet, wait_slices
from ..lib.processes import EmulatorHandle, emulator_process, minimal_controller_process
from ..lib.processes import operator_process as start_operator

REPLICAS = 100
STEP = 0.02
"""Seconds between two writes of the rollout."""
FLIP_TIMEOUT = 15.0


@dataclass(frozen=True, slots=True)
class Sizes:
    flips: int
    replicas: int


SIZES = {"full": Sizes(50, REPLICAS), "quick": Sizes(20, REPLICAS), "tiny": Sizes(3, 10)}


async def _flips(
    session: aiohttp.ClientSession,
    emulator: EmulatorHandle,
    scenario: Scenario,
    pod: str,
    count: int,
    managed_by: str,
) -> float:
    """Flip ``pod`` ``count`` times (starting from ready), each after the previous one showed;
    the slice writes per flip."""
    tracker = LatencyTracker()
    before = await wait_quiet(session, emulator.control, quiet=0.5)
    async with slice_watch(session, emulator.url, scenario.namespace, managed_by, tracker.observe):
        for number in range(count):
            ready = number % 2 == 1
            tracker.expect(pod, ready)
            await flip_ready(session, emulator.url, scenario.namespace, pod, ready)
            await tracker.wait_drained(FLIP_TIMEOUT)
            if tracker.pending:
                raise TimeoutError(f"flip {number} of {pod} did not show in {FLIP_TIMEOUT} s")
    after = await wait_quiet(session, emulator.control, quiet=0.5)
    return (after - before) / count


def _replacement(scenario: Scenario, replica: int) -> str:
    return f"{scenario.service_name(0)}-r{replica:03d}"


async def _rollout(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, scenario: Scenario, quiet: float
) -> int:
    """Replace every pod of Service 0, one at a time; the slice writes it caused."""
    service = scenario.service_name(0)
    namespace = scenario.namespace
    before = await wait_quiet(session, emulator.control, quiet=quiet)
    began = time.perf_counter()
    steps = 0

    async def step() -> None:
        nonlocal steps
        steps += 1
        delay = began + steps * STEP - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)

    for replica in range(scenario.pods_per_service):
        new = _replacement(scenario, replica)
        ip = pod_ip(1_000_000 + replica)
        await create_pod(
            session,
            emulator.url,
            pod_body(new, service, ip, f"node-{replica % scenario.nodes:04d}", namespace=namespace),
        )
        await step()
        running = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        await patch_status(
            session,
            emulator.url,
            namespace,
            new,
            {**running, "conditions": [ready_condition(False)]},
        )
        await step()
        await flip_ready(session, emulator.url, namespace, new, True)
        await step()
        await delete_pod(session, emulator.url, namespace, scenario.pod_name(0, replica))
        await step()
    after = await wait_quiet(session, emulator.control, quiet=quiet)
    return after - before


async def run(mode: str, workdir: Path) -> list[Figure]:
    sizes = SIZES.get(mode, SIZES["quick"])
    scenario = Scenario(services=1, pods_per_service=sizes.replicas, nodes=10)
    async with aiohttp.ClientSession() as session:
        async with emulator_process(scenario, workdir) as emulator:
            async with start_operator(emulator.kubeconfig, batch_period=0.0):
                await wait_slices(session, emulator.control, MANAGED_BY, 1)
                per_flip = await _flips(
                    session, emulator, scenario, scenario.pod_name(0, 0), sizes.flips, MANAGED_BY
                )
                rollout_0s = await _rollout(session, emulator, scenario, quiet=0.5)
            async with minimal_controller_process(emulator.url, scenario.namespace):
                # The original pods are gone after the rollout: flip a replacement.
                baseline_per_flip = await _flips(
                    session,
                    emulator,
                    scenario,
                    _replacement(scenario, 0),
                    sizes.flips,
                    minimal_controller.MANAGED_BY,
                )
        async with (
            emulator_process(scenario, workdir) as emulator,
            start_operator(emulator.kubeconfig, batch_period=1.0),
        ):
            await wait_slices(session, emulator.control, MANAGED_BY, 1)
            rollout_1s = await _rollout(session, emulator, scenario, quiet=1.5)
    name = f"api_writes_rollout_{sizes.replicas}"
    return [
        Figure("api_writes_per_ready_flip", per_flip, "writes", baseline_per_flip),
        # No baseline for the rollouts: nothing else ran them (the goal of the 1 s figure,
        # against the 0 s one of this run, is in benchmarks/goals.py).
        Figure(f"{name}_batch_0s", float(rollout_0s), "writes"),
        Figure(f"{name}_batch_1s", float(rollout_1s), "writes"),
    ]


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="bench-operator-") as workdir:
        return asyncio.run(run(mode, Path(workdir)))
