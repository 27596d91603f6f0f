"""A real kube-apiserver that comes back with its state reset (etcd wiped, restarted on the same
port): the operator, running as a process, notices, lists again and converges.

Measured on v1.24: the operator's watches, resumed at the old resourceVersion, are accepted and
stay silent, so only the operator's resourceVersion probe (``controller/reset.py``) can tell.
This test starts a control plane of its own (the shared one must not be wiped)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import assets_dir
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster

NS = "reset"


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test wipes a control plane of its own")
    # No kube-controller-manager: nothing here needs it, and it would race the wipe.
    control_plane = ControlPlane(
        assets=assets, workdir=Path(tempfile.mkdtemp(prefix="eso-reset-")), with_kcm=False
    )
    with control_plane:
        yield control_plane


async def populate(kube: Kube, pods: dict[str, str], services: list[str]) -> None:
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    )
    await o.node(kube, "node-a", "zone-a")
    for name in services:
        await o.service(kube, NS, name, annotations={o.SELECTOR: f"app={name}"})
    for name, ip in pods.items():
        await o.pod(kube, NS, name, ip, labels={"app": name.rsplit("-", 1)[0]})


async def test_operator_converges_after_the_api_server_state_is_reset(
    plane: ControlPlane, log_dir: Path
) -> None:
    async with await Kube.load(plane.kubeconfig) as kube:
        await populate(kube, {"web-0": "10.1.0.1", "old-0": "10.1.9.1"}, ["web", "old"])
        for flip in range(30):  # move the resourceVersion past what the new store will reach
            await o.set_ready(kube, NS, "web-0", flip % 2 == 0)
    async with running(plane.kubeconfig, log_dir / "operator.log") as operator:
        async with await Kube.load(plane.kubeconfig) as kube:

            async def first() -> bool:
                assert o.addresses(await kube.slices(NS, "web")) == {"10.1.0.1"}
                return True

            await eventually(first, timeout=60)
            old_uid = (await kube.get(f"/api/v1/namespaces/{NS}/services/web"))["metadata"]["uid"]

        plane.restart(wipe=True)
        async with await Kube.load(plane.kubeconfig) as kube:
            await populate(kube, {"web-5": "10.2.0.5"}, ["web"])
            new_uid = (await kube.get(f"/api/v1/namespaces/{NS}/services/web"))["metadata"]["uid"]
            assert new_uid != old_uid

            async def converged() -> bool:
                slices = await kube.slices(NS, "web")
                assert o.addresses(slices) == {"10.2.0.5"}, slices
                assert {s["metadata"]["ownerReferences"][0]["uid"] for s in slices} == {new_uid}
                return True

            await eventually(converged, timeout=90)
            assert await operator.metric("endpointslice_operator_state_resets_total") == 1
            assert await kube.slices(NS, "old") == []
            assert (await operator.get("/readyz"))[0] == 200
            assert "state was reset" in operator.log()

            await o.pod(kube, NS, "web-6", "10.2.0.6")

            async def follows() -> bool:
                assert o.addresses(await kube.slices(NS, "web")) == {"10.2.0.5", "10.2.0.6"}
                return True

            await eventually(follows, timeout=60)
