"""Every address the operator publishes is canonical, as kube-controller-manager v1.36 writes it
(issue 34, items 2 and 3), on control planes of their own (a feature gate, a dual-stack
service range, a restart against the same etcd).

Since 1.33 upstream parses pod IPs sloppily and writes Go's canonical form; kube-apiserver v1.36
refuses a non-canonical address in an EndpointSlice, yet keeps one in a pod: an IPv6 form such
as ``fd00:0::1`` with only a warning, and every legacy form while ``StrictIPCIDRValidation`` is
off (or stored before an upgrade). v1.24's controller published pod IPs as given and its server
accepts them in slices; the operator follows v1.36, the server of record, so these tests are
deselected on older servers (``k8s_min 1.35``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import assets_dir
from tests.realcluster.kube import JSON, KCM, OURS, Kube, eventually
from tests.realcluster.operator_process import running
from tests.realcluster.parity import Twins, slice_shape

pytestmark = [pytest.mark.realcluster, pytest.mark.k8s_min("1.35")]

DUAL_STACK = "--service-cluster-ip-range=10.96.0.0/16,fd00:96::/112"
GATE_OFF = "--feature-gates=StrictIPCIDRValidation=false"
NS = "canonical"


@pytest.fixture
def plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A control plane of the test's own, with kube-controller-manager, a dual-stack service
    range and the API server flags the test gives (indirect parametrization)."""
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test starts a control plane with its flags")
    args = (DUAL_STACK, *getattr(request, "param", ()))
    control = ControlPlane(
        assets=assets, workdir=Path(tempfile.mkdtemp(prefix="eso-canon-")), apiserver_args=args
    )
    try:
        control.start()
        if not control.kcm_running:
            pytest.skip("parity needs kube-controller-manager")
        yield control
    finally:
        control.stop()


async def _namespace_and_node(kube: Kube) -> None:
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    )
    await o.node(kube, "node-a", "zone-a")


def _addresses(slices: list[JSON]) -> dict[str, set[tuple[str, ...]]]:
    """address type -> the address lists of its endpoints"""
    view: dict[str, set[tuple[str, ...]]] = {}
    for item in slices:
        view.setdefault(item["addressType"], set()).update(
            tuple(e["addresses"]) for e in item.get("endpoints") or []
        )
    return view


@pytest.mark.parametrize("plane", [(GATE_OFF,)], indirect=True, ids=["gate-off"])
async def test_legacy_pod_ips_are_published_canonical(plane: ControlPlane, tmp_path: Path) -> None:
    """``10.052.0.3`` and ``fd00:0000:0000::0001`` (the gate off keeps them in the pod):
    both controllers publish ``10.52.0.3`` and ``fd00::1``."""
    async with await Kube.load(plane.kubeconfig) as kube:
        await _namespace_and_node(kube)
        async with running(kube.kubeconfig, tmp_path / "operator.log", "--namespace", NS):
            twins = Twins(kube, NS, "web", {"app": "web"})
            await twins.create(ipFamilyPolicy="PreferDualStack", ipFamilies=["IPv4", "IPv6"])
            pod = await o.pod(kube, NS, "web-0", ["10.052.0.3", "fd00:0000:0000::0001"])
            assert pod["status"]["podIPs"][0]["ip"] == "10.052.0.3"
            expected = {"IPv4": {("10.52.0.3",)}, "IPv6": {("fd00::1",)}}

            async def canonical() -> bool:
                # Compared per family: the shape of a dual-stack Service's slices keys each
                # endpoint by its pod, which both families share.
                for family in expected:
                    shapes = []
                    for twin, writer in ((twins.kcm, KCM), (twins.ours, OURS)):
                        written = await kube.slices(NS, twin, manager=writer)
                        shapes.append(
                            slice_shape([s for s in written if s["addressType"] == family])
                        )
                    kcm, ours = shapes
                    assert kcm == ours, family
                for name in (twins.kcm, twins.ours):
                    manager = None if name == twins.kcm else OURS
                    slices = await kube.slices(NS, name, manager=manager)
                    assert _addresses(slices) == expected, (name, _addresses(slices))
                return True

            await eventually(canonical, timeout=60)


