"""EndpointSelectors beside Services: the same pods published through either owner kind.

Two emulator processes with the same pods (``N`` groups of 10) and their slices already right:
in one, ``N`` opted-in Services own them; in the other, ``N`` EndpointSelectors of the same
names, selector and port (with the status a previous run left). The operator starts as its
own process on each, in the same run; the Services' figures are the baselines:

* ``selectors_startup_synced_s``: from spawning the operator until every owner has been synced
  once (for EndpointSelectors this includes discovering the CRD, listing it and starting Kopf
  for it).
* ``selectors_startup_writes``: writes at that start-up (slices, and for EndpointSelectors their
  status patches): 0 when nothing changed.
* ``selectors_cpu_us_per_event``: the operator's CPU time per readiness flip (three flips per
  owner, through the emulator's store), syncs and slice writes included.
* ``selectors_events_per_s``: those flips per second until all show in slices.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from ..figure import Figure
from ..lib.cluster import Scenario
from ..lib.probes import slice_writes
from ..lib.processes import UNLIMITED_WRITES, emulator_process, get_json, operator_process
from .scale import SETTLE, _events_through_operator, _synced

OWNERS = {"full": 1_000, "quick": 200, "tiny": 10}
PODS = 10
FLIPS_PER_OWNER = 3


@dataclass(frozen=True, slots=True)
class Run:
    synced_s: float
    writes: int
    events_per_s: float
    cpu_per_event: float


async def _run(session: aiohttp.ClientSession, scenario: Scenario, workdir: Path) -> Run:
    churn = scenario.services * FLIPS_PER_OWNER
    async with emulator_process(scenario, workdir) as emulator:

        async def writes() -> int:
            status = await get_json(session, f"{emulator.control}/selector-writes")
            return await slice_writes(session, emulator.control) + int(status["count"])

        before = await writes()
        began = time.perf_counter()
        async with operator_process(emulator.kubeconfig, extra=UNLIMITED_WRITES) as operator:
            await _synced(session, operator, scenario.services)
            synced_s = time.perf_counter() - began
            await asyncio.sleep(SETTLE)
            written = await writes() - before
            events_per_s, cpu_per_event, _, _ = await _events_through_operator(
                session, emulator, operator, scenario, churn
            )
    return Run(synced_s, written, events_per_s, cpu_per_event)


async def run(mode: str, workdir: Path) -> list[Figure]:
    owners = OWNERS.get(mode, OWNERS["quick"])
    async with aiohttp.ClientSession() as session:
        services = await _run(session, Scenario(owners, PODS, slices=True), workdir)
        selectors = await _run(
            session, Scenario(owners, PODS, slices=True, owner="endpointselector"), workdir
        )
    scale = f"{owners} x {PODS} pods"
    return [
        Figure("selectors_startup_synced_s", selectors.synced_s, f"s ({scale})", services.synced_s),
        Figure("selectors_startup_writes", float(selectors.writes), "writes", services.writes),
        Figure(
            "selectors_cpu_us_per_event",
            selectors.cpu_per_event * 1e6,
            "us",
            services.cpu_per_event * 1e6,
        ),
        Figure("selectors_events_per_s", selectors.events_per_s, "events/s", services.events_per_s),
    ]


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="bench-selectors-") as workdir:
        return asyncio.run(run(mode, Path(workdir)))
