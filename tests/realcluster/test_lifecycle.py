"""The operator as a process against a real kube-apiserver: opt-in, selection, readiness,
graceful deletion, foreign slices, opt-out, restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.realcluster import objects as o
from tests.realcluster.kube import LABEL_SERVICE_NAME, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster


@pytest.fixture
async def operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    await o.node(kube, "node-a", "zone-a")
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns) as op:
        yield op


async def test_opt_in_by_annotation_publishes_the_pods(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "web-1", "10.1.0.2")

    async def published() -> bool:
        slices = await kube.slices(ns, "web")
        assert o.ready_addresses(slices) == {"10.1.0.1", "10.1.0.2"}, slices
        return True

    await eventually(published)
    (only,) = await kube.slices(ns, "web")
    assert only["metadata"]["labels"][LABEL_SERVICE_NAME] == "web"
    assert only["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert only["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    view = o.endpoint_view([only])
    assert view["web-0"] == (("10.1.0.1",), True, True, False, "node-a", "zone-a", None)
