"""LeaderElector against the API emulator over real HTTP, on virtual time (looptime)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import new_client_from_config

from endpointslice_operator.controller.runtime.leader import LeaderElector, default_identity
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.testing import Emulator, run_emulator

pytestmark = pytest.mark.looptime

LEASE = "endpointslice-operator"
NAMESPACE = "kube-system"


@contextlib.asynccontextmanager
async def client(emu: Emulator) -> AsyncIterator[ApiClient]:
    api = await new_client_from_config(config_file=str(emu.kubeconfig_path))
    try:
        yield api
    finally:
        await api.close()


def lease_spec(emu: Emulator) -> dict[str, Any]:
    lease = emu.store.get("leases", NAMESPACE, LEASE)
    assert lease is not None
    spec: dict[str, Any] = lease["spec"]
    return spec


def elector(api: ApiClient, identity: str, **kwargs: Any) -> LeaderElector:
    return LeaderElector(
        api,
        name=LEASE,
        namespace=NAMESPACE,
        identity=identity,
        rng=random.Random(7),
        **kwargs,
    )


def leads(candidate: LeaderElector) -> bool:
    """is_leader, read through a call so that type checkers do not pin its value."""
    return candidate.is_leader


def now() -> float:
    return asyncio.get_running_loop().time()


class Term:
    """Records a leading term: when it started, and the term-over event it was given."""

    def __init__(self) -> None:
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.started = asyncio.Event()

    async def lead(self, term_over: asyncio.Event) -> None:
        self.started_at = now()
        self.started.set()
        await term_over.wait()

    def stopped(self) -> None:
        self.stopped_at = now()


async def test_first_candidate_creates_the_lease_leads_and_releases_on_stop() -> None:
    metrics = OperatorMetrics()
    async with run_emulator() as emu, client(emu) as api:
        candidate = elector(api, "a", metrics=metrics)
        term, stop = Term(), asyncio.Event()
        runner = asyncio.create_task(candidate.run(term.lead, term.stopped, stop=stop))
        await term.started.wait()
        assert leads(candidate)
        assert metrics.sample_value("endpointslice_operator_leader") == 1
        spec = lease_spec(emu)
        assert spec["holderIdentity"] == "a"
        assert spec["leaseDurationSeconds"] == 15
        assert spec.get("leaseTransitions", 0) == 0
        acquired = spec["acquireTime"]
        assert acquired.endswith("Z")

        # It renews every retry period, keeping acquireTime.
        before = emu.requests.count(verb="update", resource="leases")
        await asyncio.sleep(7)
        assert emu.requests.count(verb="update", resource="leases") - before == 3
        assert lease_spec(emu)["acquireTime"] == acquired

        stop.set()
        await runner
        assert term.stopped_at is not None
        assert not leads(candidate)
        assert metrics.sample_value("endpointslice_operator_leader") == 0
        released = lease_spec(emu)
        assert released["holderIdentity"] in ("", None)
        assert released["leaseDurationSeconds"] == 1


async def test_a_standby_takes_over_at_its_next_retry_after_a_release() -> None:
    async with run_emulator() as emu, client(emu) as api_a, client(emu) as api_b:
        a, b = elector(api_a, "a"), elector(api_b, "b")
        term_a, term_b, stop_a = Term(), Term(), asyncio.Event()
        run_a = asyncio.create_task(a.run(term_a.lead, stop=stop_a))
        await term_a.started.wait()
        run_b = asyncio.create_task(b.run(term_b.lead))
        await asyncio.sleep(30)
        assert not leads(b)
        assert b.observed_holder == "a"
        assert not term_b.started.is_set()

        stop_a.set()
        await run_a
        released_at = now()
        await term_b.started.wait()
        assert leads(b)
        # At its next attempt: within one jittered retry period (2 s * (1 + 1.2)).
        assert term_b.started_at is not None
        assert term_b.started_at - released_at <= 2 * 2.2
        spec = lease_spec(emu)
        assert spec["holderIdentity"] == "b"
        assert spec["leaseTransitions"] == 1
        run_b.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run_b
        # Cancelling the leader also releases the Lease.
        assert lease_spec(emu)["holderIdentity"] in ("", None)
        assert not leads(b)


async def test_a_standby_takes_over_within_one_lease_period_when_the_leader_dies() -> None:
    async with run_emulator() as emu, client(emu) as api_b:
        api_a = await new_client_from_config(config_file=str(emu.kubeconfig_path))
        a, b = elector(api_a, "a"), elector(api_b, "b")
        term_a, term_b = Term(), Term()
        stopped_a: list[float] = []
        run_a = asyncio.create_task(a.run(term_a.lead, lambda: stopped_a.append(now())))
        await term_a.started.wait()
        run_b = asyncio.create_task(b.run(term_b.lead))
        await asyncio.sleep(10)
        assert not leads(b)

        # The leader loses the API for good (a crash or partition): no renewal, no release.
        await api_a.close()
        cut = now()
        await term_b.started.wait()
        assert term_b.started_at is not None
        # The last renewal was at most one retry period (2 s) before the cut; the standby saw it
        # at its next read (at most 2 s * 2.2 later), waited for the record to stay unchanged
        # for the lease duration (15 s), and acquired at its next retry.
        assert 15 - 2 <= term_b.started_at - cut <= 15 + 2 * (2 * 2.2)
        assert lease_spec(emu)["holderIdentity"] == "b"

        # The old leader gave up after its renew deadline (10 s), before the takeover.
        await run_a
        assert not leads(a)
        assert len(stopped_a) == 1
        assert stopped_a[0] - cut <= 10 + 2
        assert stopped_a[0] < term_b.started_at
        run_b.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run_b


async def test_a_standby_says_at_info_level_that_it_is_one_and_who_leads(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with run_emulator() as emu, client(emu) as api:
        a, b = elector(api, "a"), elector(api, "b")
        term_a = Term()
        run_a = asyncio.create_task(a.run(term_a.lead))
        await term_a.started.wait()
        with caplog.at_level("INFO", logger="endpointslice_operator.controller.runtime.leader"):
            run_b = asyncio.create_task(b.run(Term().lead))
            await asyncio.sleep(10)  # five retries of the standby: it says so once
        said = [r for r in caplog.records if r.getMessage().startswith("Standby:")]
        assert [(r.levelname, r.getMessage()) for r in said] == [
            (
                "INFO",
                f"Standby: the leader is a (Lease {NAMESPACE}/{LEASE}); "
                "taking over if it stops renewing",
            )
        ]
        for task in (run_b, run_a):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_lease_held_by_a_dead_replica_is_taken_after_the_lease_duration() -> None:
    async with run_emulator() as emu, client(emu) as api:
        emu.store.create(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE, "namespace": NAMESPACE},
                "spec": {
                    "holderIdentity": "ghost",
                    "leaseDurationSeconds": 15,
                    "acquireTime": "2020-01-01T00:00:00.000000Z",
                    "renewTime": "2020-01-01T00:00:00.000000Z",
                    "leaseTransitions": 4,
                },
            }
        )
        candidate, term = elector(api, "a"), Term()
        start = now()
        runner = asyncio.create_task(candidate.run(term.lead))
        await term.started.wait()
        # Not earlier than 15 s after first seeing it, however old its renewTime looks.
        assert term.started_at is not None
        assert 15 <= term.started_at - start <= 15 + 2 * 2.2
        assert lease_spec(emu)["leaseTransitions"] == 5
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner


async def test_on_stop_the_lease_is_renewed_while_the_work_winds_down() -> None:
    async with run_emulator() as emu, client(emu) as api:
        wound_down: list[float] = []
        cancelled: list[float] = []

        async def slow_to_stop(term_over: asyncio.Event) -> None:
            await term_over.wait()
            try:
                await asyncio.sleep(7)  # e.g. in-flight syncs finishing
            except asyncio.CancelledError:
                cancelled.append(now())
                raise
            wound_down.append(now())

        stop = asyncio.Event()
        candidate = elector(api, "a", stop_grace=10)
        runner = asyncio.create_task(candidate.run(slow_to_stop, stop=stop))
        await asyncio.sleep(3)
        updates = emu.requests.count(verb="update", resource="leases")
        stopped_at = now()
        stop.set()
        await asyncio.sleep(5)
        assert leads(candidate)  # still leading while winding down ...
        assert lease_spec(emu)["holderIdentity"] == "a"
        # ... and still renewing every retry period.
        assert emu.requests.count(verb="update", resource="leases") - updates >= 2
        await runner
        assert wound_down == [pytest.approx(stopped_at + 7)]
        assert cancelled == []
        assert lease_spec(emu)["holderIdentity"] in ("", None)

        # Work that overstays the grace period is cancelled.
        stop = asyncio.Event()
        hurried = elector(api, "b", stop_grace=3)
        runner = asyncio.create_task(hurried.run(slow_to_stop, stop=stop))
        await asyncio.sleep(3)
        stopped_at = now()
        stop.set()
        await runner
        assert cancelled == [pytest.approx(stopped_at + 3)]
        assert lease_spec(emu)["holderIdentity"] in ("", None)


async def test_work_without_an_argument_is_cancelled_and_its_failure_ends_the_term() -> None:
    async with run_emulator() as emu, client(emu) as api:
        cancelled: list[bool] = []

        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        stop = asyncio.Event()
        candidate = elector(api, "a")
        runner = asyncio.create_task(candidate.run(forever, stop=stop))
        await asyncio.sleep(5)
        stop.set()
        await runner
        assert cancelled == [True]

        async def crash() -> None:
            await asyncio.sleep(1)
            raise RuntimeError("work failed")

        second = elector(api, "b")
        with pytest.raises(RuntimeError, match="work failed"):
            await second.run(crash)
        assert lease_spec(emu)["holderIdentity"] in ("", None)
        assert not leads(second)


async def test_stop_before_leading_returns_without_callbacks() -> None:
    async with run_emulator() as emu, client(emu) as api_a, client(emu) as api_b:
        holder, term = elector(api_a, "a"), Term()
        run_a = asyncio.create_task(holder.run(term.lead))
        await term.started.wait()
        calls: list[str] = []

        async def lead() -> None:
            calls.append("started")

        stop = asyncio.Event()
        standby = elector(api_b, "b")
        run_b = asyncio.create_task(standby.run(lead, lambda: calls.append("stopped"), stop=stop))
        await asyncio.sleep(5)
        stop.set()
        await run_b
        assert calls == []
        assert await standby.release()  # not ours: nothing to do
        assert lease_spec(emu)["holderIdentity"] == "a"
        run_a.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run_a


async def test_identity_and_configuration_rules() -> None:
    first, second = default_identity(), default_identity()
    assert first != second
    host, _, suffix = first.rpartition("_")
    assert host and len(suffix) == 36
    api = ApiClient()
    await api.close()  # never used for requests
    with pytest.raises(ValueError, match="lease_duration"):
        LeaderElector(api, name="x", namespace="y", lease_duration=10, renew_deadline=10)
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaderElector(api, name="x", namespace="y", renew_deadline=2.4, retry_period=2)
    elector_ = LeaderElector(api, name="x", namespace="y")
    assert (elector_.lease_duration, elector_.renew_deadline, elector_.retry_period) == (15, 10, 2)
    assert not leads(elector_)
