"""Mirroring (``<prefix>/source: endpoints``) on the emulator over HTTP."""

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
    foreign_slice,
    pod,
    running_operator,
    service,
    settle,
    slices,
    writes,
)

SOURCE = "endpointslice-operator.io/source"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
KCM_MIRRORING = "endpointslicemirroring-controller.k8s.io"


def endpoints_body(
    name: str,
    ready: list[str],
    not_ready: tuple[str, ...] | list[str] = (),
    ports: tuple[int, ...] | list[int] = (80,),
) -> dict[str, Any]:
    subset: dict[str, Any] = {
        "ports": [{"name": f"p{p}", "port": p, "protocol": "TCP"} for p in ports]
    }
    if ready:
        subset["addresses"] = [{"ip": ip} for ip in ready]
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {SKIP_MIRROR: "true", "team": "db"},
            "annotations": {"note": "by hand"},
        },
        "subsets": [subset],
    }


def replace_endpoints(emu: Emulator, body: dict[str, Any]) -> None:
    current = emu.store.get("endpoints", NS, body["metadata"]["name"])
    assert current is not None
    current["subsets"] = body["subsets"]
    emu.store.update(current)


def readiness(emu: Emulator, name: str) -> dict[str, bool]:
    return {
        a: ep["conditions"]["ready"]
        for s in slices(emu, name)
        for ep in s.get("endpoints") or []
        for a in ep["addresses"]
    }


async def test_mirrors_endpoints_through_changes_and_deletion() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1", "10.5.0.2"], ["10.5.0.3"]))
        service(emu, "db", annotations={SOURCE: "endpoints"})
        async with running_operator(emu) as op:
            await eventually(
                lambda: (
                    readiness(emu, "db") == {"10.5.0.1": True, "10.5.0.2": True, "10.5.0.3": False}
                )
            )
            [mirrored] = slices(emu, "db")
            metadata = mirrored["metadata"]
            assert metadata["ownerReferences"][0]["kind"] == "Endpoints"
            assert metadata["labels"]["team"] == "db"
            assert SKIP_MIRROR not in metadata["labels"]
            assert metadata["annotations"] == {"note": "by hand"}
            assert mirrored["ports"] == [{"name": "p80", "port": 80, "protocol": "TCP"}]
            assert mirrored["endpoints"][0]["conditions"] == {"ready": True}
            await settle(op)
            assert writes(emu) == {"create": 1, "update": 0, "delete": 0}

            replace_endpoints(emu, endpoints_body("db", ["10.5.0.3"], ["10.5.0.1"]))
            await eventually(lambda: readiness(emu, "db") == {"10.5.0.3": True, "10.5.0.1": False})
            replace_endpoints(emu, endpoints_body("db", ["10.5.0.3"], ports=[5432]))
            await eventually(lambda: [s["ports"][0]["port"] for s in slices(emu, "db")] == [5432])
            assert addresses(emu, "db") == {"10.5.0.3"}

            emu.store.delete("endpoints", NS, "db")
            await eventually(lambda: slices(emu, "db") == [])


async def test_source_endpoints_needs_a_selectorless_service() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1"]))
        service(emu, "db", annotations={SOURCE: "endpoints", SELECTOR: "app=web"})
        service(emu, "odd", annotations={SOURCE: "sideways"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: len(events(emu, "ConflictingSource")) == 1)
            await eventually(lambda: len(events(emu, "InvalidSource")) == 1)
            [conflict] = events(emu, "ConflictingSource")
            assert conflict["source"]["component"] == "endpoint-slice-mirroring-controller"
            await settle(op)
            assert slices(emu, "db") == slices(emu, "odd") == []
            # fixed: the selector annotation goes, mirroring starts
            current = emu.store.get("services", NS, "db")
            assert current is not None
            del current["metadata"]["annotations"][SELECTOR]
            emu.store.update(current)
            await eventually(lambda: addresses(emu, "db") == {"10.5.0.1"})


async def test_conflicting_controller_and_switching_back_to_pods() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1"]))
        foreign_slice(emu, "db-kcm", "db", KCM_MIRRORING)
        service(emu, "db", annotations={SOURCE: "endpoints"})
        pod(emu, "web-0", "10.1.0.9")
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "db") == {"10.5.0.1"})
            await eventually(lambda: len(events(emu, "ConflictingController")) == 1)
            # back to pods (with the selector annotation): the mirrored slices are replaced
            current = emu.store.get("services", NS, "db")
            assert current is not None
            current["metadata"]["annotations"][SOURCE] = "pods"
            current["metadata"]["annotations"][SELECTOR] = "app=web"
            emu.store.update(current)
            await eventually(lambda: addresses(emu, "db") == {"10.1.0.9"})
            [from_pods] = slices(emu, "db")
            assert from_pods["metadata"]["ownerReferences"][0]["kind"] == "Service"
            # the other controller's slice is never touched
            assert emu.store.get("endpointslices", NS, "db-kcm") is not None


async def test_service_deletion_deletes_mirrored_slices() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1"]))
        service(emu, "db", annotations={SOURCE: "endpoints"})
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "db") == {"10.5.0.1"})
            emu.store.delete("services", NS, "db")
            await eventually(lambda: slices(emu, "db") == [])
            assert emu.store.get("endpoints", NS, "db") is not None


async def test_a_mirroring_service_never_gets_endpoints_of_ours() -> None:
    """Its Endpoints object is the mirroring's input: even with a conflicting selector and the
    Endpoints annotation (found by the chaos test), the operator writes none."""
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "db",
            annotations={
                SOURCE: "endpoints",
                SELECTOR: "app=web",
                "endpointslice-operator.io/endpoints": "true",
            },
        )
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu, write_endpoints=True) as op:
            await eventually(lambda: len(events(emu, "ConflictingSource")) == 1)
            await settle(op)
            assert emu.store.get("endpoints", NS, "db") is None
            assert emu.requests.count(verb="create", resource="endpoints") == 0


async def test_source_endpoints_with_a_network_annotation_conflicts() -> None:
    """The network annotations choose pods' addresses; a mirroring Service has no pods."""
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1"]))
        service(
            emu,
            "db",
            annotations={SOURCE: "endpoints", "endpointslice-operator.io/network": f"{NS}/net"},
        )
        async with running_operator(emu) as op:
            await eventually(lambda: len(events(emu, "ConflictingSource")) == 1)
            [conflict] = events(emu, "ConflictingSource")
            assert "endpointslice-operator.io/network" in conflict["message"]
            await settle(op)
            assert slices(emu, "db") == []
            current = emu.store.get("services", NS, "db")
            assert current is not None
            del current["metadata"]["annotations"]["endpointslice-operator.io/network"]
            emu.store.update(current)
            await eventually(lambda: addresses(emu, "db") == {"10.5.0.1"})
