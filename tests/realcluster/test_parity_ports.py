"""The order of a slice's ports, and of an Endpoints subset's, byte for byte with
kube-controller-manager v1.36 (issue 34, item 1).

Since Kubernetes 1.35 upstream sorts the ports by the FNV-1a 128 hash of each port's Go dump;
v1.34 and older used MD5, so v1.24's kube-controller-manager writes another order (for the
Service below, slices ``p5 p4 p2 p9 p3 p7 p1`` and Endpoints ``p9 p7 p1 p3 p5 p2 p4``). The
operator writes v1.36's order, the server of record: these tests are deselected below 1.35.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import JSON, KCM, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.parity import Twins

pytestmark = [pytest.mark.realcluster, pytest.mark.k8s_min("1.35")]

SPEC_ORDER = (3, 1, 7, 2, 9, 5, 4)
SLICE_ORDER = ["p1", "p5", "p2", "p7", "p4", "p3", "p9"]
ENDPOINTS_ORDER = ["p3", "p1", "p9", "p5", "p4", "p2", "p7"]
PORTS = [
    {"name": f"p{i}", "port": 8000 + i, "targetPort": 9000 + i, "protocol": "TCP"}
    for i in SPEC_ORDER
]


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


@pytest.fixture
async def writing_operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    await o.node(kube, "node-a", "zone-a")
    async with running(
        kube.kubeconfig, log_dir / "operator.log", "--namespace", ns, "--write-endpoints"
    ) as op:
        yield op


def _slice_port_names(slices: list[JSON]) -> list[list[str]]:
    return [[p.get("name", "") for p in s.get("ports") or []] for s in slices]


async def test_slice_ports_are_in_kube_controller_manager_order(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(ports=PORTS)
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await twins.agree({"web-0"})

    async def ordered() -> bool:
        kcm = await kube.slices(ns, twins.kcm, manager=KCM)
        ours = await kube.slices(ns, twins.ours, manager=OURS)
        assert _slice_port_names(kcm) == [SLICE_ORDER], _slice_port_names(kcm)
        assert _slice_port_names(ours) == [SLICE_ORDER], _slice_port_names(ours)
        return True

    await eventually(ordered)
    # an update (a second pod) keeps the order: the existing slice is rewritten in it
    await o.pod(kube, ns, "web-1", "10.1.0.2")
    await twins.agree({"web-0", "web-1"})
    await eventually(ordered)


async def test_endpoints_ports_are_in_kube_controller_manager_order(
    kube: Kube, ns: str, writing_operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(ports=PORTS)
    await o.pod(kube, ns, "web-0", "10.1.0.1")

    async def ordered() -> bool:
        for name in (twins.kcm, twins.ours):
            body = await kube.get(f"/api/v1/namespaces/{ns}/endpoints/{name}")
            names = [[p["name"] for p in s.get("ports") or []] for s in body.get("subsets") or []]
            assert names == [ENDPOINTS_ORDER], (name, names)
        return True

    await eventually(ordered)
