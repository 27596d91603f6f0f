"""core/v1 and events.k8s.io/v1 Events: one set of objects in two shapes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.eventsview import from_core, to_core
from tests.emulator.conftest import Client

CORE = "/api/v1/namespaces/default/events"
V1 = "/apis/events.k8s.io/v1/namespaces/default/events"


def v1_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-1",
        "action": "Sync",
        "reason": "Synced",
        "type": "Normal",
        "note": "all good",
        "regarding": {"kind": "Service", "name": "web", "namespace": "default"},
    }


def test_conversions_round_trip() -> None:
    event = v1_event("e")
    core = to_core(event)
    assert core["apiVersion"] == "v1"
    assert core["involvedObject"] == event["regarding"] and core["message"] == "all good"
    assert core["reportingComponent"] == "example.com/controller"
    assert from_core(core) == event


async def test_written_as_v1_read_as_core(emu: Emulator, client: Client) -> None:
    status, created = await client.post(V1, v1_event("e1"))
    assert status == 201
    assert created["apiVersion"] == "events.k8s.io/v1" and created["note"] == "all good"
    status, core = await client.get(f"{CORE}/e1")
    assert status == 200
    assert core["apiVersion"] == "v1"
    assert core["message"] == "all good"
    assert core["involvedObject"]["name"] == "web"
    assert core["metadata"]["uid"] == created["metadata"]["uid"]
    assert emu.store.count("events") == emu.store.count("events.events.k8s.io") == 1


async def test_written_as_core_read_as_v1(emu: Emulator, client: Client) -> None:
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started",
            "message": "hello",
            "count": 3,
        }
    )
    status, listed = await client.get(V1, fieldSelector="regarding.name=p")
    assert status == 200
    [event] = listed["items"]
    assert event["note"] == "hello" and event["deprecatedCount"] == 3
    assert "message" not in event


async def test_patch_and_delete_through_the_view(emu: Emulator, client: Client) -> None:
    await client.post(V1, v1_event("e3"))
    status, patched = await client.patch(f"{V1}/e3", {"note": "changed"})
    assert status == 200 and patched["note"] == "changed"
    core = emu.store.get("events", "default", "e3")
    assert core is not None and core["message"] == "changed"
    status, _ = await client.delete(f"{V1}/e3")
    assert status == 200
    assert emu.store.get("events", "default", "e3") is None


@pytest.mark.looptime
async def test_watching_the_view(emu: Emulator) -> None:
    params = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "5"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(emu.url + V1, params=params) as response,
    ):
        emu.store.create(to_core(v1_event("e4")))
        added = json.loads(await response.content.readline())
        bookmark = json.loads(await response.content.readline())
    assert added["type"] == "ADDED"
    assert added["object"]["apiVersion"] == "events.k8s.io/v1"
    assert added["object"]["regarding"]["name"] == "web"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["apiVersion"] == "events.k8s.io/v1"


async def test_v1_rules_apply_to_v1_writes_only(client: Client) -> None:
    incomplete = {k: v for k, v in v1_event("e5").items() if k != "reportingController"}
    status, body = await client.post(V1, incomplete)
    assert status == 422 and body["details"]["causes"][0]["field"] == "reportingController"
    core = to_core(incomplete)
    status, _ = await client.post(CORE, core)
    assert status == 201
