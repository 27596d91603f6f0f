"""Objects deleted in a watch's 410 gap, on the emulator on virtual time (looptime): the
operator's re-listing check forgets them, also when the re-listing delivers nothing."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.controller.watch.relist import COUNT_INTERVAL, RELIST_QUIET_PERIOD
from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import NS, addresses, cluster, eventually, pod, running_operator, service
from tests.e2e.watch_gap import miss_deletions

pytestmark = pytest.mark.looptime


async def test_the_only_pod_deleted_in_the_gap_is_forgotten_from_an_empty_relisting() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await eventually(lambda: op.router is not None and "pods" in op.router.relistings)
            assert op.router is not None
            relisting = op.router.relistings["pods"]
            # The list-watch lists the namespace again: nothing in it, so no listing event.
            await miss_deletions(emu, "pods", NS, ("web-0",))
            await eventually(
                lambda: addresses(emu, "web") == set(), timeout=30 + 3 * RELIST_QUIET_PERIOD
            )
            assert op.indexes.pods.get(NS, "web-0") is None
            assert (relisting.checked, relisting.forgotten) == (1, 1)


async def test_nodes_all_deleted_in_the_gap_are_found_by_the_count() -> None:
    # Kopf's re-listing of Nodes delivers nothing, so its handlers see no event.
    async with run_emulator() as emu:
        cluster(emu)
        async with running_operator(emu) as op:
            await eventually(lambda: op.router is not None and "nodes" in op.router.relistings)
            assert len(op.indexes.nodes.names()) == 2
            await miss_deletions(emu, "nodes", "", ("node-a", "node-b"))
            await asyncio.sleep(35)  # Kopf has listed again: nothing
            assert len(op.indexes.nodes.names()) == 2
            await eventually(lambda: not op.indexes.nodes.names(), timeout=COUNT_INTERVAL)
