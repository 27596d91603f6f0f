"""Deletion: finalizers, preconditions, propagation policies and the garbage collector."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from endpointslice_operator.testing import Emulator
from tests.emulator.conftest import PODS, SERVICES, SLICES, Client, endpoint_slice, pod


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"port": 80}]},
    }


def owned_slice(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    refs = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": index == 0,
            "blockOwnerDeletion": True,
        }
        for index, owner in enumerate(owners)
    ]
    return endpoint_slice(name, metadata={"ownerReferences": refs})


async def test_dependents_are_collected_after_the_owner_goes(emu: Emulator, client: Client) -> None:
    owner = emu.store.create(service("web"))
    emu.store.create(owned_slice("web-a", owner))
    emu.store.create(owned_slice("web-b", owner))
    emu.store.create(endpoint_slice("unrelated"))
    status, _ = await client.delete(f"{SERVICES}/web")
    assert status == 200
    await emu.wait_idle()
    assert [s["metadata"]["name"] for s in emu.store.list("endpointslices")] == ["unrelated"]


async def test_dangling_references_are_dropped_while_another_owner_lives(emu: Emulator) -> None:
    first = emu.store.create(service("one"))
    second = emu.store.create(service("two"))
    emu.store.create(owned_slice("shared", first, second))
    emu.store.delete("services", "default", "one")
    await emu.wait_idle()
    remaining = emu.store.get("endpointslices", "default", "shared")
    assert remaining is not None
    assert [r["name"] for r in remaining["metadata"]["ownerReferences"]] == ["two"]


async def test_objects_created_for_a_missing_owner_are_collected(emu: Emulator) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-4000-8000-000000000000"}}
    emu.store.create(owned_slice("orphaned", ghost))
    await emu.wait_idle()
    assert emu.store.get("endpointslices", "default", "orphaned") is None


async def test_finalizers_hold_the_deletion(emu: Emulator, client: Client) -> None:
    emu.store.create(endpoint_slice("held", metadata={"finalizers": ["example.com/hold"]}))
    status, body = await client.delete(f"{SLICES}/held")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    again = await client.delete(f"{SLICES}/held")
    assert again[1]["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    status, body = await client.patch(
        f"{SLICES}/held", {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}}
    )
    assert status == 422  # no new finalizers on an object being deleted
    status, body = await client.patch(f"{SLICES}/held", {"metadata": {"finalizers": None}})
    assert status == 200
    assert emu.store.get("endpointslices", "default", "held") is None


async def test_delete_preconditions(emu: Emulator, client: Client) -> None:
    created = emu.store.create(endpoint_slice("web"))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "other"}}
    status, answer = await client.delete(f"{SLICES}/web", body)
    assert status == 409
    assert "Precondition failed: UID in precondition: other" in answer["message"]
    body["preconditions"] = {"resourceVersion": "1"}
    assert (await client.delete(f"{SLICES}/web", body))[0] == 409
    body["preconditions"] = {"uid": created["metadata"]["uid"]}
    assert (await client.delete(f"{SLICES}/web", body))[0] == 200


async def test_foreground_deletion_waits_for_dependents(emu: Emulator, client: Client) -> None:
    owner = emu.store.create(service("web"))
    emu.store.create(owned_slice("web-a", owner))
    status, body = await client.delete(f"{SERVICES}/web", {"propagationPolicy": "Foreground"})
    assert status == 200
    assert "foregroundDeletion" in body["metadata"]["finalizers"]
    await emu.wait_idle()
    assert emu.store.get("endpointslices", "default", "web-a") is None
    assert emu.store.get("services", "default", "web") is None


async def test_orphan_deletion_keeps_dependents(emu: Emulator, client: Client) -> None:
    owner = emu.store.create(service("web"))
    emu.store.create(owned_slice("web-a", owner))
    await client.delete(f"{SERVICES}/web", {"propagationPolicy": "Orphan"})
    await emu.wait_idle()
    assert emu.store.get("services", "default", "web") is None
    kept = emu.store.get("endpointslices", "default", "web-a")
    assert kept is not None and "ownerReferences" not in kept["metadata"]


@pytest.mark.looptime
async def test_scheduled_pods_are_deleted_gracefully(emu: Emulator, client: Client) -> None:
    emu.store.create(pod("p", nodeName="n1", terminationGracePeriodSeconds=30))
    emu.store.create(pod("unscheduled"))
    status, body = await client.delete(f"{PODS}/p")
    assert status == 200
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    assert body["metadata"]["deletionTimestamp"]
    await asyncio.sleep(29)  # virtual time: the kubelet stand-in acts at the end of the grace
    assert emu.store.get("pods", "default", "p") is not None
    await asyncio.sleep(2)
    assert emu.store.get("pods", "default", "p") is None
    status, body = await client.delete(f"{PODS}/unscheduled")
    assert status == 200 and body["kind"] == "Pod"  # pods answer with the object
    assert emu.store.get("pods", "default", "unscheduled") is None


@pytest.mark.looptime
async def test_updates_during_the_grace_period_do_not_extend_it(emu: Emulator) -> None:
    emu.store.create(pod("p", nodeName="n1", terminationGracePeriodSeconds=30))
    emu.store.delete("pods", "default", "p", grace_period_seconds=None)
    await asyncio.sleep(20)
    current = emu.store.get("pods", "default", "p")
    assert current is not None
    emu.store.update(dict(current, status={"phase": "Running"}), subresource="status")
    await asyncio.sleep(11)
    assert emu.store.get("pods", "default", "p") is None


@pytest.mark.looptime
async def test_a_shorter_grace_period_wins(emu: Emulator) -> None:
    emu.store.create(pod("p", nodeName="n1", terminationGracePeriodSeconds=30))
    emu.store.delete("pods", "default", "p", grace_period_seconds=None)
    await asyncio.sleep(1)
    emu.store.delete("pods", "default", "p", grace_period_seconds=5)
    await asyncio.sleep(5.5)
    assert emu.store.get("pods", "default", "p") is None


async def test_explicit_grace_period_zero_deletes_at_once(emu: Emulator, client: Client) -> None:
    emu.store.create(pod("p", nodeName="n1"))
    status, _ = await client.delete(f"{PODS}/p", gracePeriodSeconds="0")
    assert status == 200
    assert emu.store.get("pods", "default", "p") is None


async def test_delete_collection_by_selector(emu: Emulator, client: Client) -> None:
    for name, team in [("a", "x"), ("b", "x"), ("c", "y")]:
        emu.store.create(endpoint_slice(name, metadata={"labels": {"team": team}}))
    status, body = await client.delete(SLICES, labelSelector="team=x")
    assert status == 200
    assert [i["metadata"]["name"] for i in body["items"]] == ["a", "b"]
    assert [s["metadata"]["name"] for s in emu.store.list("endpointslices")] == ["c"]
    assert emu.requests.count(verb="deletecollection", resource="endpointslices") == 1
