"""EndpointSelectorSyncer against the API emulator (real HTTP), with indexes fed by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointCounts,
    EndpointSelectorIndex,
)
from endpointslice_operator.controller.endpoint_selector.sync import EndpointSelectorSyncer
from endpointslice_operator.controller.work.budget import WriteBudget
from endpointslice_operator.testing import Emulator

from ..sync_world import ME, NS, SyncWorld, emulated, pod_json

KEY = f"endpointselector:{NS}/sel"
BUDGET_WAIT = "endpointslice_operator_write_budget_wait_seconds_total"


def selector(generation: int = 1, port: int = 8080) -> dict[str, Any]:
    return {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {"name": "sel", "namespace": NS, "uid": "sel-uid", "generation": generation},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "ports": [{"port": port}]},
    }


class World(SyncWorld):
    def __init__(self, emu: Emulator, api: ApiClient) -> None:
        super().__init__(emu, api)
        self.index = EndpointSelectorIndex(self.indexes.services)
        self.index.synced = True
        self.syncer = EndpointSelectorSyncer(self.index, self.services)

    def stored(self) -> dict[str, Any]:
        """The EndpointSelector, created in the API server (its slices' owner must exist)."""
        body = selector()
        del body["metadata"]["uid"]
        return self.emu.store.create(body)

    def slices(self) -> list[dict[str, Any]]:
        return list(self.emu.store.list("endpointslices", NS))

    def warnings(self) -> list[str]:
        """Each Warning told about the EndpointSelector (a repeated one is counted on its
        Event)."""
        return [
            e["reason"]
            for e in self.emu.store.list("events", NS)
            if e.get("type") == "Warning" and e["involvedObject"].get("name") == "sel"
            for _ in range(int(e.get("count") or 1))
        ]

    def synced(self, result: str) -> float | None:
        return self.metrics.sample_value("endpoint_slice_controller_syncs", {"result": result})


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with emulated() as (emu, api):
        emu.store.registry.unserved.discard("endpointslice-operator.io")  # the CRD
        emu.store.create(pod_json("web-0", "10.0.0.1"))
        emu.store.create(pod_json("web-1", "10.0.0.2", ready=False))
        yield World(emu, api)


async def test_a_sync_before_the_first_listing_waits(world: World) -> None:
    world.index.synced = False
    world.index.upsert(selector())
    world.load()
    await world.syncer.sync(KEY)
    assert world.syncer.waiting == {KEY}
    assert world.slices() == [] and world.synced("success") is None


async def test_a_valid_selector_publishes_and_records_its_counts(world: World) -> None:
    world.index.upsert(world.stored())
    world.load()
    await world.syncer.sync(KEY)
    (made,) = world.slices()
    assert made["metadata"]["labels"]["endpointslice-operator.io/endpoint-selector-name"] == "sel"
    assert sorted(e["addresses"][0] for e in made["endpoints"]) == ["10.0.0.1", "10.0.0.2"]
    assert world.index.counts[KEY] == EndpointCounts(ready=1, total=2)
    assert world.synced("success") == 1
    assert world.syncer.all_keys() == [KEY]
    world.load()
    await world.syncer.sync(KEY)  # up to date: nothing written
    assert world.emu.requests.count(verb="create", resource="endpointslices") == 1
    assert world.emu.requests.count(verb="update", resource="endpointslices") == 0
    world.syncer.start_term()
    assert world.index.counts == {}


async def test_an_invalid_spec_is_warned_once_per_generation(world: World) -> None:
    world.index.upsert(selector(port=0))
    world.load()
    await world.syncer.sync(KEY)
    await world.syncer.sync(KEY)
    assert world.warnings() == ["InvalidPort"]
    world.index.upsert(selector(generation=2, port=0))
    await world.syncer.sync(KEY)
    assert world.warnings() == ["InvalidPort"] * 2
    assert world.slices() == []
    # valid again, then invalid again at an old generation: told again
    world.index.upsert(selector(generation=3))
    await world.syncer.sync(KEY)
    world.index.upsert(selector(generation=2, port=0))
    await world.syncer.sync(KEY)
    assert world.warnings() == ["InvalidPort"] * 3
    # a new term tells again
    world.syncer.start_term()
    await world.syncer.sync(KEY)
    assert world.warnings() == ["InvalidPort"] * 4


async def test_a_deleted_selector_has_its_slices_deleted(world: World) -> None:
    world.index.upsert(world.stored())
    world.load()
    await world.syncer.sync(KEY)
    world.emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "sel-extra",
                "namespace": NS,
                "labels": {
                    "endpointslice.kubernetes.io/managed-by": ME,
                    "endpointslice-operator.io/endpoint-selector-name": "sel",
                },
            },
            "addressType": "IPv4",
            "endpoints": [],
        }
    )
    world.load()
    assert len(world.slices()) == 2
    # the index sees the extra slice as being deleted already (first in the index's order):
    # it is skipped, not the slices after it
    listed = world.slices()
    for each in listed:
        world.indexes.slices.remove(each)
    extra = next(s for s in listed if s["metadata"]["name"] == "sel-extra")
    extra["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    world.indexes.slices.put(extra)
    for each in listed:
        if each is not extra:
            world.indexes.slices.put(each)
    world.index.remove(NS, "sel")
    assert world.syncer.all_keys() == [KEY]  # slices left: still a key a new leader queues
    await world.syncer.sync(KEY)
    assert [s["metadata"]["name"] for s in world.slices()] == ["sel-extra"]
    assert world.emu.requests.count(verb="delete", resource="endpointslices") == 1


async def published(world: World) -> None:
    """Publish the selector's slice (no budget) and bring the index up to date."""
    world.index.upsert(world.stored())
    world.load()
    await world.syncer.sync(KEY)
    world.load()


def tokens(budget: WriteBudget) -> float:
    import asyncio

    return budget._bucket.available(asyncio.get_running_loop().time())


async def test_the_token_taken_before_planning_pays_the_write_or_is_given_back(
    world: World,
) -> None:
    budget = WriteBudget(qps=0.001, burst=3)
    world.services.writes.budget = budget
    world.index.upsert(world.stored())
    world.load()
    await world.syncer.sync(KEY)  # one create: the token taken before planning pays it
    assert world.emu.requests.count(verb="create", resource="endpointslices") == 1
    assert 1.9 < tokens(budget) < 2.1
    world.load()
    await world.syncer.sync(KEY)  # nothing to write: the token is given back
    assert world.emu.requests.count(verb="create", resource="endpointslices") == 1
    assert 1.9 < tokens(budget) < 2.1


@pytest.mark.parametrize("plan_after_budget", [True, False])
async def test_planning_waits_for_the_budget_only_when_told_to(
    world: World, plan_after_budget: bool
) -> None:
    await published(world)
    budget = WriteBudget(qps=50, burst=1, metrics=world.metrics)
    world.services.writes.budget = budget
    world.services.writes.plan_after_budget = plan_after_budget
    await budget.acquire()  # the one token is spent
    assert (world.metrics.sample_value(BUDGET_WAIT) or 0.0) == 0.0
    await world.syncer.sync(KEY)  # nothing to write
    waited = world.metrics.sample_value(BUDGET_WAIT) or 0.0
    assert (waited > 0.0) is plan_after_budget
