"""The core/v1 Endpoints watch runs only when something needs it (on the emulator over HTTP).

Without ``--write-endpoints``, Endpoints of ours left from an earlier run, or a Service asking
for Endpoints or mirroring them, the operator sends no Endpoints list or watch except one
``limit=1`` list selecting our label at start. The first Service that needs them starts the
watch; until its first listing is in, nothing is written for that Service.
"""

from __future__ import annotations

import asyncio

from endpointslice_operator.controller.operator import Operator
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
    settings,
    settle,
    slices,
    writes,
)
from tests.e2e.test_core_endpoints import (
    ENDPOINTS_ANNOTATION,
    MANAGED_BY_LABEL,
    core_endpoints,
    endpoint_writes,
    ips,
    selectorless,
)
from tests.e2e.test_mirroring import SOURCE, endpoints_body


def someone_elses(emu: Emulator, name: str, ip: str = "10.9.9.9") -> None:
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": NS, "labels": {"hand": "made"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 1}]}],
        }
    )


def endpoints_requests(emu: Emulator, verb: str | None = None) -> int:
    return emu.requests.count(resource="endpoints", verb=verb)


def ask_for_endpoints(emu: Emulator, name: str) -> None:
    current = emu.store.get("services", NS, name)
    assert current is not None
    current["metadata"]["annotations"][ENDPOINTS_ANNOTATION] = "true"
    emu.store.update(current)


def hold_endpoints_listings(emu: Emulator) -> None:
    """Every Endpoints list request fails (500) until :func:`release`."""
    emu.faults.fail_codes = (500,)
    emu.faults.fault_verbs = {"list"}
    emu.faults.fault_resources = {"endpoints"}
    emu.faults.fail_rate = 1.0


def release(emu: Emulator) -> None:
    emu.faults.fail_rate = 0.0


async def test_no_endpoints_watch_when_nothing_uses_them() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web", write=False)
        someone_elses(emu, "kcm")
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            set_ready(emu, "web-0", False)
            service(emu, "api", annotations={SELECTOR: "app=web"})
            await eventually(lambda: addresses(emu, "api") == {"10.1.0.1"})
            await settle(op)
            # Only the start-up look for Endpoints of ours (none): no watch, no full listing.
            assert endpoints_requests(emu, "list") == 1
            assert endpoints_requests(emu) == 1
            assert not op.indexes.endpoints.wanted
            assert len(op.indexes.endpoints) == 0
            assert core_endpoints(emu, "web") is None


async def test_first_service_asking_starts_the_watch_and_waits_for_its_listing() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web", write=False)
        selectorless(emu, "fresh", write=False)
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "fresh") == {"10.1.0.1"})
            await settle(op)
            assert endpoints_requests(emu, "watch") == 0
            listed = endpoints_requests(emu, "list")

            hold_endpoints_listings(emu)
            # Someone else's Endpoints for "web" appears while ours are not listed yet.
            someone_elses(emu, "web")
            ask_for_endpoints(emu, "web")
            ask_for_endpoints(emu, "fresh")
            # The listing is tried (and fails) again and again; the Services wait meanwhile.
            await eventually(lambda: endpoints_requests(emu, "list") >= listed + 2)
            await settle(op)
            assert op.indexes.endpoints.wanted
            assert not op.indexes.endpoints.synced
            assert endpoint_writes(emu) == {"create": 0, "update": 0, "delete": 0}
            assert core_endpoints(emu, "fresh") is None
            assert events(emu, "ConflictingEndpoints") == []

            release(emu)
            # The listing's end queues both again: "fresh" gets ours, "web" keeps its own.
            await eventually(lambda: ips(emu, "fresh") == {"10.1.0.1"})
            await eventually(lambda: len(events(emu, "ConflictingEndpoints")) == 1)
            await settle(op)
            assert op.indexes.endpoints.synced
            assert endpoints_requests(emu, "watch") >= 1
            assert ips(emu, "web") == {"10.9.9.9"}
            assert endpoint_writes(emu) == {"create": 1, "update": 0, "delete": 0}

            # Once started, the watch stays, also when no Service asks any more.
            for name in ("web", "fresh"):
                current = emu.store.get("services", NS, name)
                assert current is not None
                del current["metadata"]["annotations"][ENDPOINTS_ANNOTATION]
                emu.store.update(current)
            await eventually(lambda: core_endpoints(emu, "fresh") is None)
            someone_elses(emu, "late")
            await eventually(lambda: op.indexes.endpoints.get(NS, "late") is not None)


async def test_mirrored_slices_are_kept_while_the_endpoints_are_listed() -> None:
    """A restart with mirrored slices in place: the mirroring sync waits for the Endpoints
    listing instead of taking the source as missing (which would delete the slice)."""
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create(endpoints_body("db", ["10.5.0.1", "10.5.0.2"]))
        service(emu, "db", annotations={SOURCE: "endpoints"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "db") == {"10.5.0.1", "10.5.0.2"})
            await settle(op)
        [before] = slices(emu, "db")
        emu.requests.clear()

        # Every Endpoints listing (the start-up look for ours, then the watch's) takes 2 s.
        emu.faults.fault_verbs = {"list"}
        emu.faults.fault_resources = {"endpoints"}
        emu.faults.latency = 2.0
        async with running_operator(emu) as op:
            await eventually(lambda: op.indexes.endpoints.wanted)
            assert not op.indexes.endpoints.synced
            await eventually(lambda: op.indexes.endpoints.synced)
            await settle(op)
            assert writes(emu) == {"create": 0, "update": 0, "delete": 0}
            [after] = slices(emu, "db")
            assert after["metadata"]["uid"] == before["metadata"]["uid"]
            assert addresses(emu, "db") == {"10.5.0.1", "10.5.0.2"}
            # The watch runs: the source's deletion removes the mirrored slice.
            emu.store.delete("endpoints", NS, "db")
            await eventually(lambda: slices(emu, "db") == [])


async def test_write_endpoints_watches_from_the_start_and_readiness_waits_for_it() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        selectorless(emu, "web", write=False)
        pod(emu, "web-0", "10.1.0.1")
        hold_endpoints_listings(emu)
        op = Operator(settings(emu, write_endpoints=True), serve_health=False)
        task = asyncio.create_task(op.run())
        try:
            await eventually(lambda: endpoints_requests(emu, "list") >= 2)
            assert not op.ready
            assert op.indexes.endpoints.wanted
            assert addresses(emu, "web") == set()
            release(emu)
            await asyncio.wait_for(op.wait_leading(), 30)
            assert op.indexes.endpoints.synced
            await eventually(lambda: ips(emu, "web") == {"10.1.0.1"})
            obj = core_endpoints(emu, "web")
            assert obj is not None
            assert obj["metadata"]["labels"][MANAGED_BY_LABEL] == "endpointslice-operator.io"
            assert endpoints_requests(emu, "watch") >= 1
        finally:
            op.stop()
            await asyncio.wait_for(task, 30)
