"""The scopes whose listings began are those of the re-listing in progress: a scope listed in an
earlier, finished re-listing starts no newer listing when it is listed again in the next one
(what the other scopes delivered is not asked for), on virtual time against the API emulator."""

from __future__ import annotations

import asyncio

import pytest

from endpointslice_operator.controller.watch.relist import RELIST_QUIET_PERIOD
from tests.controller.watch.test_relist import relisting_over_http
from tests.e2e.harness import NS

pytestmark = pytest.mark.looptime


async def test_a_scope_of_an_earlier_relisting_is_listed_alongside_in_the_next() -> None:
    async with relisting_over_http("a", "b") as (emu, held, relisting):
        relisting.begin("other")  # a first re-listing, of another namespace: a and b are
        relisting.begin(NS)  # delivered by the listing of NS
        relisting.note(None, (NS, "a"))
        relisting.note(None, (NS, "b"))
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 0
        relisting.begin(NS)  # the next: NS lists a and b, then "other" begins (empty)
        relisting.note(None, (NS, "a"))
        relisting.note(None, (NS, "b"))
        relisting.begin("other")
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 0
        assert emu.requests.count(verb="get", resource="pods") == 0
        assert held.forgotten == []


async def test_a_scope_of_an_older_listing_is_listed_alongside_the_newer_one() -> None:
    async with relisting_over_http("a", "b") as (emu, held, relisting):
        relisting.begin(NS)
        relisting.begin("other")
        relisting.begin(NS)  # NS listed again: a newer listing, of NS alone so far
        relisting.note(None, (NS, "a"))
        relisting.note(None, (NS, "b"))
        relisting.begin("other")  # its first listing within the newer one
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 0
        assert emu.requests.count(verb="get", resource="pods") == 0
        assert held.forgotten == []
