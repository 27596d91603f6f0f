"""The six EndpointSlice controller metrics that are BETA in Kubernetes 1.36, as the operator
exposes them and as kube-controller-manager v1.36 does on its own ``/metrics``: the same
names, types, help texts (stability prefix included), histogram buckets and label names; the
gauges' values too, each controller counting its own twin Service (issue 34)."""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from endpointslice_operator.testing.controlplane import ControlPlane, free_port
from tests.realcluster import objects as o
from tests.realcluster.conftest import assets_dir
from tests.realcluster.kube import KCM, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.parity import Twins

pytestmark = [pytest.mark.realcluster, pytest.mark.k8s_min("1.35")]

BETA = (
    "endpoint_slice_controller_endpoints_added_per_sync",
    "endpoint_slice_controller_endpoints_removed_per_sync",
    "endpoint_slice_controller_endpoints_desired",
    "endpoint_slice_controller_num_endpoint_slices",
    "endpoint_slice_controller_desired_endpoint_slices",
    "endpoint_slice_controller_services_count_by_traffic_distribution",
)
NS = "metrics"


@pytest.fixture
def metrics_plane() -> Iterator[tuple[ControlPlane, int]]:
    """A control plane whose kube-controller-manager serves ``/metrics`` on a port of its
    own (HTTPS, self-signed, the path open to anyone)."""
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test starts a control plane with its flags")
    port = free_port()
    control = ControlPlane(
        assets=assets,
        workdir=Path(tempfile.mkdtemp(prefix="eso-metrics-")),
        kcm_args=(f"--secure-port={port}", "--authorization-always-allow-paths=/metrics"),
    )
    try:
        control.start()
        if not control.kcm_running:
            pytest.skip("needs kube-controller-manager")
        yield control, port
    finally:
        control.stop()


@pytest.fixture
async def kube(metrics_plane: tuple[ControlPlane, int]) -> AsyncIterator[Kube]:
    async with await Kube.load(metrics_plane[0].kubeconfig) as client:
        yield client


async def kcm_metrics(port: int) -> str:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # kube-controller-manager's self-signed certificate
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}/metrics", ssl=context) as response,
    ):
        assert response.status == 200
        return await response.text()


def shape(text: str) -> dict[str, Any]:
    """name -> (type, help, bucket bounds, label names, gauge values)."""
    found: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        if family.name not in BETA:
            continue
        buckets = sorted(
            {float(s.labels["le"]) for s in family.samples if s.name.endswith("_bucket")}
        )
        labels = sorted({k for s in family.samples for k in s.labels if k != "le"})
        values = (
            sorted((tuple(sorted(s.labels.items())), s.value) for s in family.samples)
            if family.type == "gauge"
            else None
        )
        found[family.name] = (family.type, family.documentation, buckets, labels, values)
    return found


async def test_beta_metrics_as_kube_controller_manager_exposes_them(
    metrics_plane: tuple[ControlPlane, int], kube: Kube, tmp_path: Path
) -> None:
    _, port = metrics_plane
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    )
    await o.node(kube, "node-a", "zone-a")
    async with running(kube.kubeconfig, tmp_path / "operator.log", "--namespace", NS) as op:
        twins = Twins(kube, NS, "web", {"app": "web"})
        await twins.create(trafficDistribution="PreferClose")
        for i in range(3):
            await o.pod(kube, NS, f"web-{i}", f"10.1.0.{i + 1}")
        await twins.agree({"web-0", "web-1", "web-2"})

        async def same() -> bool:
            ours = shape(await _text(op))
            theirs = shape(await kcm_metrics(port))
            assert sorted(theirs) == sorted(BETA), sorted(theirs)
            assert ours == theirs
            return True

        await eventually(same, timeout=60)
        assert await kube.slices(NS, twins.kcm, manager=KCM)
        assert await kube.slices(NS, twins.ours, manager=OURS)


async def _text(op: OperatorProcess) -> str:
    status, text = await op.get("/metrics")
    assert status == 200
    return str(text)
