"""Simulated nodes (scheduler and kubelet) and the Deployment/ReplicaSet controllers, over HTTP."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.workloads import HASH_LABEL
from tests.e2e.harness import eventually
from tests.emulator.conftest import Client

JSON = dict[str, Any]
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(replicas: int = 3, **spec: Any) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "agnhost"}]},
            },
            **spec,
        },
    }


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Emulator, Client]]:
    async with (
        run_emulator(seed=3, nodes=3, pod_start_delay=0.05) as emu,
        aiohttp.ClientSession() as session,
    ):
        yield emu, Client(session, emu.url)


def pods(emu: Emulator, *, active: bool = True) -> list[JSON]:
    found = emu.store.list("pods", "default", label_selector="app=web")
    return [p for p in found if not (active and p["metadata"].get("deletionTimestamp"))]


def ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def available(emu: Emulator) -> int:
    found = emu.store.get("deployments", "default", "web")
    assert found is not None
    return int((found.get("status") or {}).get("availableReplicas", 0))


async def test_nodes_are_ready_in_zones(cluster: tuple[Emulator, Client]) -> None:
    _, client = cluster
    status, body = await client.get("/api/v1/nodes")
    assert status == 200
    nodes = body["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["node-1", "node-2", "node-3"]
    zones = [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes]
    assert zones == ["zone-a", "zone-b", "zone-c"]
    for node in nodes:
        (condition,) = node["status"]["conditions"]
        assert (condition["type"], condition["status"]) == ("Ready", "True")
        assert node["status"]["allocatable"]["cpu"] == "4"


async def test_a_pod_is_scheduled_started_and_ready(cluster: tuple[Emulator, Client]) -> None:
    emu, client = cluster
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    status, created = await client.post("/api/v1/namespaces/default/pods", body)
    assert status == 201 and created["status"]["phase"] == "Pending"
    pod = await eventually(lambda: ready(p := pods(emu)[0]) and p)
    assert pod  # (eventually returned it: ready)
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["podIP"] == "10.244.1.2"
    assert pod["status"]["podIPs"] == [{"ip": "10.244.1.2"}]
    assert pod["status"]["hostIP"] == "172.18.0.2"
    assert pod["status"]["containerStatuses"][0]["ready"] is True
    # deleted with the API's grace period: Terminating, then gone, and the IP is reused
    status, _ = await client.request(
        "DELETE", "/api/v1/namespaces/default/pods/solo?gracePeriodSeconds=1"
    )
    assert status == 200
    assert pods(emu, active=False)[0]["metadata"]["deletionTimestamp"]
    await eventually(lambda: not pods(emu, active=False), timeout=10)
    body["metadata"]["name"] = "again"
    await client.post("/api/v1/namespaces/default/pods", body)
    again = await eventually(lambda: ready(p := pods(emu)[0]) and p)
    assert again
    assert again["status"]["podIP"] == "10.244.1.2"


async def test_readiness_gates_hold_ready_back(cluster: tuple[Emulator, Client]) -> None:
    emu, client = cluster
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gated", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "image": "x"}],
            "readinessGates": [{"conditionType": "example.com/lb-ready"}],
        },
    }
    await client.post("/api/v1/namespaces/default/pods", body)
    pod = await eventually(lambda: (p := pods(emu)[0])["status"]["phase"] == "Running" and p)
    assert not ready(pod)
    gate = {"type": "example.com/lb-ready", "status": "True"}
    status, _ = await client.patch(
        "/api/v1/namespaces/default/pods/gated/status",
        {"status": {"conditions": [gate]}},
        kind="strategic",
    )
    assert status == 200
    await eventually(lambda: ready(pods(emu)[0]))
    gate["status"] = "False"
    await client.patch(
        "/api/v1/namespaces/default/pods/gated/status",
        {"status": {"conditions": [gate]}},
        kind="strategic",
    )
    await eventually(lambda: not ready(pods(emu)[0]))


async def test_deployment_rolls_out_scales_and_spreads(cluster: tuple[Emulator, Client]) -> None:
    emu, client = cluster
    status, _ = await client.post(DEPLOYMENTS, deployment(replicas=3))
    assert status == 201
    await eventually(lambda: available(emu) == 3)
    web = emu.store.get("deployments", "default", "web")
    assert web is not None
    assert web["status"]["updatedReplicas"] == 3
    assert web["status"]["observedGeneration"] == web["metadata"]["generation"]
    assert {c["type"]: c["reason"] for c in web["status"]["conditions"]} == {
        "Available": "MinimumReplicasAvailable",
        "Progressing": "NewReplicaSetAvailable",
    }
    (rs,) = emu.store.list("replicasets", "default")
    assert rs["metadata"]["name"] == f"web-{rs['metadata']['labels'][HASH_LABEL]}"
    assert rs["metadata"]["ownerReferences"][0]["uid"] == web["metadata"]["uid"]
    assert sorted(p["spec"]["nodeName"] for p in pods(emu)) == ["node-1", "node-2", "node-3"]
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet" for p in pods(emu))

    # kubectl scale's request: a merge patch of the Scale subresource
    status, scale = await client.patch(f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 5}})
    assert status == 200
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 5
    assert scale["status"]["selector"] == "app=web"
    await eventually(lambda: available(emu) == 5 and len(pods(emu)) == 5)
    metadata = {"name": "web", "namespace": "default"}
    status, _ = await client.put(
        f"{DEPLOYMENTS}/web/scale",
        {"kind": "Scale", "apiVersion": "autoscaling/v1",
         "metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 2}},
    )  # fmt: skip
    assert status == 409  # v1.36 takes the namespace from the URL (v1.24: 422)
    status, scale = await client.put(
        f"{DEPLOYMENTS}/web/scale",
        {"kind": "Scale", "apiVersion": "autoscaling/v1",
         "metadata": {**metadata, "resourceVersion": "1"}, "spec": {"replicas": 2}},
    )  # fmt: skip
    assert status == 409  # a stale resourceVersion
    status, _ = await client.put(
        f"{DEPLOYMENTS}/web/scale",
        {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
         "spec": {"replicas": 2}},
    )  # fmt: skip
    assert status == 200
    await eventually(lambda: len(pods(emu)) == 2)
    assert len(pods(emu, active=False)) == 5  # three are Terminating for their grace period


async def test_rollout_restart_replaces_pods_within_the_surge(
    cluster: tuple[Emulator, Client],
) -> None:
    emu, client = cluster
    await client.post(DEPLOYMENTS, deployment(replicas=4))
    await eventually(lambda: available(emu) == 4)
    before = {p["metadata"]["name"] for p in pods(emu)}
    most_pods = 0

    def rolled_out() -> bool:
        nonlocal most_pods
        most_pods = max(most_pods, len(pods(emu)))
        web = emu.store.get("deployments", "default", "web")
        assert web is not None
        status = web.get("status") or {}
        return bool(
            status.get("observedGeneration") == web["metadata"]["generation"]
            and status.get("updatedReplicas") == 4
            and status.get("replicas") == 4
            and status.get("availableReplicas") == 4
        )

    # kubectl rollout restart's request: a strategic merge patch of the template
    restarted = {"kubectl.kubernetes.io/restartedAt": "2026-11-24T00:00:00Z"}
    status, _ = await client.patch(
        f"{DEPLOYMENTS}/web",
        {"spec": {"template": {"metadata": {"annotations": restarted}}}},
        kind="strategic",
    )
    assert status == 200
    await eventually(rolled_out)
    after = {p["metadata"]["name"] for p in pods(emu)}
    assert not before & after
    assert most_pods <= 4 + 1  # maxSurge 25% of 4
    old, new = sorted(
        emu.store.list("replicasets", "default"),
        key=lambda r: r["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
    )
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 4)
    assert all(p["metadata"]["annotations"] == restarted for p in pods(emu))


async def test_recreate_stops_old_pods_first(cluster: tuple[Emulator, Client]) -> None:
    emu, client = cluster
    await client.post(DEPLOYMENTS, deployment(replicas=2, strategy={"type": "Recreate"}))
    await eventually(lambda: available(emu) == 2)
    changed = copy.deepcopy(deployment(replicas=2, strategy={"type": "Recreate"}))
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "agnhost:2"
    status, _ = await client.patch(f"{DEPLOYMENTS}/web", {"spec": changed["spec"]})
    assert status == 200
    await eventually(lambda: len(emu.store.list("replicasets", "default")) == 2)
    # the new ReplicaSet waits until no old pod is active
    for rs in emu.store.list("replicasets", "default"):
        if rs["spec"]["template"]["spec"]["containers"][0]["image"] == "agnhost:2":
            assert rs["spec"]["replicas"] == 0 or not any(
                p["spec"]["containers"][0]["image"] == "agnhost" for p in pods(emu)
            )
    await eventually(
        lambda: (
            [p["spec"]["containers"][0]["image"] for p in pods(emu)] == ["agnhost:2"] * 2
            and available(emu) == 2
        )
    )


async def test_invalid_deployments_are_refused(cluster: tuple[Emulator, Client]) -> None:
    _, client = cluster
    mismatched = deployment()
    mismatched["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    status, body = await client.post(DEPLOYMENTS, mismatched)
    assert status == 422
    assert "`selector` does not match template `labels`" in body["message"]
    negative = deployment(replicas=-1)
    status, body = await client.post(DEPLOYMENTS, negative)
    assert status == 422 and "spec.replicas" in body["message"]
    status, _ = await client.post(DEPLOYMENTS, deployment())
    assert status == 201
    status, body = await client.patch(
        f"{DEPLOYMENTS}/web",
        {"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                  "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}},
    )  # fmt: skip
    assert status == 422 and "field is immutable" in body["message"]
