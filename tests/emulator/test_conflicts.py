"""PUT semantics: optimistic concurrency, unconditional updates, no-op writes, generation."""

from __future__ import annotations

from endpointslice_operator.testing import Emulator
from tests.emulator.conftest import SLICES, Client, endpoint_slice

CONFLICT = (
    'Operation cannot be fulfilled on endpointslices.discovery.k8s.io "web": the object has been '
    "modified; please apply your changes to the latest version and try again"
)


async def test_stale_resource_version_is_a_conflict(client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web"))
    fresh = dict(created, endpoints=[{"addresses": ["10.0.0.2"]}])
    status, updated = await client.put(f"{SLICES}/web", fresh)
    assert status == 200
    stale = dict(created, endpoints=[{"addresses": ["10.0.0.3"]}])
    status, body = await client.put(f"{SLICES}/web", stale)
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == CONFLICT
    assert body["details"] == {"name": "web", "kind": "endpointslices", "group": "discovery.k8s.io"}
    _, current = await client.get(f"{SLICES}/web")
    assert current == updated


async def test_put_without_resource_version_is_unconditional(client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web"))
    await client.put(f"{SLICES}/web", dict(created, endpoints=[{"addresses": ["10.0.0.2"]}]))
    blind = endpoint_slice("web", endpoints=[{"addresses": ["10.0.0.9"]}])
    status, body = await client.put(f"{SLICES}/web", blind)
    assert status == 200
    assert body["endpoints"][0]["addresses"] == ["10.0.0.9"]
    assert body["metadata"]["uid"] == created["metadata"]["uid"]
    assert body["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


async def test_noop_put_keeps_the_resource_version(emu: Emulator, client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web"))
    before = emu.store.resource_version
    status, body = await client.put(f"{SLICES}/web", created)
    assert status == 200
    assert body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert emu.store.resource_version == before


async def test_put_of_a_missing_slice_is_not_found_but_creates_a_lease(client: Client) -> None:
    status, _ = await client.put(f"{SLICES}/ghost", endpoint_slice("ghost"))
    assert status == 404
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "lock"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }
    status, body = await client.put(
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock", lease
    )
    assert status == 201 and body["spec"]["holderIdentity"] == "a"


async def test_two_writers_race_on_a_lease(client: Client) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "lock"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
    }
    _, created = await client.post(path, lease)
    first = {**created, "spec": {**created["spec"], "holderIdentity": "b"}}
    second = {**created, "spec": {**created["spec"], "holderIdentity": "c"}}
    assert (await client.put(f"{path}/lock", first))[0] == 200
    assert (await client.put(f"{path}/lock", second))[0] == 409


async def test_name_in_body_must_match_the_url(client: Client) -> None:
    await client.post(SLICES, endpoint_slice("web"))
    status, body = await client.put(f"{SLICES}/web", endpoint_slice("other"))
    assert status == 400
    assert "does not match the name on the URL" in body["message"]


async def test_generation_tracks_spec_changes(emu: Emulator) -> None:
    created = emu.store.create(endpoint_slice("web"))
    assert created["metadata"]["generation"] == 1
    annotated = emu.store.patch(
        "endpointslices", "default", "web", {"metadata": {"annotations": {"a": "1"}}}
    )
    assert annotated["metadata"]["generation"] == 1
    changed = emu.store.patch(
        "endpointslices", "default", "web", {"endpoints": [{"addresses": ["10.0.0.7"]}]}
    )
    assert changed["metadata"]["generation"] == 2
    # EndpointSlices count label changes too (their registry strategy compares labels).
    relabelled = emu.store.patch(
        "endpointslices", "default", "web", {"metadata": {"labels": {"x": "y"}}}
    )
    assert relabelled["metadata"]["generation"] == 3
    service = emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "svc"},
            "spec": {"ports": [{"port": 80}]},
        }
    )
    relabelled_service = emu.store.patch(
        "services", "default", "svc", {"metadata": {"labels": {"x": "y"}}}
    )
    assert relabelled_service["metadata"]["generation"] == service["metadata"]["generation"] == 1


async def test_server_managed_fields_cannot_be_overwritten(client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web"))
    forged = dict(created)
    forged["metadata"] = dict(
        created["metadata"], generation=99, creationTimestamp="2000-01-01T00:00:00Z"
    )
    forged["endpoints"] = [{"addresses": ["10.0.0.5"]}]
    status, body = await client.put(f"{SLICES}/web", forged)
    assert status == 200
    assert body["metadata"]["generation"] == 2
    assert body["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
