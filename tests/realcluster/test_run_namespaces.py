"""``run --namespace`` with a namespace that does not exist, on a real control plane: the
operator starts (a namespace created later is served; installs that create namespaces after
the operator keep working) and says, once per namespace, that it does not exist. Where its
RBAC does not allow reading namespaces (the chart's default), it says once that it cannot
check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realcluster import objects as o
from tests.realcluster.chart_rbac import chart_account, published
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster

MISSING = "namespace {} (--namespace) does not exist: nothing is served there until it is created"
CANNOT_CHECK = "cannot check that the namespaces given with --namespace exist"


async def test_a_namespace_that_does_not_exist_is_named_once_and_served_once_created(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    later = f"{ns}-later"
    await o.node(kube, "node-a", "zone-a")
    try:
        async with running(
            kube.kubeconfig, log_dir / "operator.log", "--namespace", ns, "--namespace", later
        ) as operator:

            async def warned() -> list[str]:
                lines = [line for line in operator.log().splitlines() if "(--namespace)" in line]
                assert lines, operator.log()[-3000:]
                return lines

            (line,) = await eventually(warned, timeout=30)
            assert MISSING.format(later) in line and " WARNING " in line, line
            assert CANNOT_CHECK not in operator.log()
            # Created afterwards, it is served without a restart.
            await kube.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": later}},
            )
            await o.service(kube, later, "web", annotations={o.SELECTOR: "app=web"})
            await o.pod(kube, later, "web-0", "10.1.0.1")
            await eventually(lambda: published(kube, later, {"10.1.0.1"}), timeout=60)
            assert len(await warned()) == 1
    finally:
        await kube.delete(f"/api/v1/namespaces/{later}")


async def test_without_the_right_to_read_namespaces_it_says_once_it_cannot_check(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    async with chart_account(cluster, kube, ns) as kubeconfig:
        async with running(
            kubeconfig,
            log_dir / "operator.log",
            "--namespace",
            ns,
            "--namespace",
            f"{ns}-missing",
        ) as operator:

            async def said() -> list[str]:
                lines = [line for line in operator.log().splitlines() if CANNOT_CHECK in line]
                assert lines, operator.log()[-3000:]
                return lines

            (line,) = await eventually(said, timeout=30)
            assert "reading namespaces is not allowed" in line and "is forbidden" in line, line
            assert "(--namespace) does not exist" not in operator.log()
