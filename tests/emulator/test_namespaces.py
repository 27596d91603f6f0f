"""Namespace lifecycle: defaults, Terminating, 403 on creates, contents removed, then gone."""

from __future__ import annotations

import asyncio

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.gc import NAMESPACE_SETTLE_SECONDS
from tests.emulator.conftest import Client, endpoint_slice

TEAM = "/apis/discovery.k8s.io/v1/namespaces/team/endpointslices"


async def test_default_namespaces_exist(emu: Emulator) -> None:
    names = [ns["metadata"]["name"] for ns in emu.store.list("namespaces")]
    assert {"default", "kube-system"} <= set(names)


async def test_created_namespaces_are_active_and_labelled(client: Client) -> None:
    status, body = await client.post(
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
    )
    assert status == 201
    assert body["status"] == {"phase": "Active"}
    assert body["spec"] == {"finalizers": ["kubernetes"]}
    assert body["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}


async def test_namespace_names_are_dns_labels(client: Client) -> None:
    status, body = await client.post(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"


async def test_deleting_a_namespace_empties_it_first(emu: Emulator, client: Client) -> None:
    emu.store.create_namespace("team")
    emu.store.create(endpoint_slice("free"), namespace="team")
    emu.store.create(
        endpoint_slice("held", metadata={"finalizers": ["example.com/hold"]}), namespace="team"
    )
    status, body = await client.delete("/api/v1/namespaces/team")
    assert status == 200
    assert body["status"]["phase"] == "Terminating"
    assert body["metadata"]["deletionTimestamp"]

    status, body = await client.post(TEAM, endpoint_slice("late"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["details"]["causes"] == [
        {
            "reason": "NamespaceTerminating",
            "message": "namespace team is being terminated",
            "field": "metadata.namespace",
        }
    ]

    await emu.wait_idle()
    assert emu.store.get("endpointslices", "team", "free") is None
    held = emu.store.get("endpointslices", "team", "held")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    assert emu.store.get("namespaces", None, "team") is not None  # waits for the finalizer

    emu.store.patch("endpointslices", "team", "held", {"metadata": {"finalizers": None}})
    await emu.wait_idle()
    await asyncio.sleep(NAMESPACE_SETTLE_SECONDS)  # Terminating a moment longer, as on a server
    await emu.wait_idle()
    assert emu.store.get("namespaces", None, "team") is None


async def test_a_create_right_after_the_delete_is_forbidden(emu: Emulator, client: Client) -> None:
    """v1.36: a namespace just deleted that still holds objects answers creates with 403 while
    it is Terminating (the emulator removed it at once, then 404)."""
    emu.store.create_namespace("team")
    emu.store.create(endpoint_slice("free"), namespace="team")
    status, _ = await client.delete("/api/v1/namespaces/team")
    assert status == 200
    status, body = await client.post(TEAM, endpoint_slice("late"))
    assert status == 403, body
    assert body["message"] == (
        'endpointslices "late" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    assert body["details"]["name"] == "late"
    await emu.wait_idle()
    await asyncio.sleep(NAMESPACE_SETTLE_SECONDS)
    await emu.wait_idle()
    status, _ = await client.post(TEAM, endpoint_slice("later"))
    assert status == 404
