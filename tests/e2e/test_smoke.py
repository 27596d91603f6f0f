"""First light: one opted-in Service with two pods gets one slice."""

from __future__ import annotations

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import addresses, cluster, eventually, pod, running_operator, service, slices


async def test_opted_in_service_gets_a_slice() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            assert len(slices(emu, "web")) == 1
