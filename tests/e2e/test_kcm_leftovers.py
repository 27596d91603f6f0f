"""What kube-controller-manager left for a Service the operator now publishes: a Warning Event
``LeftoverEndpoints`` once per Service and state, with the command that removes them, and the
objects themselves never touched (on the emulator over HTTP, virtual time)."""

from __future__ import annotations

from typing import Any

import pytest

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
)

pytestmark = pytest.mark.looptime

KCM = "endpointslice-controller.k8s.io"
MIRRORING = "endpointslicemirroring-controller.k8s.io"
REASON = "LeftoverEndpoints"
ENDPOINTS_ANNOTATION = "endpointslice-operator.io/endpoints"
SOURCE_ANNOTATION = "endpointslice-operator.io/source"
REMOVE = (
    f"endpointslice-operator migrate -n {NS} web (or, by hand: kubectl -n {NS} delete "
    f"endpoints web --ignore-not-found && kubectl -n {NS} delete endpointslices -l "
    f"'kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by in "
    f"({KCM},{MIRRORING})')"
)

REMOVE_SLICES = (
    f"endpointslice-operator migrate -n {NS} web (or, by hand: kubectl -n {NS} delete "
    f"endpointslices -l 'kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by "
    f"in ({KCM},{MIRRORING})')"
)


def kcm_endpoints(emu: Emulator, name: str, labels: dict[str, str] | None = None) -> Any:
    """An Endpoints object as kube-controller-manager's Endpoints controller leaves it."""
    return emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "subsets": [
                {"addresses": [{"ip": "10.9.9.9"}], "ports": [{"port": 8080, "protocol": "TCP"}]}
            ],
        }
    )


def unchanged(emu: Emulator, resource: str, original: dict[str, Any]) -> bool:
    now = emu.store.get(resource, NS, original["metadata"]["name"])
    assert now is not None, original["metadata"]["name"]
    return bool(now["metadata"]["resourceVersion"] == original["metadata"]["resourceVersion"])


async def test_leftover_slices_are_reported_once_per_state_with_the_command() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", annotations={SELECTOR: "app=web"})
        pod(emu, "web-0", "10.1.0.1")
        stale = foreign_slice(emu, "web-kcm", "web", KCM)
        mirrored = foreign_slice(emu, "web-mirrored", "web", MIRRORING)
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            (event,) = await eventually(lambda: events(emu, REASON))
            assert event["type"] == "Warning"
            assert event["involvedObject"]["name"] == "web"
            assert f"EndpointSlices of {KCM}" in event["message"]
            assert f"EndpointSlices of {MIRRORING}" in event["message"]
            assert event["message"].endswith(REMOVE), event["message"]
            # More syncs of the Service, same leftovers: no second Event.
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            assert [e["count"] for e in events(emu, REASON)] == [1]
            assert unchanged(emu, "endpointslices", stale)
            assert unchanged(emu, "endpointslices", mirrored)
            # What is left changes (the mirrored slice goes): said again, for what is left.
            emu.store.delete("endpointslices", NS, "web-mirrored")
            await eventually(lambda: len(events(emu, REASON)) == 2)
            (kcm_only,) = [
                e for e in events(emu, REASON) if e["metadata"]["name"] != event["metadata"]["name"]
            ]
            assert f"EndpointSlices of {KCM}" in kcm_only["message"]
            assert f"EndpointSlices of {MIRRORING}" not in kcm_only["message"]
            # Nothing of an Endpoints object left: the commands do not delete one.
            assert kcm_only["message"].endswith(REMOVE_SLICES), kcm_only["message"]
            # Nothing left: nothing said; a leftover coming back is said again.
            emu.store.delete("endpointslices", NS, "web-kcm")
            await settle(op)
            assert sum(e["count"] for e in events(emu, REASON)) == 2
            foreign_slice(emu, "web-kcm-2", "web", KCM)
            await eventually(lambda: sum(e["count"] for e in events(emu, REASON)) == 3)


async def test_a_service_with_its_selector_gets_conflicting_controller_not_leftovers() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        foreign_slice(emu, "web-kcm", "web", KCM)
        async with running_operator(emu) as op:
            await eventually(lambda: events(emu, "ConflictingController"))
            await settle(op)
            assert events(emu, REASON) == []


async def test_kcm_endpoints_object_is_reported_and_a_users_is_not() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        # Ours asked for: the Endpoints watch runs, kube-controller-manager's object is in the way.
        service(emu, "web", annotations={SELECTOR: "app=web", ENDPOINTS_ANNOTATION: "true"})
        left = kcm_endpoints(
            emu, "web", {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}
        )
        # A user's Endpoints object, unlabelled, beside a Service publishing pods: not a leftover.
        service(emu, "users", annotations={SELECTOR: "app=web", ENDPOINTS_ANNOTATION: "true"})
        users = kcm_endpoints(emu, "users")
        # Mirrored on purpose (source: endpoints): the mirroring syncer's business.
        service(
            emu,
            "mirrors",
            annotations={
                "endpointslice-operator.io/enabled": "true",
                SOURCE_ANNOTATION: "endpoints",
            },
        )
        kcm_endpoints(emu, "mirrors")
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            (event,) = await eventually(lambda: events(emu, REASON))
            assert event["involvedObject"]["name"] == "web"
            assert "endpoint-controller" in event["message"]
            assert event["message"].endswith(REMOVE)
            await settle(op)
            assert [e["involvedObject"]["name"] for e in events(emu, REASON)] == ["web"]
            assert unchanged(emu, "endpoints", left)
            assert unchanged(emu, "endpoints", users)
