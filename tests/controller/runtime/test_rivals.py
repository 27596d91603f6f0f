"""Two electors of one managed-by with their Leases in two namespaces: one leads the cluster.

Against the API emulator over real HTTP, on virtual time (looptime).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.config import new_client_from_config

from endpointslice_operator.controller.runtime.leader import LeaderElector
from endpointslice_operator.controller.runtime.rivals import RIVAL_LABEL, RivalLeases
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.testing import run_emulator
from tests.controller.runtime.test_leader import Term, client, leads, now

pytestmark = pytest.mark.looptime

LEASE = "endpointslice-operator"
MANAGED_BY = "endpointslice-operator.io"


def elector(
    api: ApiClient,
    identity: str,
    namespace: str,
    *,
    managed_by: str = MANAGED_BY,
    seed: int = 7,
    **kwargs: Any,
) -> LeaderElector:
    return LeaderElector(
        api,
        name=LEASE,
        namespace=namespace,
        identity=identity,
        rng=random.Random(seed),
        rivals=RivalLeases(api, managed_by=managed_by, namespace=namespace, name=LEASE),
        **kwargs,
    )


async def stop(*tasks: asyncio.Task[None]) -> None:
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_second_namespace_stands_by_says_why_once_and_takes_over_when_the_leader_dies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics_b = OperatorMetrics()
    async with run_emulator() as emu, client(emu) as api_b:
        emu.store.create_namespace("endpointslice-operator")
        api_a = await new_client_from_config(config_file=str(emu.kubeconfig_path))
        a = elector(api_a, "chart-pod", "endpointslice-operator")
        b = elector(api_b, "workstation", "default", metrics=metrics_b)
        term_a, term_b = Term(), Term()
        run_a = asyncio.create_task(a.run(term_a.lead))
        await term_a.started.wait()
        lease_a = emu.store.get("leases", "endpointslice-operator", LEASE)
        assert lease_a is not None
        assert lease_a["metadata"]["labels"] == {RIVAL_LABEL: MANAGED_BY}

        with caplog.at_level("INFO", logger="endpointslice_operator.controller.runtime.leader"):
            run_b = asyncio.create_task(b.run(term_b.lead))
            await asyncio.sleep(30)
        assert leads(a) and not leads(b)
        assert not term_b.started.is_set()
        # It never took its own Lease: nothing of it is written while another leads.
        assert emu.store.get("leases", "default", LEASE) is None
        assert metrics_b.sample_value("endpointslice_operator_leader_deferred") == 1
        said = [r.getMessage() for r in caplog.records if "Not leading" in r.getMessage()]
        assert said == [
            f"Not leading: another operator with --managed-by {MANAGED_BY} leads this cluster "
            f"through the Lease endpointslice-operator/{LEASE} (holder chart-pod); this one's "
            f"Lease is default/{LEASE}. Standing by: it takes over when that Lease is released "
            "or expires. To run both, give this one another --managed-by; to make it a standby "
            "of that one, set --lease-namespace endpointslice-operator"
        ]

        # The leader dies (no renewal, no release): the other takes over within a lease period.
        await api_a.close()
        cut = now()
        await term_b.started.wait()
        assert term_b.started_at is not None
        assert 15 - 2 <= term_b.started_at - cut <= 15 + 2 * (2 * 2.2) + 2
        assert metrics_b.sample_value("endpointslice_operator_leader_deferred") == 0
        lease_b = emu.store.get("leases", "default", LEASE)
        assert lease_b is not None and lease_b["spec"]["holderIdentity"] == "workstation"
        await stop(run_b, run_a)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_candidates_starting_at_once_in_three_namespaces_never_lead_together(
    seed: int,
) -> None:
    async with run_emulator() as emu, client(emu) as api:
        namespaces = ["ns-a", "ns-b", "ns-c"]
        for namespace in namespaces:
            emu.store.create_namespace(namespace)
        electors = [
            elector(api, f"id-{ns}", ns, seed=seed * 10 + i) for i, ns in enumerate(namespaces)
        ]
        runs = [asyncio.create_task(e.run(Term().lead)) for e in electors]
        overlap = 0
        for _ in range(300):  # 30 s in steps of 0.1 s
            overlap = max(overlap, sum(leads(e) for e in electors))
            await asyncio.sleep(0.1)
        assert overlap == 1
        assert sum(leads(e) for e in electors) == 1
        await stop(*runs)


async def test_a_leader_that_finds_an_earlier_lease_steps_down_and_releases() -> None:
    async with run_emulator() as emu, client(emu) as api:
        emu.store.create_namespace("other")
        # Another operator's Lease, taken long before ours and renewed by "it" below.
        earlier = "2020-01-01T00:00:00.000000Z"
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": "other", "labels": {RIVAL_LABEL: MANAGED_BY}},
            "spec": {"holderIdentity": "it", "leaseDurationSeconds": 15, "acquireTime": earlier},
        }
        b = elector(api, "late", "default")
        term_b = Term()
        stopped: list[float] = []
        run_b = asyncio.create_task(b.run(term_b.lead, lambda: stopped.append(now())))
        await term_b.started.wait()
        # It appears (as when both started at once and this one did not see it), and renews.
        emu.store.create(lease)
        for i in range(10):
            current = emu.store.get("leases", "other", LEASE)
            assert current is not None
            current["spec"]["renewTime"] = f"2020-01-01T00:00:{i:02d}.000000Z"
            emu.store.update(current)
            await asyncio.sleep(2)
            if stopped:
                break
        assert stopped and not leads(b)
        ours = emu.store.get("leases", "default", LEASE)
        assert ours is not None and ours["spec"]["holderIdentity"] in ("", None)
        await stop(run_b)


async def test_another_managed_by_and_the_same_lease_are_no_rivals() -> None:
    async with run_emulator() as emu, client(emu) as api:
        emu.store.create_namespace("ns-a")
        emu.store.create_namespace("ns-b")
        a = elector(api, "a", "ns-a")
        other = elector(api, "x", "ns-b", managed_by="someone-else.example.com")
        standby = elector(api, "a2", "ns-a")  # an ordinary standby of the same Lease
        terms = [Term(), Term(), Term()]
        runs = [
            asyncio.create_task(e.run(t.lead))
            for e, t in zip((a, other, standby), terms, strict=True)
        ]
        await asyncio.sleep(20)
        assert leads(other)
        assert [leads(a), leads(standby)] in ([True, False], [False, True])
        leader, follower = (0, 2) if leads(a) else (2, 0)
        await stop(runs[leader])  # released: the standby of the same Lease takes over
        await terms[follower].started.wait()
        await stop(runs[1], runs[follower])
