"""Basic object lifecycle over HTTP: create, get, list, update, delete, metadata rules."""

from __future__ import annotations

import json

import pytest

from endpointslice_operator.testing import Emulator, RequestLog, RequestRecord
from tests.emulator.conftest import SLICES, Client, endpoint_slice


async def test_create_sets_server_metadata(client: Client) -> None:
    status, body = await client.post(SLICES, endpoint_slice("web-1"))
    assert status == 201
    meta = body["metadata"]
    assert meta["name"] == "web-1"
    assert meta["namespace"] == "default"
    assert meta["generation"] == 1
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0


async def test_resource_versions_increase_globally(client: Client) -> None:
    _, first = await client.post(SLICES, endpoint_slice("a"))
    _, second = await client.post(SLICES, endpoint_slice("b"))
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


async def test_get_missing_is_a_not_found_status(client: Client) -> None:
    status, body = await client.get(f"{SLICES}/nope")
    assert status == 404
    assert body["kind"] == "Status"
    assert body["reason"] == "NotFound"
    assert body["message"] == 'endpointslices.discovery.k8s.io "nope" not found'
    assert body["details"] == {
        "name": "nope",
        "kind": "endpointslices",
        "group": "discovery.k8s.io",
    }


async def test_create_twice_is_already_exists(client: Client) -> None:
    await client.post(SLICES, endpoint_slice("dup"))
    status, body = await client.post(SLICES, endpoint_slice("dup"))
    assert status == 409
    assert body["reason"] == "AlreadyExists"


async def test_create_in_missing_namespace_is_not_found(client: Client) -> None:
    status, body = await client.post(
        "/apis/discovery.k8s.io/v1/namespaces/ghost/endpointslices", endpoint_slice("x")
    )
    assert status == 404
    assert body["message"] == 'namespaces "ghost" not found'


async def test_store_writes_are_visible_over_http(emu: Emulator, client: Client) -> None:
    created = emu.store.create(endpoint_slice("from-store"))
    status, body = await client.get(f"{SLICES}/from-store")
    assert status == 200
    assert body == created


async def test_delete_answers_a_success_status(emu: Emulator, client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("gone"))
    status, body = await client.delete(f"{SLICES}/gone")
    assert status == 200
    assert body["kind"] == "Status"
    assert body["status"] == "Success"
    assert body["details"]["uid"] == created["metadata"]["uid"]
    assert emu.store.get("endpointslices", "default", "gone") is None


async def test_request_log_counts_verbs(emu: Emulator, client: Client) -> None:
    await client.post(SLICES, endpoint_slice("a"))
    await client.get(f"{SLICES}/a")
    await client.get(SLICES)
    assert emu.requests.count(verb="create", resource="endpointslices") == 1
    assert emu.requests.count(verb="get", resource="endpointslices", name="a") == 1
    assert emu.requests.count(verb="list", resource="endpointslices") == 1
    emu.requests.clear()
    assert emu.requests.count() == 0


async def test_request_log_names_created_objects(emu: Emulator, client: Client) -> None:
    _, body = await client.post(SLICES, endpoint_slice())
    generated = body["metadata"]["name"]
    [record] = emu.requests.filter(verb="create")
    assert (record.name, record.namespace, record.code) == (generated, "default", 201)


async def test_dry_run_validates_without_storing(emu: Emulator, client: Client) -> None:
    before = emu.store.resource_version
    status, body = await client.request("POST", SLICES + "?dryRun=All", endpoint_slice("dry"))
    assert status == 201 and body["metadata"]["name"] == "dry"
    status, body = await client.request(
        "POST", SLICES + "?dryRun=All", endpoint_slice("bad", addressType="IPv5")
    )
    assert status == 422
    emu.store.create(endpoint_slice("real"))
    status, _ = await client.request("DELETE", SLICES + "/real?dryRun=All")
    assert status == 200
    status, _ = await client.delete(SLICES + "/real", {"kind": "DeleteOptions", "dryRun": ["All"]})
    assert status == 200
    assert emu.store.get("endpointslices", "default", "dry") is None
    assert emu.store.get("endpointslices", "default", "real") is not None
    assert emu.store.resource_version == before + 1


@pytest.mark.parametrize(
    "spelling",
    [
        "endpointslices",
        "EndpointSlice",
        "endpointslice",
        "endpointslices.discovery.k8s.io",
        "discovery.k8s.io/v1/EndpointSlice",
        "discovery.k8s.io/v1/endpointslices",
    ],
)
def test_store_resource_spellings(emu: Emulator, spelling: str) -> None:
    assert emu.store.resolve(spelling).key == "endpointslices.discovery.k8s.io"
    assert emu.store.resolve("v1/Pod").plural == emu.store.resolve("po").plural == "pods"
    assert emu.store.resolve("events").group == ""  # the core group wins, as in kubectl


async def test_cluster_scoped_objects_ignore_a_namespace(emu: Emulator, client: Client) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    emu.store.create(node)
    assert emu.store.get("nodes", "default", "n1") is not None  # the namespace is not looked at
    status, body = await client.post(
        "/api/v1/nodes", dict(node, metadata={"name": "n1", "namespace": "x"})
    )
    assert status == 409 and body["reason"] == "AlreadyExists"


def test_request_log_is_bounded() -> None:
    log = RequestLog(max_entries=2)
    for name in ("a", "b", "c"):
        log.append(RequestRecord("get", "pods", "", "", "default", name, 200, f"/x/{name}"))
    assert [r.name for r in log] == ["b", "c"]
    assert log.count(verb="get") == 2 and len(log) == 2


async def test_empty_endpoints_and_ports_come_back_as_null(client: Client) -> None:
    # kube-apiserver v1.24 (checked on the real control plane, and by "slice empty lists"
    # in tests/realcluster/test_conformance.py): neither list has omitempty, and an empty list
    # does not survive storage, so [] and a missing list both read back as null.
    body = endpoint_slice("empty", ports=[], endpoints=[])
    status, created = await client.post(SLICES, body)
    assert status == 201, created
    assert created["ports"] is None and created["endpoints"] is None
    async with client.session.get(
        client.base + SLICES,
        params={"watch": "true", "resourceVersion": created["metadata"]["resourceVersion"]},
    ) as stream:
        put = {**created, "ports": [], "endpoints": [{"addresses": ["10.0.0.1"]}]}
        status, replaced = await client.put(f"{SLICES}/empty", put)
        assert status == 200, replaced
        assert replaced["ports"] is None and replaced["endpoints"][0]["addresses"] == ["10.0.0.1"]
        event = json.loads(await stream.content.readline())
    assert event["type"] == "MODIFIED" and event["object"]["ports"] is None
    async with client.session.get(client.base + f"{SLICES}/no-lists-given") as response:
        assert response.status == 404
    missing = {k: v for k, v in endpoint_slice("no-lists-given").items() if k != "ports"}
    missing.pop("endpoints")
    status, created = await client.post(SLICES, missing)
    assert status == 201, created
    async with client.session.get(client.base + f"{SLICES}/no-lists-given") as response:
        raw = await response.read()
    assert b'"endpoints":null' in raw and b'"ports":null' in raw
