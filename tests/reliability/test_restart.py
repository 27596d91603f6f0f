"""Restart and adoption: killed mid-sync, and started on slices that are already right."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from tests.e2e.harness import cluster, pod, service, settle
from tests.reliability.invariants import check, duplicate_endpoints, our_slices
from tests.reliability.replica import Replica

pytestmark = pytest.mark.looptime(resolution=1 / 1024)

PODS = 450  # five slices of at most 100 endpoints


def big_service(emu: Emulator) -> None:
    cluster(emu)
    service(emu, "big", selector={"app": "web"})
    service(emu, "small", selector={"app": "small"})
    for i in range(PODS):
        pod(
            emu, f"web-{i}", f"10.1.{i // 200}.{i % 200 + 1}", node_name=("node-a", "node-b")[i % 2]
        )
    pod(emu, "small-0", "10.2.0.1", labels={"app": "small"})


def slice_writes(emu: Emulator) -> int:
    return sum(
        emu.requests.count(verb=verb, resource="endpointslices")
        for verb in ("create", "update", "patch", "delete")
    )


async def converged(emu: Emulator, timeout: float = 600.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (report := check(emu)).ok:
        assert loop.time() < deadline, f"not converged: {report}"
        await asyncio.sleep(0.5)


@pytest.mark.parametrize("leader_election", [False, True])
async def test_killed_mid_sync_then_restarted_converges_without_duplicates(
    tmp_path: Path, leader_election: bool
) -> None:
    slow = FaultConfig(latency=0.5, fault_verbs={"create"})
    async with run_emulator(faults=slow) as emu:
        big_service(emu)
        first = Replica(emu, tmp_path, "first", leader_election=leader_election)
        second = Replica(emu, tmp_path, "second", leader_election=leader_election)
        try:
            await first.start()
            await emu.requests.wait_for(
                lambda log: log.count(verb="create", resource="endpointslices", code=201) >= 2,
                timeout=60,
            )
            await first.kill()  # two or three of the five slices exist, the rest never will
            partial = len(our_slices(emu))
            assert 2 <= partial < 6
            emu.faults = FaultConfig()
            await second.start()
            await second.wait_leading()
            await converged(emu)
            assert second.operator is not None
            await settle(second.operator)
        finally:
            await second.stop()
            await first.stop()
        big = [
            s
            for s in our_slices(emu)
            if s["metadata"]["labels"]["kubernetes.io/service-name"] == "big"
        ]
        assert duplicate_endpoints(big) == []
        assert sum(len(s["endpoints"]) for s in big) == PODS
        assert len(big) == 5  # the partial slices were adopted, not duplicated
        assert check(emu).ok


async def test_started_against_slices_already_right_writes_nothing(tmp_path: Path) -> None:
    async with run_emulator() as emu:
        big_service(emu)
        first = Replica(emu, tmp_path, "first")
        try:
            await first.start()
            await first.wait_leading()
            await converged(emu)
            assert first.operator is not None
            await settle(first.operator)
        finally:
            await first.stop()
        before = slice_writes(emu)
        for name in ("graceful", "killed"):
            replica = Replica(emu, tmp_path, name)
            try:
                await replica.start()
                await replica.wait_leading()
                assert replica.operator is not None
                await settle(replica.operator)
                assert (
                    replica.operator.metrics.sample_value(
                        "endpoint_slice_controller_syncs", {"result": "success"}
                    )
                    == 2
                )
                if name == "killed":
                    await replica.kill()
            finally:
                await replica.stop()
            assert slice_writes(emu) == before, name
        assert check(emu).ok
