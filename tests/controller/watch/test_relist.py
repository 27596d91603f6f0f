"""The re-listing check (``controller.relist``) against the API emulator over HTTP, on virtual
time (looptime): what a re-listing leaves out is asked for, and only an answer that it is gone
forgets it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import pytest
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.client import OperatorApiClient
from endpointslice_operator.controller.watch.kopf_wiring import load_client_configuration
from endpointslice_operator.controller.watch.relist import (
    RELIST_QUIET_PERIOD,
    Key,
    Relisting,
    object_path,
)
from endpointslice_operator.testing import Emulator, FaultConfig, run_emulator
from tests.e2e.harness import NS, node, pod, settings

pytestmark = pytest.mark.looptime


class Held:
    """What a caller holds: key -> uid; forgetting records the key."""

    def __init__(self, emu: Emulator, *names: str) -> None:
        self.uids: dict[Key, str] = {}
        for name in names:
            created = pod(emu, name, "10.1.0.1")
            self.uids[(NS, name)] = created["metadata"]["uid"]
        self.forgotten: list[Key] = []

    def forget(self, key: Key) -> None:
        self.forgotten.append(key)
        del self.uids[key]

    def relisting(self, api_client: ApiClient, **kwargs: object) -> Relisting:
        return Relisting(
            api_client,
            "/api/v1",
            "pods",
            held=lambda: list(self.uids),
            uid_of=self.uids.get,
            forget=self.forget,
            **kwargs,  # type: ignore[arg-type]
        )


@contextlib.asynccontextmanager
async def client(emu: Emulator, api_timeout: float = 10.0) -> AsyncIterator[OperatorApiClient]:
    configuration = await load_client_configuration(settings(emu))
    async with OperatorApiClient(configuration, api_timeout=api_timeout) as api_client:
        yield api_client


@contextlib.asynccontextmanager
async def relisting_over_http(
    *names: str, faults: FaultConfig | None = None, api_timeout: float = 10.0, **kwargs: object
) -> AsyncIterator[tuple[Emulator, Held, Relisting]]:
    """An emulator holding the pods ``names`` in NS, held by a caller, and that caller's
    Relisting of pods over HTTP."""
    async with run_emulator(faults=faults) as emu:
        emu.store.create_namespace(NS)
        held = Held(emu, *names)
        async with client(emu, api_timeout) as api_client:
            yield emu, held, held.relisting(api_client, **kwargs)


def node_relisting(
    api_client: ApiClient, uids: dict[Key, str], forget: Callable[[Key], object]
) -> Relisting:
    """A Relisting of Nodes (cluster-scoped) held as ``uids``."""
    return Relisting(
        api_client,
        "/api/v1",
        "nodes",
        held=lambda: list(uids),
        uid_of=uids.get,
        forget=forget,  # type: ignore[arg-type]
    )


def running(relisting: Relisting) -> bool:
    """``relisting.running``, read through a call so that type checkers do not pin its value."""
    return relisting.running


def gets(emu: Emulator) -> int:
    return emu.requests.count(verb="get", resource="pods")


def now() -> float:
    return asyncio.get_running_loop().time()


async def test_a_deletion_the_relisting_missed_is_forgotten_and_only_that() -> None:
    async with relisting_over_http("kept", "gone", "there") as (emu, held, relisting):
        emu.store.delete("pods", NS, "gone")
        relisting.note(None, (NS, "kept"))  # the re-listing begins
        assert running(relisting)
        await asyncio.sleep(RELIST_QUIET_PERIOD / 2)
        relisting.note("ADDED", (NS, "there"))  # delivered while it runs: not asked for
        await asyncio.sleep(RELIST_QUIET_PERIOD / 2 - 0.1)
        assert held.forgotten == []  # not quiet long enough yet
        assert gets(emu) == 0
        await asyncio.sleep(0.2)  # quiet since the listing event (ADDED does not count)
        assert not running(relisting)
        assert held.forgotten == [(NS, "gone")]
        assert gets(emu) == 1
        assert (relisting.checked, relisting.forgotten) == (1, 1)
        assert set(held.uids) == {(NS, "kept"), (NS, "there")}


async def test_only_listing_events_hold_the_check_back() -> None:
    async with relisting_over_http("a", "b", quiet=5.0) as (emu, held, relisting):
        start = now()
        relisting.note(None, (NS, "a"))
        await asyncio.sleep(3.0)
        relisting.note(None, (NS, "b"))  # a later page of the same listing
        for _ in range(10):  # watch events keep coming: they do not postpone the check
            await asyncio.sleep(0.5)
            relisting.note("MODIFIED", (NS, "a"))
        emu.store.delete("pods", NS, "a")
        relisting.begin(NS)  # a list-watch of NS begins listing (nothing told before: no
        assert relisting.checked == 0  # newer listing yet), then again, with nothing delivered
        relisting.begin(NS)
        await asyncio.sleep(4.9)
        assert relisting.checked == 0
        await asyncio.sleep(0.2)
        assert relisting.checked == 2  # neither a nor b came in the latest listing
        assert held.forgotten == [(NS, "a")]
        assert now() - start < 13.5
        # A listing event just before the quiet period ends moves the check as well.
        start = now()
        relisting.note(None, (NS, "x"))
        await asyncio.sleep(0.5)
        relisting.note(None, (NS, "y"))
        await asyncio.sleep(4.7)  # 5.2 s after the first listing event, 4.7 after the last
        assert relisting.checked == 2
        await asyncio.sleep(0.5)
        assert relisting.checked == 3  # b, not delivered, asked for (and kept)
        assert held.forgotten == [(NS, "a")]
        assert now() - start < 6.5


async def test_listings_of_other_scopes_run_alongside() -> None:
    async with relisting_over_http("a", "b") as (emu, held, relisting):
        emu.store.create_namespace("other")
        created = pod(emu, "x", "10.1.0.9", namespace="other")
        held.uids[("other", "x")] = created["metadata"]["uid"]
        emu.store.delete("pods", NS, "b")
        relisting.begin(NS)  # both scopes' watches expired: their listings interleave
        relisting.note(None, (NS, "a"))
        relisting.begin("other")
        relisting.note(None, ("other", "x"))
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert (relisting.checked, relisting.forgotten) == (1, 1)  # a is not asked for
        assert held.forgotten == [(NS, "b")]
        # A scope listed twice within one re-listing: what its first listing showed is asked
        # for again (it may be gone since), and the other scopes' as well.
        relisting.begin(NS)
        relisting.note(None, (NS, "a"))
        relisting.begin("other")
        relisting.begin(NS)
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 3


async def test_an_object_still_there_but_not_delivered_is_kept() -> None:
    async with relisting_over_http("a", "b", "c") as (emu, held, relisting):
        relisting.note(None, (NS, "a"))  # the listing was cut short: b and c not delivered
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert (relisting.checked, relisting.forgotten) == (2, 0)
        assert gets(emu) == 2
        assert held.forgotten == []


async def test_a_failed_or_unanswered_check_keeps_the_object(
    caplog: pytest.LogCaptureFixture,
) -> None:
    faults = FaultConfig(fail_rate=1.0, fail_codes=(500,), fault_verbs={"get"})
    faults.fault_resources = {"pods"}
    async with relisting_over_http("a", "gone", faults=faults, api_timeout=5.0) as (
        emu,
        held,
        relisting,
    ):
        emu.store.delete("pods", NS, "gone")
        with caplog.at_level(logging.INFO, logger="endpointslice_operator.controller.watch.relist"):
            relisting.note(None, (NS, "a"))
            await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
            assert (relisting.checked, relisting.forgotten) == (1, 0)
            assert held.forgotten == []
            failed = [r for r in caplog.records if "could not check pods e2e/gone" in r.message]
            assert [r.levelno for r in failed] == [logging.INFO]
            # A server that does not answer within the API timeout: kept as well.
            emu.faults.fail_rate = 0.0
            emu.faults.latency = 60.0
            start = now()
            relisting.note(None, (NS, "a"))
            await asyncio.sleep(RELIST_QUIET_PERIOD + 6.0)
            assert (relisting.checked, relisting.forgotten) == (2, 0)
            assert now() - start < RELIST_QUIET_PERIOD + 6.1
            assert held.forgotten == []
            # Answered at last: forgotten.
            emu.faults.latency = 0.0
            relisting.note(None, (NS, "a"))
            await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
            assert held.forgotten == [(NS, "gone")]


async def test_an_object_created_again_under_the_name_is_another_object() -> None:
    async with relisting_over_http("a", "web-0", "unknown") as (emu, held, relisting):
        held.uids[(NS, "unknown")] = ""  # held without a uid: an answer is taken as it
        emu.store.delete("pods", NS, "web-0")
        pod(emu, "web-0", "10.1.0.2")  # the successor, under a new uid
        relisting.note(None, (NS, "a"))
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert (relisting.checked, relisting.forgotten) == (2, 1)
        assert held.forgotten == [(NS, "web-0")]


async def test_an_object_replaced_during_its_check_is_not_forgotten() -> None:
    async with relisting_over_http("a", "web-0", "web-1") as (emu, held, relisting):
        emu.store.delete("pods", NS, "web-0")
        emu.store.delete("pods", NS, "web-1")
        emu.faults.latency = 1.0
        emu.faults.fault_verbs = {"get"}
        emu.faults.fault_resources = {"pods"}
        relisting.note(None, (NS, "a"))
        await asyncio.sleep(RELIST_QUIET_PERIOD + 0.5)  # web-0's check is on its way
        held.uids[(NS, "web-0")] = "the-successor"  # ... when an event brings its successor
        del held.uids[(NS, "web-1")]  # ... and web-1's deletion event comes
        await asyncio.sleep(3.0)
        assert (relisting.checked, relisting.forgotten) == (2, 0)
        assert held.forgotten == []
        assert held.uids[(NS, "web-0")] == "the-successor"


async def test_a_second_relisting_during_the_quiet_period_counts_only_the_latest() -> None:
    async with relisting_over_http("a", "b", "c") as (emu, held, relisting):
        for name in ("a", "b", "c"):  # listing 1 shows all three
            relisting.note(None, (NS, name))
        emu.store.delete("pods", NS, "b")  # deleted while the watch had expired again
        await asyncio.sleep(RELIST_QUIET_PERIOD / 2)
        relisting.note(None, (NS, "a"))  # listing 2: a, then c; b is not in it
        relisting.note(None, (NS, "c"))
        relisting.note("MODIFIED", (NS, "c"))  # a watch event after it
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert (relisting.checked, relisting.forgotten) == (1, 1)
        assert held.forgotten == [(NS, "b")]


async def test_nothing_starts_without_a_listing_event() -> None:
    async with relisting_over_http("a", "gone") as (emu, held, relisting):
        emu.store.delete("pods", NS, "gone")
        relisting.note("MODIFIED", (NS, "a"))
        relisting.note("DELETED", (NS, "b"))
        relisting.note("ADDED", (NS, "a"))
        assert not running(relisting)
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 0 and gets(emu) == 0
        relisting.begin()  # told a listing began (or objects may be missing)
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert (relisting.checked, relisting.forgotten) == (2, 1)
        assert held.forgotten == [(NS, "gone")]


async def test_cancel_stops_a_check_on_its_way() -> None:
    async with relisting_over_http("gone") as (emu, held, relisting):
        emu.store.delete("pods", NS, "gone")
        relisting.begin()
        await asyncio.sleep(RELIST_QUIET_PERIOD / 2)
        relisting.cancel()
        await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
        assert relisting.checked == 0 and held.forgotten == []


async def test_a_cluster_scoped_object_is_asked_for_by_its_own_path() -> None:
    assert object_path("/api/v1", "nodes", ("", "node a")) == "/api/v1/nodes/node%20a"
    assert (
        object_path("/apis/g.io/v1", "things", ("ns/x", "n"))
        == "/apis/g.io/v1/namespaces/ns%2Fx/things/n"
    )
    async with run_emulator() as emu:
        uid = node(emu, "node-a", "zone-a")["metadata"]["uid"]
        uids = {("", "node-a"): uid, ("", "node-gone"): "u-old"}
        forgotten: list[Key] = []
        async with client(emu) as api_client:
            relisting = node_relisting(api_client, uids, forgotten.append)
            relisting.begin()
            await asyncio.sleep(RELIST_QUIET_PERIOD * 2)
            assert (relisting.checked, relisting.forgotten) == (2, 1)
            assert forgotten == [("", "node-gone")]


def lists(emu: Emulator, namespace: str | None = None) -> int:
    if namespace is None:
        return emu.requests.count(verb="list", resource="pods")
    return emu.requests.count(verb="list", resource="pods", namespace=namespace)


async def test_a_count_below_what_is_held_checks_each_held_object() -> None:
    async with relisting_over_http("a", "b", "c") as (emu, held, relisting):
        counting = asyncio.create_task(relisting.keep_counting((NS,), interval=10.0))
        try:
            await asyncio.sleep(10.5)  # one round: as many as held, nothing to check
            assert (lists(emu), relisting.checked, relisting.running) == (1, 0, False)
            pod(emu, "d", "10.1.0.4")  # one more than held: nothing missing either
            await asyncio.sleep(10.0)
            assert (lists(emu), relisting.checked) == (2, 0)
            emu.store.delete("pods", NS, "b")
            emu.store.delete("pods", NS, "d")  # 2 on the server, 3 held
            await asyncio.sleep(10.0)
            assert lists(emu) == 3 and relisting.running
            await asyncio.sleep(RELIST_QUIET_PERIOD + 0.5)
            assert (relisting.checked, relisting.forgotten) == (3, 1)
            assert held.forgotten == [(NS, "b")]
            await asyncio.sleep(10.0)  # even again: no more checks
            assert (lists(emu), relisting.checked) == (4, 3)
        finally:
            counting.cancel()


async def test_each_scope_is_counted_on_its_own() -> None:
    async with relisting_over_http("a") as (emu, held, relisting):
        emu.store.create_namespace("other")
        emu.store.create_namespace("empty")
        for name in ("x", "y"):
            created = pod(emu, name, "10.1.0.9", namespace="other")
            held.uids[("other", name)] = created["metadata"]["uid"]
        pod(emu, "extra-1", "10.1.0.2")  # NS holds more than held there...
        pod(emu, "extra-2", "10.1.0.3")
        emu.store.delete("pods", "other", "y")  # ... while "other" holds fewer
        assert await relisting.missing_any((NS, "other", "empty"))
        assert (lists(emu, NS), lists(emu, "other"), lists(emu, "empty")) == (1, 1, 0)
        assert not await relisting.missing_any((NS,))
        assert await relisting.missing_any(("empty", "other"))  # nothing held there: skipped
        assert lists(emu, "empty") == 0
        # Cluster-wide, the server's 4 pods cover the 3 held: only scoped counts find it.
        assert not await relisting.missing_any()


async def test_a_failed_count_is_tried_again_at_the_next_round(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with relisting_over_http("a", "gone") as (emu, held, relisting):
        emu.store.delete("pods", NS, "gone")
        emu.faults.fault_verbs = {"list"}
        emu.faults.fault_resources = {"pods"}
        emu.faults.fail_codes = (500,)
        emu.faults.fail_rate = 1.0
        counting = asyncio.create_task(relisting.keep_counting((NS,), interval=10.0))
        try:
            with caplog.at_level(
                logging.INFO, logger="endpointslice_operator.controller.watch.relist"
            ):
                await asyncio.sleep(10.5)
                assert not running(relisting)
                assert [
                    r.levelno for r in caplog.records if "could not count pods" in r.message
                ] == [logging.INFO]
                emu.faults.fail_rate = 0.0
                await asyncio.sleep(10.0 + RELIST_QUIET_PERIOD + 0.5)
                assert held.forgotten == [(NS, "gone")]
        finally:
            counting.cancel()


async def test_a_cluster_scoped_kind_is_counted_cluster_wide() -> None:
    async with run_emulator() as emu:
        uids = {("", n): node(emu, n, "zone-a")["metadata"]["uid"] for n in ("n1", "n2")}
        async with client(emu) as api_client:
            relisting = node_relisting(api_client, uids, uids.pop)
            assert await relisting.count(None) == 2
            assert not await relisting.missing_any()
            emu.store.delete("nodes", "", "n2")
            assert await relisting.missing_any()
            assert emu.requests.count(verb="list", resource="nodes") == 3
