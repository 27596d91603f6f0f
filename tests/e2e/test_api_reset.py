"""An API server that comes back with its state reset (an etcd restore, a rebuilt control
plane): the operator notices, drops its indexes, lists again and converges, and ``/readyz``
says it is not ready meanwhile. Modelled here by restarting the emulator empty on the same port;
``tests/realcluster/test_api_reset.py`` does the same with a real kube-apiserver."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.controlplane import free_port
from tests.e2e.harness import addresses, cluster, eventually, pod, service, set_ready, settings

pytestmark = pytest.mark.looptime(resolution=1 / 1024)


async def get(port: int, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}{path}") as response:
            return response.status, await response.text()


def _uid(service: dict[str, Any] | None) -> str:
    assert service is not None
    return str(service["metadata"]["uid"])


def first_life(emu: Emulator) -> None:
    cluster(emu)
    service(emu, "web", selector={"app": "web"})
    service(emu, "old-only", selector={"app": "old"})
    pod(emu, "web-0", "10.1.0.1")
    pod(emu, "web-1", "10.1.0.2")
    pod(emu, "old-0", "10.1.9.1", labels={"app": "old"})
    for flip in range(40):  # move the resourceVersion well past what the new server reaches
        set_ready(emu, "web-1", flip % 2 == 0)


def second_life(emu: Emulator) -> None:
    cluster(emu)
    service(emu, "web", selector={"app": "web"})  # the same name, a new uid
    pod(emu, "web-5", "10.2.0.5")


@pytest.mark.parametrize("watch_gap", [0.0, 30.0], ids=["at-once", "after-30s"])
async def test_operator_converges_on_a_server_that_came_back_empty(
    tmp_path: Path, watch_gap: float
) -> None:
    port, health_port = free_port(), free_port()
    kubeconfig = tmp_path / "kubeconfig"
    async with run_emulator(port=port, kubeconfig_path=kubeconfig, seed=1) as old:
        first_life(old)
        operator = Operator(
            settings(old, metrics_port=health_port), serve_health=True, identity="replica"
        )
        task = asyncio.create_task(operator.run())
        await eventually(lambda: addresses(old, "web") == {"10.1.0.1", "10.1.0.2"}, timeout=60)
        await eventually(lambda: addresses(old, "old-only") == {"10.1.9.1"})
        old_uid = _uid(old.store.get("services", "e2e", "web"))
    try:
        await asyncio.sleep(watch_gap)  # the watches retry against nothing meanwhile
        async with run_emulator(port=port, kubeconfig_path=kubeconfig, seed=2) as new:
            second_life(new)
            new_uid = _uid(new.store.get("services", "e2e", "web"))
            assert new_uid != old_uid
            assert new.store.resource_version < old.store.resource_version

            # Until the new listings are in, the operator says it is not ready.
            await eventually(lambda: operator.resets == 1, timeout=60)
            await eventually(lambda: addresses(new, "web") == {"10.2.0.5"}, timeout=60)
            assert (await get(health_port, "/readyz"))[0] == 200
            (web,) = [
                s
                for s in new.store.list("endpointslices", "e2e")
                if s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"
            ]
            assert web["metadata"]["ownerReferences"][0]["uid"] == new_uid
            # Nothing is written for the Service that only the old server had.
            assert addresses(new, "old-only") == set()
            _, metrics = await get(health_port, "/metrics")
            assert "\nendpointslice_operator_state_resets_total 1\n" in metrics

            # And it keeps following the new server.
            pod(new, "web-6", "10.2.0.6")
            await eventually(lambda: addresses(new, "web") == {"10.2.0.5", "10.2.0.6"})
    finally:
        operator.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)