async def test_a_non_canonical_ipv6_pod_ip_on_a_default_server(
    plane: ControlPlane, tmp_path: Path
) -> None:
    """v1.36 with its defaults keeps ``fd00:0::1`` in a pod (a warning) and refuses it in a
    slice: kube-controller-manager publishes ``fd00::1`` for a SingleStack IPv6 Service, and so
    does the operator (before: ``endpoints: []``, FailedToUpdateEndpointSlices forever)."""
    async with await Kube.load(plane.kubeconfig) as kube:
        await _namespace_and_node(kube)
        async with running(kube.kubeconfig, tmp_path / "operator.log", "--namespace", NS):
            twins = Twins(kube, NS, "web", {"app": "web"})
            await twins.create(ipFamilyPolicy="SingleStack", ipFamilies=["IPv6"])
            await o.pod(kube, NS, "web-0", "fd00:0::1")
            await twins.agree({"web-0"})
            kcm, ours = await twins.shapes()
            assert kcm["endpoints"]["web-0"][0] == ours["endpoints"]["web-0"][0] == ("fd00::1",)
            assert await kube.events(NS, "FailedToUpdateEndpointSlices") == []


def _legacy_slice(service: JSON, addresses: dict[str, str]) -> JSON:
    """The slice an earlier release of the operator wrote (pod IPs as given)."""
    meta = service["metadata"]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "web-eso-legacy",
            "labels": {
                "kubernetes.io/service-name": meta["name"],
                "endpointslice.kubernetes.io/managed-by": OURS,
            },
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [ip],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": "node-a",
                "targetRef": {"kind": "Pod", "namespace": NS, "name": name},
            }
            for name, ip in addresses.items()
        ],
    }


@pytest.mark.parametrize("plane", [(GATE_OFF,)], indirect=True, ids=["gate-off"])
async def test_strict_validation_ratchet_after_an_upgrade(
    plane: ControlPlane, tmp_path: Path
) -> None:
    """Pods and one of our slices hold legacy addresses, stored with the gate off; the API
    server comes back with the gate on (its default) against the same etcd. Strict validation
    lets a legacy address stay only while a slice's ``.endpoints`` is unchanged, so adding an
    endpoint beside it fails: the operator rewrites such a slice whole, canonical, and no write
    fails."""
    legacy = {"web-0": "10.052.0.3", "web-1": "10.001.0.2"}
    async with await Kube.load(plane.kubeconfig) as kube:
        await _namespace_and_node(kube)
        service = await o.service(
            kube, NS, "web-eso", annotations={o.SELECTOR: "app=web"}, ipFamilies=["IPv4"]
        )
        for name, ip in legacy.items():
            await o.pod(kube, NS, name, ip)
        await kube.create(
            f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices",
            _legacy_slice(service, legacy),
        )
    plane.apiserver_args = tuple(a for a in plane.apiserver_args if a != GATE_OFF)
    plane.restart()
    async with await Kube.load(plane.kubeconfig) as kube:
        stored = await kube.slices(NS, "web-eso")
        assert _addresses(stored) == {"IPv4": {("10.052.0.3",), ("10.001.0.2",)}}
        async with running(kube.kubeconfig, tmp_path / "operator.log", "--namespace", NS):
            await o.pod(kube, NS, "web-2", "10.1.0.3")
            await o.set_ready(kube, NS, "web-1", False, at="2026-01-01T00:01:00Z")
            expected = {"IPv4": {("10.52.0.3",), ("10.1.0.2",), ("10.1.0.3",)}}

            async def rewritten() -> bool:
                slices = await kube.slices(NS, "web-eso")
                assert _addresses(slices) == expected, _addresses(slices)
                return True

            await eventually(rewritten, timeout=60)
        assert await kube.events(NS, "FailedToUpdateEndpointSlices") == []
        assert await kube.events(NS, "FailedToCreateEndpointSlices") == []
