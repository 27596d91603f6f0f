"""EndpointSelectors beside Services: the same pods published through either owner kind.

Two emulator processes with the same pods (``N`` groups of 10) and their slices already right:
in one, ``N`` opted-in Services own them; in the other, ``N`` EndpointSelectors of the same
names, selector and port (with the status a previous run left). The operator starts as its
own process on each, in the same run; the Services' figures are the baselines:

* ``selectors_startup_synced_s``: from spawning the operator until every owner has been synced
  once (for EndpointSelectors this includes discovering the CRD, listing it and starting Kopf
  for it): the fastest of :data:`STARTS` (5) starts on each emulator, the two kinds in turn, so
  that a figure and its baseline see the same machine load (one start each made the ratio
  swing with whatever else the machine ran: 1.55x was measured on a loaded machine, 0.33x and
  1.13x elsewhere; most of a start under load is the interpreter's imports, the same for
  both). Goal: at most 1.2x the Services' (:mod:`benchmarks.goals`).
* ``selectors_startup_writes``: writes at those start-ups (slices, and for EndpointSelectors
  their status patches): 0 when nothing changed.
* ``selectors_cpu_us_per_event``: the operator's CPU time per readiness flip (three flips per
  owner, through the emulator's store), syncs and slice writes included.
* ``selectors_events_per_s``: those flips per second until all show in slices.
* ``selectors_idle_cpu_pct``: the operator's CPU while nothing happens (after start-up, for
  :data:`IDLE_SECONDS`), in percent of a core (for EndpointSelectors: their second Kopf
  instance, and the status counts writer's rounds every ``STATUS_INTERVAL`` s).
* ``selectors_flapping_status_writes``: then one pod of each of :data:`FLAPPING` owners flaps
  (its readiness flipped every :data:`FLAP_PERIOD` s for :data:`FLAP_SECONDS` s): the
  EndpointSelectors' status writes, counted until the counts writer ran once more after the
  last flip; the baseline is the slice writes of the same flaps (what a status write per sync
  would cost: the counts change with every flip). Meanwhile the owners' other ready pods turn
  not ready one by one, spread over the window, so that two status rounds never see the same
  counts (one pod flapping alone shows the same counts after every even number of flips).
  Rate-limited, the value stays near ``FLAPPING * FLAP_SECONDS / STATUS_INTERVAL`` however
  fast the pods flap.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from endpointslice_operator.controller.endpoint_selector.status import STATUS_INTERVAL

from ..figure import Figure
from ..lib.cluster import Scenario
from ..lib.probes import slice_writes
from ..lib.processes import (
    UNLIMITED_WRITES,
    EmulatorHandle,
    cpu_seconds,
    emulator_process,
    get_json,
    operator_process,
)
from .scale import SETTLE, _churn, _events_through_operator, _synced

OWNERS = {"full": 1_000, "quick": 200, "tiny": 10}
PODS = 10
FLIPS_PER_OWNER = 3
IDLE_SECONDS = 10.0
FLAPPING = 10
FLAP_PERIOD = 0.25
FLAP_SECONDS = 15.0
STARTS = {"full": 5, "quick": 5, "tiny": 2}
"""Operator starts per kind for ``selectors_startup_synced_s`` (the kinds in turn, which of
them goes first alternating from round to round)."""


@dataclass(frozen=True, slots=True)
class Run:
    writes: int
    events_per_s: float
    cpu_per_event: float
    idle_cpu: float
    """CPU seconds per second while idle."""
    flap_slice_writes: int
    flap_status_writes: int


async def _status_writes(session: aiohttp.ClientSession, emulator: EmulatorHandle) -> int:
    status = await get_json(session, f"{emulator.control}/selector-writes")
    return int(status["count"])


async def _writes(session: aiohttp.ClientSession, emulator: EmulatorHandle) -> int:
    """Slice writes, and EndpointSelector status writes, the emulator served so far."""
    return await slice_writes(session, emulator.control) + await _status_writes(session, emulator)


async def _startup_s(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, owners: int
) -> float:
    """Seconds from spawning the operator until it synced every owner once."""
    began = time.perf_counter()
    async with operator_process(emulator.kubeconfig, extra=UNLIMITED_WRITES) as operator:
        await _synced(session, operator, owners)
        return time.perf_counter() - began


async def _run(
    session: aiohttp.ClientSession, emulator: EmulatorHandle, scenario: Scenario, before: int
) -> Run:
    """One more start of the operator, then the figures after start-up; ``before``: the
    writes the emulator had served before the first start."""
    churn = scenario.services * FLIPS_PER_OWNER

    async def status_writes() -> int:
        return await _status_writes(session, emulator)

    async def writes() -> int:
        return await _writes(session, emulator)

    async with operator_process(emulator.kubeconfig, extra=UNLIMITED_WRITES) as operator:
        await _synced(session, operator, scenario.services)
        await asyncio.sleep(SETTLE)
        written = await writes() - before
        cpu, began_idle = cpu_seconds(operator.pid), time.perf_counter()
        await asyncio.sleep(IDLE_SECONDS)
        idle_cpu = (cpu_seconds(operator.pid) - cpu) / (time.perf_counter() - began_idle)
        events_per_s, cpu_per_event, _, _ = await _events_through_operator(
            session, emulator, operator, scenario, churn
        )
        await asyncio.sleep(STATUS_INTERVAL + SETTLE)  # the flips' status written
        slices_before, status_before = (
            await slice_writes(session, emulator.control),
            await status_writes(),
        )
        flapping = min(FLAPPING, scenario.services)
        # Pod 0 of each flapping owner flips every FLAP_PERIOD, and its still-ready pods
        # (those the flips above left ready) turn not ready one by one, spread over the
        # window. The slow part keeps every status round from seeing the counts it saw
        # before: pod 0 alone would put the same counts in front of a round after an even
        # number of flips, and all owners flip together, so a run could write nothing.
        draining = list(range(FLIPS_PER_OWNER, PODS))
        drain_every = FLAP_SECONDS / len(draining)
        loop = asyncio.get_running_loop()
        began_flapping = loop.time()
        drained = 0
        while (elapsed := loop.time() - began_flapping) < FLAP_SECONDS:
            await _churn(session, emulator, flapping, 0)  # pod 0 of the first owners
            while drained < min(len(draining), int(elapsed / drain_every) + 1):
                await _churn(session, emulator, flapping, draining[drained] * scenario.services)
                drained += 1
            await asyncio.sleep(FLAP_PERIOD)
        for replica in draining[drained:]:  # a loaded machine's late steps
            await _churn(session, emulator, flapping, replica * scenario.services)
        # The counts writer runs once more after the last flip showed in slices.
        await asyncio.sleep(STATUS_INTERVAL + SETTLE)
        flap_slices = await slice_writes(session, emulator.control) - slices_before
        flap_status = await status_writes() - status_before
    return Run(written, events_per_s, cpu_per_event, idle_cpu, flap_slices, flap_status)


async def run(mode: str, workdir: Path) -> list[Figure]:
    owners = OWNERS.get(mode, OWNERS["quick"])
    starts = STARTS.get(mode, STARTS["quick"])
    for_services = Scenario(owners, PODS, slices=True)
    for_selectors = Scenario(owners, PODS, slices=True, owner="endpointselector")
    async with (
        aiohttp.ClientSession() as session,
        emulator_process(for_services, workdir) as services_emulator,
        emulator_process(for_selectors, workdir) as selectors_emulator,
    ):
        emulators = {"services": services_emulator, "selectors": selectors_emulator}
        before = {kind: await _writes(session, emulator) for kind, emulator in emulators.items()}
        startup = dict.fromkeys(emulators, float("inf"))
        for round_ in range(starts):
            for kind in sorted(emulators, reverse=round_ % 2 == 1):
                elapsed = await _startup_s(session, emulators[kind], owners)
                startup[kind] = min(startup[kind], elapsed)
        services = await _run(session, services_emulator, for_services, before["services"])
        selectors = await _run(session, selectors_emulator, for_selectors, before["selectors"])
    scale = f"{owners} x {PODS} pods, best of {starts} starts"
    return [
        Figure(
            "selectors_startup_synced_s",
            startup["selectors"],
            f"s ({scale})",
            startup["services"],
        ),
        Figure("selectors_startup_writes", float(selectors.writes), "writes", services.writes),
        Figure(
            "selectors_cpu_us_per_event",
            selectors.cpu_per_event * 1e6,
            "us",
            services.cpu_per_event * 1e6,
        ),
        Figure("selectors_events_per_s", selectors.events_per_s, "events/s", services.events_per_s),
        Figure(
            "selectors_idle_cpu_pct",
            selectors.idle_cpu * 100,
            "% of a core",
            services.idle_cpu * 100,
        ),
        Figure(
            "selectors_flapping_status_writes",
            float(selectors.flap_status_writes),
            f"status writes ({min(FLAPPING, owners)} owners flapping {FLAP_SECONDS:g} s)",
            float(selectors.flap_slice_writes),
        ),
    ]


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="bench-selectors-") as workdir:
        return asyncio.run(run(mode, Path(workdir)))
