"""The operator's Endpoints and mirroring on a cluster whose kube-controller-manager runs without
its Endpoints and EndpointSlice mirroring controllers (KEP-4974; upstream CI runs that
configuration from v1.37 on).

The module starts its own control plane: kube-controller-manager with ``--controllers`` lacking
``endpoint`` and ``endpointslicemirroring`` (its EndpointSlice controller still on, so that a
``spec.selector`` Service shows that it runs). On it, the operator alone writes the ``core/v1``
Endpoints of an opted-in Service that asks for them, and alone mirrors a selectorless Service's
Endpoints into slices; nothing else writes either (no Endpoints for a ``spec.selector`` Service,
no slice of ``endpointslicemirroring-controller.k8s.io`` for an Endpoints object that is not
labelled ``skip-mirror``).
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing.controlplane import KCM_CONTROLLERS, ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import assets_dir
from tests.realcluster.kube import JSON, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess
from tests.realcluster.parity import endpoints_of

pytestmark = pytest.mark.realcluster

OFF = ("endpoint", "endpointslicemirroring")
KCM_SLICES = "endpointslice-controller.k8s.io"
KCM_MIRRORING = "endpointslicemirroring-controller.k8s.io"
ENDPOINTS = "endpointslice-operator.io/endpoints"
SOURCE = "endpointslice-operator.io/source"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
PORTS = [
    {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
    {"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"},
]
QUIET_SECONDS = 3.0
"""How long an absence is watched for after the same controller's other work was seen."""


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """etcd, kube-apiserver and kube-controller-manager without the two controllers."""
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test starts kube-controller-manager itself")
    controllers = tuple(c for c in KCM_CONTROLLERS if c not in OFF)
    plane = ControlPlane(
        assets=assets,
        workdir=Path(tempfile.mkdtemp(prefix="eso-nokcmep-")),
        kcm_controllers=controllers,
    )
    try:
        plane.start()
        assert plane.kcm_running, "kube-controller-manager is not in KUBEBUILDER_ASSETS"
        yield plane
    finally:
        plane.stop()


@pytest.fixture
async def kube(plane: ControlPlane) -> AsyncIterator[Kube]:
    """This module's plane instead of the session's (``ns`` and ``operator`` use it)."""
    async with await Kube.load(plane.kubeconfig) as client:
        yield client


def kcm_flags(plane: ControlPlane) -> str:
    pid = plane.pids["kube-controller-manager"]
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def subsets_view(endpoints: JSON) -> list[tuple[Any, ...]]:
    """Each subset as (ready IPs, not-ready IPs, ports), sorted."""
    return sorted(
        (
            tuple(sorted(a["ip"] for a in s.get("addresses") or [])),
            tuple(sorted(a["ip"] for a in s.get("notReadyAddresses") or [])),
            tuple(sorted((p.get("name"), p["port"], p["protocol"]) for p in s.get("ports") or [])),
        )
        for s in endpoints.get("subsets") or []
    )


async def all_slices(kube: Kube, ns: str) -> list[JSON]:
    body = await kube.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
    return list(body["items"])


async def test_kube_controller_manager_runs_without_its_endpoints_controllers(
    plane: ControlPlane, kube: Kube, ns: str
) -> None:
    """The configuration itself: kube-controller-manager's EndpointSlice controller serves a
    ``spec.selector`` Service, and yet no Endpoints object appears for it; a selectorless
    Service's hand-made Endpoints are mirrored by nobody (no operator runs here)."""
    flags = kcm_flags(plane)
    controllers = flags.split("--controllers=", 1)[1].split()[0].split(",")
    assert "endpointslice" in controllers and not set(OFF) & set(controllers), flags

    await o.node(kube, "node-a", "zone-a")
    await o.pod(kube, ns, "web-1", "10.1.0.1", labels={"app": "web"})
    await o.service(kube, ns, "web", selector={"app": "web"}, opt_in=False)
    await o.service(kube, ns, "db", opt_in=False)
    await kube.create(f"/api/v1/namespaces/{ns}/endpoints", endpoints_body("db", ["10.9.0.1"]))

    async def kcm_sliced() -> bool:
        return o.addresses(await kube.slices(ns, "web", KCM_SLICES)) == {"10.1.0.1"}

    await eventually(kcm_sliced, timeout=60)
    await asyncio.sleep(QUIET_SECONDS)
    assert await endpoints_of(kube, ns, "web") is None
    assert await kube.slices(ns, "db", None) == []


def endpoints_body(
    name: str, ready: list[str], not_ready: list[str] | None = None, **labels: str
) -> JSON:
    subset: JSON = {
        "addresses": [{"ip": ip} for ip in ready],
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    }
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "labels": labels},
        "subsets": [subset],
    }


