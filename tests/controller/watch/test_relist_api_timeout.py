"""The re-listing check waits for an answer as long as the client's ``api_timeout`` says, longer
than the default when the client was given more (a slow server then still gets the object
forgotten), on virtual time against the API emulator."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.controller.api.client import DEFAULT_API_TIMEOUT
from endpointslice_operator.controller.watch.relist import RELIST_QUIET_PERIOD
from tests.controller.watch.test_relist import relisting_over_http
from tests.e2e.harness import NS

pytestmark = pytest.mark.looptime


async def test_a_check_waits_as_long_as_the_clients_api_timeout() -> None:
    slow = DEFAULT_API_TIMEOUT + 15.0
    async with relisting_over_http("a", "gone", api_timeout=DEFAULT_API_TIMEOUT + 30.0) as (
        emu,
        held,
        relisting,
    ):
        emu.store.delete("pods", NS, "gone")
        emu.faults.latency = slow
        emu.faults.fault_verbs = {"get"}
        emu.faults.fault_resources = {"pods"}
        relisting.note(None, (NS, "a"))
        await asyncio.sleep(RELIST_QUIET_PERIOD + slow - 1.0)
        assert (relisting.checked, relisting.forgotten) == (1, 0)  # the answer is on its way
        await asyncio.sleep(2.0)
        assert (relisting.checked, relisting.forgotten) == (1, 1)
        assert held.forgotten == [(NS, "gone")]
