"""First light: one opted-in Service with two pods gets one slice, and nothing else is written."""

from __future__ import annotations

import gc

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    addresses,
    cluster,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
)


async def test_opted_in_service_gets_a_slice_and_watched_objects_are_never_written() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            assert len(slices(emu, "web")) == 1
            set_ready(emu, "web-1", False)
            emu.store.delete("pods", "e2e", "web-0")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.2"})
            await settle(op)
        # No finalizers, annotations or status from Kopf: the operator only reads these.
        for resource in ("pods", "services", "nodes", "namespaces"):
            for verb in ("create", "update", "patch", "delete"):
                assert emu.requests.count(verb=verb, resource=resource) == 0, (verb, resource)


async def test_run_freezes_the_filled_caches_and_switches_the_collector_back_on() -> None:
    """As ``endpointslice-operator run`` does (``settle_heap``): the collector is off during
    the initial listings and on again, with the caches frozen, once they are in."""
    enabled = gc.isenabled()
    gc.unfreeze()
    try:
        async with run_emulator() as emu:
            cluster(emu)
            service(emu, "web", selector={"app": "web"})
            pod(emu, "web-0", "10.1.0.1")
            async with running_operator(emu, settle_heap=True):
                assert gc.isenabled()
                assert gc.get_freeze_count() > 0
                await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
    finally:
        gc.unfreeze()
        if not enabled:
            gc.disable()
