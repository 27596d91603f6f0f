"""The core/v1 Endpoints the operator writes, on the emulator over HTTP."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.testing import Emulator, run_emulator
from tests.e2e.harness import (
    NS,
    SELECTOR,
    addresses,
    cluster,
    events,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
)

ENDPOINTS_ANNOTATION = "endpointslice-operator.io/endpoints"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
OURS = {
    MANAGED_BY_LABEL: "endpointslice-operator.io",
    "endpoints.kubernetes.io/managed-by": "endpointslice-operator.io",
    SKIP_MIRROR: "true",
}


def core_endpoints(emu: Emulator, name: str) -> dict[str, Any] | None:
    return emu.store.get("endpoints", NS, name)


def ips(emu: Emulator, name: str, field: str = "addresses") -> set[str]:
    obj = core_endpoints(emu, name)
    if obj is None:
        return set()
    return {a["ip"] for s in obj.get("subsets") or [] for a in s.get(field) or []}


def ports(emu: Emulator, name: str) -> list[list[int]]:
    obj = core_endpoints(emu, name)
    assert obj is not None
    return [sorted(p["port"] for p in s.get("ports") or []) for s in obj.get("subsets") or []]


def endpoint_writes(emu: Emulator) -> dict[str, int]:
    return {
        verb: emu.requests.count(verb=verb, resource="endpoints")
        for verb in ("create", "update", "delete")
    }


def selectorless(emu: Emulator, name: str, *, write: bool = True, **kwargs: Any) -> None:
    annotations = {SELECTOR: "app=web"}
    if write:
        annotations[ENDPOINTS_ANNOTATION] = "true"
    service(emu, name, annotations=annotations, labels={"team": "a"}, **kwargs)


async def test_endpoints_follow_pods_through_flips_deletions_and_port_changes() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web")
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2", ready=False)
        async with running_operator(emu) as op:
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1"})
            obj = core_endpoints(emu, "web")
            assert obj is not None
            assert obj["metadata"]["labels"] == {"team": "a", **OURS}
            assert (
                "endpoints.kubernetes.io/last-change-trigger-time" in obj["metadata"]["annotations"]
            )
            assert ips(emu, "web", "notReadyAddresses") == {"10.1.0.2"}
            [subset] = obj["subsets"]
            assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            assert {a["targetRef"]["name"] for a in subset["addresses"]} == {"web-0"}
            # the slices are still written, as before
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            assert endpoint_writes(emu) == {"create": 1, "update": 0, "delete": 0}

            set_ready(emu, "web-1", True)
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            emu.store.delete("pods", NS, "web-0")
            await eventually(lambda: ips(emu, "web") == {"10.1.0.2"})

            current = emu.store.get("services", NS, "web")
            assert current is not None
            current["spec"]["ports"] = [
                {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                {"name": "admin", "port": 81, "targetPort": 9090, "protocol": "TCP"},
            ]
            emu.store.update(current)
            await eventually(lambda: ports(emu, "web") == [[8080, 9090]])

            # nothing changes: nothing is written
            await settle(op)
            before = endpoint_writes(emu)
            assert op.queue is not None
            op.queue.add(f"{NS}/web")
            await settle(op)
            assert endpoint_writes(emu) == before

            # opting out of Endpoints deletes ours
            current = emu.store.get("services", NS, "web")
            assert current is not None
            del current["metadata"]["annotations"][ENDPOINTS_ANNOTATION]
            emu.store.update(current)
            await eventually(lambda: core_endpoints(emu, "web") is None)
            assert addresses(emu, "web") == {"10.1.0.2"}


async def test_write_endpoints_setting_covers_every_managed_service() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web", write=False)
        service(emu, "plain", selector={"app": "web"}, opt_in=False)
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu, write_endpoints=True) as op:
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1"})
            await settle(op)
            assert core_endpoints(emu, "plain") is None
            # the Service goes away: so do its Endpoints of ours
            emu.store.delete("services", NS, "web")
            await eventually(lambda: core_endpoints(emu, "web") is None)


async def test_someone_elses_endpoints_are_never_touched() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": "web", "namespace": NS, "labels": {"hand": "made"}},
                "subsets": [{"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 1}]}],
            }
        )
        selectorless(emu, "web")
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: len(events(emu, "ConflictingEndpoints")) == 1)
            [conflict] = events(emu, "ConflictingEndpoints")
            assert conflict["source"]["component"] == "endpoint-controller"
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            set_ready(emu, "web-0", False)
            await settle(op)
            assert ips(emu, "web") == {"10.9.9.9"}
            assert endpoint_writes(emu) == {"create": 0, "update": 0, "delete": 0}
            # opting out does not delete it either
            current = emu.store.get("services", NS, "web")
            assert current is not None
            current["metadata"]["annotations"] = {}
            emu.store.update(current)
            await settle(op)
            assert core_endpoints(emu, "web") is not None
            assert endpoint_writes(emu)["delete"] == 0
            assert len(events(emu, "ConflictingEndpoints")) == 1

            # once it is gone and the Service asks again, ours is written
            current = emu.store.get("services", NS, "web")
            assert current is not None
            current["metadata"]["annotations"] = {
                "endpointslice-operator.io/enabled": "true",
                SELECTOR: "app=web",
                ENDPOINTS_ANNOTATION: "true",
            }
            emu.store.update(current)
            emu.store.delete("endpoints", NS, "web")
            await eventually(lambda: ips(emu, "web", "notReadyAddresses") == {"10.1.0.1"})
            obj = core_endpoints(emu, "web")
            assert obj is not None
            assert obj["metadata"]["labels"][MANAGED_BY_LABEL] == "endpointslice-operator.io"


async def test_deleted_endpoints_of_ours_come_back() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web")
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu):
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1"})
            emu.store.delete("endpoints", NS, "web")
            await eventually(lambda: core_endpoints(emu, "web") is None)
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1"})


async def test_leftover_endpoints_of_ours_are_deleted_at_start() -> None:
    """Upstream's checkLeftoverEndpoints: an Endpoints object of ours whose Service went away
    while no operator ran is deleted by the next leader; anyone else's is left alone."""
    async with run_emulator() as emu:
        cluster(emu)
        for name, labels in (("gone", OURS), ("not-ours", {"hand": "made"})):
            emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": NS, "labels": labels},
                    "subsets": [],
                }
            )
        async with running_operator(emu) as op:
            await eventually(lambda: core_endpoints(emu, "gone") is None)
            await settle(op)
            assert core_endpoints(emu, "not-ours") is not None
            assert endpoint_writes(emu) == {"create": 0, "update": 0, "delete": 1}


async def test_endpoints_are_written_while_a_pod_sits_on_a_missing_node() -> None:
    """Upstream's Endpoints controller never reads Nodes: a pod whose node is not (yet) known
    is published with its nodeName. The slice sync of the same Service skips that pod and
    fails, to be retried (as upstream's EndpointSlice controller); the Endpoints object must
    not wait for it (found by the randomized referee, seed 938513567)."""
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web")
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2", node_name="node-gone")
        async with running_operator(emu):
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            obj = core_endpoints(emu, "web")
            assert obj is not None
            nodes = {a["nodeName"] for s in obj["subsets"] for a in s["addresses"]}
            assert nodes == {"node-a", "node-gone"}