async def test_the_operator_alone_writes_the_endpoints_of_a_service_that_asks(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    selector = {"app": "api"}
    await o.pod(kube, ns, "api-1", "10.2.0.1", labels=selector)
    await o.pod(kube, ns, "api-2", "10.2.0.2", labels=selector, ready=False)
    await o.service(
        kube,
        ns,
        "api",
        annotations={o.SELECTOR: "app=api", ENDPOINTS: "true"},
        ports=PORTS,
    )
    ports = (("dns", 5353, "UDP"), ("http", 8080, "TCP"))

    async def holds(ready: tuple[str, ...], not_ready: tuple[str, ...]) -> JSON:
        current = await endpoints_of(kube, ns, "api")
        assert current is not None
        assert subsets_view(current) == [(ready, not_ready, ports)], current.get("subsets")
        return current

    first = await eventually(lambda: holds(("10.2.0.1",), ("10.2.0.2",)), timeout=60)
    labels = first["metadata"].get("labels") or {}
    assert labels.get(MANAGED_BY) == OURS and labels.get(ENDPOINTS_MANAGED_BY) == OURS, labels
    assert TRIGGER in (first["metadata"].get("annotations") or {})
    managers = {f.get("manager") for f in first["metadata"].get("managedFields") or []}
    assert "kube-controller-manager" not in managers, managers

    # Pod changes: readiness both ways, a new pod, a pod deleted.
    await o.set_ready(kube, ns, "api-2", True)
    await eventually(lambda: holds(("10.2.0.1", "10.2.0.2"), ()), timeout=60)
    await o.set_ready(kube, ns, "api-1", False)
    await o.pod(kube, ns, "api-3", "10.2.0.3", labels=selector)
    await eventually(lambda: holds(("10.2.0.2", "10.2.0.3"), ("10.2.0.1",)), timeout=60)
    force = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    await kube.delete(f"/api/v1/namespaces/{ns}/pods/api-2", force)
    await eventually(lambda: holds(("10.2.0.3",), ("10.2.0.1",)), timeout=60)

    # With spec.selector too (opted in besides): no Endpoints of kube-controller-manager's are in
    # the way (with its controller on, ConflictingEndpoints and none of ours), so ours are there.
    await o.service(
        kube, ns, "api-sel", selector=selector, annotations={ENDPOINTS: "true"}, ports=PORTS
    )

    async def ours_with_selector() -> JSON:
        current = await endpoints_of(kube, ns, "api-sel")
        assert current is not None
        assert (current["metadata"].get("labels") or {}).get(MANAGED_BY) == OURS, current
        assert subsets_view(current) == [(("10.2.0.3",), ("10.2.0.1",), ports)], current
        return current

    await eventually(ours_with_selector, timeout=60)
    assert not await kube.events(ns, "ConflictingEndpoints")

    # No longer asked for: ours is deleted, and nothing writes another.
    await kube.patch(
        f"/api/v1/namespaces/{ns}/services/api", {"metadata": {"annotations": {ENDPOINTS: None}}}
    )

    async def gone() -> bool:
        return await endpoints_of(kube, ns, "api") is None

    await eventually(gone, timeout=60)
    await asyncio.sleep(QUIET_SECONDS)
    assert await endpoints_of(kube, ns, "api") is None

    # Asked again, then the Service deleted: the Endpoints go with it.
    await kube.patch(
        f"/api/v1/namespaces/{ns}/services/api",
        {"metadata": {"annotations": {ENDPOINTS: "true"}}},
    )
    await eventually(lambda: holds(("10.2.0.3",), ("10.2.0.1",)), timeout=60)
    await kube.delete(f"/api/v1/namespaces/{ns}/services/api")
    await eventually(gone, timeout=60)


async def test_the_operator_alone_mirrors_an_endpoints_object(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    # Not labelled skip-mirror: with kube-controller-manager's mirroring off nothing else acts.
    await o.service(kube, ns, "db", annotations={SOURCE: "endpoints"})
    await kube.create(
        f"/api/v1/namespaces/{ns}/endpoints",
        endpoints_body("db", ["10.9.0.1", "10.9.0.2"], ["10.9.0.3"], tier="data"),
    )

    async def mirrored(ready: set[str], not_ready: set[str]) -> list[JSON]:
        slices = await all_slices(kube, ns)
        assert {s["metadata"]["labels"].get(MANAGED_BY) for s in slices} <= {OURS}, slices
        ours = await kube.slices(ns, "db")
        assert o.ready_addresses(ours) == ready, ours
        assert o.addresses(ours) - o.ready_addresses(ours) == not_ready, ours
        return ours

    ours = await eventually(lambda: mirrored({"10.9.0.1", "10.9.0.2"}, {"10.9.0.3"}), timeout=60)
    (only,) = ours
    assert only["metadata"]["labels"]["tier"] == "data"
    assert only["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert [r["kind"] for r in only["metadata"]["ownerReferences"]] == ["Endpoints"]

    # The Endpoints changed by hand: the slices follow.
    changed = endpoints_body("db", ["10.9.0.2", "10.9.0.4"])["subsets"]
    await kube.patch(f"/api/v1/namespaces/{ns}/endpoints/db", {"subsets": changed})
    await eventually(lambda: mirrored({"10.9.0.2", "10.9.0.4"}, set()), timeout=60)

    # Deleted: the mirrored slices go, and nothing else ever wrote one.
    await kube.delete(f"/api/v1/namespaces/{ns}/endpoints/db")

    async def unmirrored() -> bool:
        return await all_slices(kube, ns) == []

    await eventually(unmirrored, timeout=60)
    await asyncio.sleep(QUIET_SECONDS)
    assert await all_slices(kube, ns) == []
    assert not [e for e in await kube.events(ns) if e.get("reason") == "ConflictingController"]
