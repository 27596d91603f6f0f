"""Two replicas with leader election; the leader vanishes and the standby takes over."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import addresses, cluster, eventually, pod, running_operator, service
from tests.e2e.proxy import CuttableProxy

pytestmark = pytest.mark.looptime

LEASE_DURATION = 15.0  # kube-controller-manager's timings, the operator's defaults
RETRY_PERIOD = 2.0


async def test_standby_takes_over_when_the_leader_dies(tmp_path: Path) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("operators")
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        proxy = CuttableProxy("127.0.0.1", emu.port)
        await proxy.start()
        try:
            common: dict[str, Any] = {"leader_election": True, "lease_namespace": "operators"}
            leader_kubeconfig = proxy.kubeconfig(Path(emu.kubeconfig_path), tmp_path / "kc.yaml")
            async with running_operator(emu, kubeconfig=leader_kubeconfig, **common) as leader:
                await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
                async with running_operator(emu, wait_leading=False, **common) as standby:
                    await standby.wait_ready()  # watching, indexes warm, not working
                    await asyncio.sleep(3 * RETRY_PERIOD)
                    assert leader.leading and not standby.leading
                    lease = emu.store.get("leases", "operators", "endpointslice-operator")
                    assert lease is not None
                    assert lease["spec"]["holderIdentity"] == leader.identity

                    loop = asyncio.get_running_loop()
                    await proxy.kill()  # the leader can neither renew nor release the Lease
                    killed_at = loop.time()
                    await asyncio.wait_for(standby.wait_leading(), LEASE_DURATION * 2)
                    took = loop.time() - killed_at
                    # The standby times the Lease from when it saw the last renewal change it,
                    # polling every retry period plus up to 120 % jitter (client-go): the last
                    # renewal is seen at most one jittered period late, and the expiry is acted
                    # on at most one jittered period late.
                    assert took <= LEASE_DURATION + 2 * (1 + 1.2) * RETRY_PERIOD
                    # the new leader does the work
                    pod(emu, "web-1", "10.1.0.2")
                    await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
                    # the cut-off leader gave up its workers when it could not renew
                    await eventually(lambda: not leader.leading, timeout=LEASE_DURATION)
        finally:
            await proxy.stop()


async def test_a_stopping_leader_releases_the_lease() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("operators")
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        common: dict[str, Any] = {"leader_election": True, "lease_namespace": "operators"}
        async with contextlib.AsyncExitStack() as leader_stack:
            leader = await leader_stack.enter_async_context(running_operator(emu, **common))
            async with running_operator(emu, wait_leading=False, **common) as standby:
                await standby.wait_ready()
                await asyncio.sleep(2 * RETRY_PERIOD)
                assert leader.leading and not standby.leading
                loop = asyncio.get_running_loop()
                stopped_at = loop.time()
                await leader_stack.aclose()  # a graceful stop of the leader
                await asyncio.wait_for(standby.wait_leading(), LEASE_DURATION)
                # released on shutdown: the standby need not wait for the lease to expire
                assert loop.time() - stopped_at <= (1 + 1.2) * RETRY_PERIOD
                lease = emu.store.get("leases", "operators", "endpointslice-operator")
                assert lease is not None
                assert lease["spec"]["holderIdentity"] == standby.identity
