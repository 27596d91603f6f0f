"""The ServiceExport CRD deleted and applied again while the operator runs ``--multicluster``
on a real control plane: the import of the export that went with it is removed, and once the
CRD is back a new export is imported again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import MCS, cluster_id, conditions, export
from tests.realcluster.mcs_crds import CRDS, crd_manifests, install_crds
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster

SERVED = (
    r'endpointslice_operator_api_served\{group="multicluster.x-k8s.io",'
    r'resource="serviceexports"\}'
)


async def test_the_service_export_crd_deleted_and_applied_again_is_served_again(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    await install_crds(kube)
    await cluster_id(kube, "east")
    (crd,) = [c for c in crd_manifests() if c["spec"]["names"]["plural"] == "serviceexports"]
    crd_path = f"{CRDS}/{crd['metadata']['name']}"
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
    async with running(kube.kubeconfig, log_dir / "operator.log", *args) as op:

        async def ready() -> bool:
            body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
            assert conditions(body).get("Ready") == ("True", "Ready"), body
            status, answer = await kube.status_of(
                "GET", f"{MCS}/namespaces/{ns}/serviceimports/web"
            )
            assert status == 200, answer
            return True

        await eventually(ready, timeout=90)
        assert await op.metric(SERVED) == 1
        status, answer = await kube.status_of("DELETE", crd_path)
        assert status == 200, answer

        async def unimported() -> bool:
            status, answer = await kube.status_of(
                "GET", f"{MCS}/namespaces/{ns}/serviceimports/web"
            )
            assert status == 404, answer
            assert await op.metric(SERVED) == 0
            return True

        await eventually(unimported, timeout=90)
        status, answer = await kube.status_of("POST", CRDS, crd)
        assert status in (200, 201), answer

        async def exported_again() -> bool:
            try:
                await export(kube, ns, "web")
            except json.JSONDecodeError as exc:  # "404 page not found": not served yet
                raise AssertionError("not served yet") from exc
            return True

        await eventually(exported_again, timeout=90)
        await eventually(ready, timeout=90)
        assert await op.metric(SERVED) == 1
    log = (log_dir / "operator.log").read_text(encoding="utf-8")
    assert log.count("ServiceExports and ServiceImports no longer served") == 1, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
