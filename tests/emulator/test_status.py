"""The /status subresource is separated from the main resource, as for pods/services/nodes."""

from __future__ import annotations

from endpointslice_operator.testing import Emulator
from tests.emulator.conftest import PODS, SERVICES, Client, pod

RUNNING = {
    "phase": "Running",
    "podIP": "10.1.0.5",
    "conditions": [{"type": "Ready", "status": "True"}],
}


async def test_post_drops_a_client_status(client: Client) -> None:
    status, body = await client.post(PODS, pod("p") | {"status": RUNNING})
    assert status == 201
    assert body["status"] == {"phase": "Pending"}
    status, body = await client.post(
        SERVICES,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}},
        },
    )
    assert body["status"] == {"loadBalancer": {}}


async def test_nodes_keep_status_on_create(client: Client) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
        "status": {"allocatable": {"cpu": "4"}},
    }
    status, body = await client.post("/api/v1/nodes", node)
    assert status == 201 and body["status"] == {"allocatable": {"cpu": "4"}}


async def test_main_resource_writes_ignore_status(emu: Emulator, client: Client) -> None:
    emu.store.create(pod("p") | {"status": RUNNING})
    _, current = await client.get(f"{PODS}/p")
    current["status"] = {"phase": "Failed"}
    current["metadata"]["labels"] = {"x": "1"}
    status, body = await client.put(f"{PODS}/p", current)
    assert status == 200
    assert body["status"] == RUNNING
    assert body["metadata"]["labels"] == {"x": "1"}
    status, body = await client.patch(f"{PODS}/p", {"status": {"phase": "Failed"}})
    assert status == 200 and body["status"] == RUNNING


async def test_status_writes_ignore_everything_else(emu: Emulator, client: Client) -> None:
    created = emu.store.create(pod("p", {"app": "a"}) | {"status": {"phase": "Pending"}})
    changed = dict(created, status=RUNNING)
    changed["metadata"] = dict(created["metadata"], labels={"app": "b"})
    status, body = await client.put(f"{PODS}/p/status", changed)
    assert status == 200
    assert body["status"] == RUNNING
    assert body["metadata"]["labels"] == {"app": "a"}
    assert body["metadata"]["generation"] == created["metadata"]["generation"]
    status, body = await client.patch(
        f"{PODS}/p/status", {"metadata": {"labels": {"app": "c"}}, "status": {"phase": "Succeeded"}}
    )
    assert body["metadata"]["labels"] == {"app": "a"}
    assert body["status"]["phase"] == "Succeeded"
    assert emu.requests.count(verb="patch", resource="pods", subresource="status") == 1


async def test_status_of_a_resource_without_one_is_not_found(client: Client) -> None:
    status, _ = await client.get(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/x/status"
    )
    assert status == 404


async def test_store_status_update(emu: Emulator) -> None:
    created = emu.store.create(pod("p"))
    updated = emu.store.update(dict(created, status=RUNNING), subresource="status")
    assert updated["status"] == RUNNING
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


async def test_resource_claims_keep_status_apart(client: Client) -> None:
    """ResourceClaims (resource.k8s.io/v1): status dropped on create, set through /status, as
    kube-apiserver's registry does; the device-network source reads it."""
    claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "nic"},
        "spec": {"devices": {"requests": [{"name": "vf", "exactly": {"deviceClassName": "x"}}]}},
        "status": {"devices": [{"driver": "d", "pool": "p", "device": "v"}]},
    }
    status, body = await client.post(claims, claim)
    assert status == 201 and not body.get("status")
    allocated = {
        "allocation": {"devices": {"results": [{"request": "vf", "driver": "d", "pool": "p",
                                                "device": "v"}]}},
        "devices": [{"driver": "d", "pool": "p", "device": "v",
                     "networkData": {"ips": ["192.168.0.2/24"]}}],
    }  # fmt: skip
    status, body = await client.put(f"{claims}/nic/status", body | {"status": allocated})
    assert status == 200 and body["status"] == allocated
    # A PUT of the main resource leaves the status alone.
    status, body = await client.put(f"{claims}/nic", body | {"status": {}})
    assert status == 200 and body["status"] == allocated
    status, listed = await client.get(claims)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["nic"]
