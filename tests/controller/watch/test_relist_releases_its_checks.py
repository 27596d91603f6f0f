"""A finished re-listing check is not held on to: its task is released once it ends (an operator
that re-lists for weeks keeps no trace of each), on virtual time against the API emulator."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from endpointslice_operator.controller.watch.relist import RELIST_QUIET_PERIOD
from tests.controller.watch.test_relist import relisting_over_http
from tests.e2e.harness import NS

pytestmark = pytest.mark.looptime


async def test_the_task_of_a_finished_check_is_released() -> None:
    async with relisting_over_http("a") as (_emu, _held, relisting):
        relisting.note(None, (NS, "a"))
        [task] = [t for t in asyncio.all_tasks() if t.get_name() == "relist-pods"]
        ended = weakref.ref(task)
        del task
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert not relisting.running
        gc.collect()
        assert ended() is None
