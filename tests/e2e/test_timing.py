"""Timing behaviour on virtual time (looptime): batching, backoff, conflicts."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from tests.e2e.harness import (
    addresses,
    cluster,
    conditions,
    events,
    eventually,
    node,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
    writes,
)

pytestmark = pytest.mark.looptime


async def test_batch_period_coalesces_pod_events_the_upstream_way() -> None:
    # write_policy="kcm": every pod change waits the whole batch period, as upstream's.
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(3):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu, batch_period=1.0, write_policy="kcm") as op:
            await eventually(lambda: len(addresses(emu, "web")) == 3)
            await settle(op)
            loop = asyncio.get_running_loop()
            before = writes(emu)["update"]
            started = loop.time()
            for i in range(3):  # three pod events within one batch period
                set_ready(emu, f"web-{i}", False)
                await asyncio.sleep(0.1)
            await eventually(
                lambda: all(c == (False, False, False) for c in conditions(emu, "web").values())
            )
            assert loop.time() - started >= 1.0  # held back for the batch period
            await settle(op)
            assert writes(emu)["update"] - before == 1


async def _flip_burst(emu: Emulator) -> float:
    """18 readiness changes, one every 50 ms; returns the loop time of the last."""
    for i in range(1, 10):
        set_ready(emu, f"web-{i}", False)
        await asyncio.sleep(0.05)
        set_ready(emu, f"web-{i}", True, when="2026-01-01T00:02:00Z")
        await asyncio.sleep(0.05)
    return asyncio.get_running_loop().time()


async def test_changes_are_written_at_once_while_the_budget_has_room() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(10):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu, batch_period=1.0) as op:
            await eventually(lambda: len(addresses(emu, "web")) == 10)
            await settle(op)
            loop = asyncio.get_running_loop()
            before = writes(emu)["update"]
            started = loop.time()
            set_ready(emu, "web-0", False)
            await eventually(lambda: conditions(emu, "web")["10.1.0.1"][0] is False)
            assert loop.time() - started < 0.1  # not held back
            # 18 changes at 20/s: within the default budget (20/s, burst 30), each at once
            await _flip_burst(emu)
            await settle(op)
            assert writes(emu)["update"] - before == 1 + 18


async def test_a_burst_coalesces_while_the_budget_is_short() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(10):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(
            emu, batch_period=1.0, kube_api_qps=5.0, kube_api_burst=4
        ) as op:
            await eventually(lambda: len(addresses(emu, "web")) == 10)
            await settle(op)
            await asyncio.sleep(2.0)  # the budget refills
            before = writes(emu)["update"]
            last_change = await _flip_burst(emu)
            loop = asyncio.get_running_loop()
            await eventually(
                lambda: [c[0] for c in conditions(emu, "web").values()].count(True) == 10
            )
            # the batch period bounds the hold-back, the budget adds at most a token's wait
            assert loop.time() - last_change <= 1.0 + 1 / 5.0 + 0.1
            await settle(op)
            burst_writes = writes(emu)["update"] - before
            # 18 changes: the burst credit at once, then coalesced (at 5/s the budget alone
            # would allow 9 writes in those 0.9 s plus the tail)
            assert 4 <= burst_writes <= 8


async def test_backoff_after_api_errors_then_convergence() -> None:
    faults = FaultConfig(
        fail_rate=1.0, fault_verbs={"create"}, fault_resources={"endpointslices"}, fail_codes=(500,)
    )
    async with run_emulator(faults=faults, seed=3) as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            loop = asyncio.get_running_loop()
            await eventually(lambda: writes(emu)["create"] >= 1, interval=0.01)
            first = loop.time()
            # per-key exponential backoff: retries 1 s, 2 s and 4 s after the failures
            await asyncio.sleep(first + 7.5 - loop.time())
            assert writes(emu)["create"] == 4
            await asyncio.sleep(first + 14.5 - loop.time())
            assert writes(emu)["create"] == 4  # the next retry is 8 s later, at 15 s
            await asyncio.sleep(first + 15.5 - loop.time())
            assert writes(emu)["create"] == 5
            assert (
                op.metrics.sample_value("endpoint_slice_controller_syncs", {"result": "error"}) == 5
            )
            failed = events(emu, "FailedToUpdateEndpointSlices")
            assert len(failed) == 1  # one Event, aggregated
            assert failed[0]["count"] == 5
            emu.faults.fail_rate = 0.0
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"}, timeout=40)
            assert loop.time() - first >= 31.0  # the retry after 16 s more


async def test_conflict_on_update_is_retried_until_it_converges() -> None:
    async with run_emulator(seed=5) as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        async with running_operator(emu) as op:
            await eventually(lambda: len(addresses(emu, "web")) == 2)
            await settle(op)
            emu.faults = FaultConfig(
                conflict_rate=1.0, fault_verbs={"update"}, fault_resources={"endpointslices"}
            )
            set_ready(emu, "web-0", False)
            await eventually(lambda: emu.requests.count(verb="update", code=409) >= 2)
            assert conditions(emu, "web")["10.1.0.1"] == (True, True, False)
            emu.faults = FaultConfig()
            await eventually(
                lambda: conditions(emu, "web")["10.1.0.1"] == (False, False, False), timeout=30
            )


async def test_pod_deleted_while_kopf_relists_after_410_is_not_a_ghost() -> None:
    # Pod watches are cut every 3 s and resumed from their resourceVersion (no harm so far).
    drops = FaultConfig(watch_drop_seconds=3.0, fault_resources={"pods"})
    async with run_emulator(faults=drops, seed=7) as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            # The next resume gets 410 Gone: Kopf backs off, then re-lists.
            emu.faults.gone_rate = 1.0
            await eventually(lambda: emu.faults_injected["gone"] >= 1, interval=0.01)
            # Deleted while nobody watches: the re-list will not show it, and no DELETED comes.
            emu.store.delete("pods", "e2e", "web-1")
            emu.faults.gone_rate = 0.0
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"}, timeout=30)
            assert op.indexes.pods.get("e2e", "web-1") is None


@pytest.mark.chaos
async def test_converges_exactly_after_a_storm_of_faults() -> None:
    storm = FaultConfig(
        fail_rate=0.3,
        conflict_rate=0.2,
        watch_drop_seconds=2.0,
        gone_rate=0.5,
        fault_resources={"endpointslices", "pods"},
        fault_verbs={"create", "update", "delete"},
    )
    async with run_emulator(faults=storm, seed=11) as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(20):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu) as op:
            for step in range(6):
                await asyncio.sleep(1.0)
                for i in range(step * 30, step * 30 + 30):
                    pod(emu, f"web-{20 + i}", f"10.2.{i // 200}.{i % 200 + 1}")
                for i in range(step * 3, step * 3 + 3):
                    emu.store.delete("pods", "e2e", f"web-{i}")
                set_ready(emu, f"web-{20 + step}", False)
            emu.faults = FaultConfig()
            expected = {p["status"]["podIPs"][0]["ip"] for p in emu.store.list("pods", "e2e")}
            await eventually(lambda: addresses(emu, "web") == expected, timeout=120)
            await settle(op)
            not_ready = {a for a, c in conditions(emu, "web").items() if not c[0]}
            assert not_ready == {f"10.2.0.{i + 1}" for i in range(6)}  # web-20 .. web-25
            sizes = [len(s["endpoints"]) for s in slices(emu, "web")]
            assert sum(sizes) == len(expected) and max(sizes) <= 100


async def test_pods_on_an_unknown_node_are_retried_until_the_node_appears() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2", node_name="node-late")
        async with running_operator(emu) as op:
            # written without the pod whose node is unknown, and retried with backoff
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            failed = await eventually(lambda: events(emu, "FailedToUpdateEndpointSlices"))
            assert "Node node-late Not Found" in failed[0]["message"]
            node(emu, "node-late", "zone-b")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"}, timeout=30)
            await settle(op)
            errors = op.metrics.sample_value("endpoint_slice_controller_syncs", {"result": "error"})
            assert errors is not None and errors >= 1
