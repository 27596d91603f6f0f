"""A ServiceImport's ``status.endpointSliceObjects`` (KEP-1645, kubernetes/enhancements PR
#6037) on two real control planes: ``Present`` in both clusters once an export's endpoints are
imported, ``Absent`` when the exporter's pods go or when the export with endpoints is deleted
while another cluster (without endpoints) still exports the Service. The server stores the field
only because the ServiceImport CRD of deploy/crds/ declares it."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    DEADLINE,
    by_source,
    export,
    import_of,
    imported_slices,
    unexport,
)
from tests.realcluster.test_mcs import operators, prepare

pytestmark = pytest.mark.realcluster


async def test_endpoint_slice_objects_follow_the_imported_slices(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await prepare(kube, west, ns)
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await o.service(west, ns, "web", annotations={o.SELECTOR: "app=web"})  # no pods in west
    await export(kube, ns, "web")
    await export(west, ns, "web")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:

        async def state(client: Kube, clusters: list[str], presence: str, ips: set[str]) -> bool:
            body = await import_of(client, ns)
            status = body.get("status") or {}
            assert [c["cluster"] for c in status.get("clusters") or []] == clusters, status
            assert status.get("endpointSliceObjects") == presence, status
            found = by_source(await imported_slices(client, ns, "web"))
            assert found == ({"east": ips} if ips else {}), found
            return True

        async def everywhere(clusters: list[str], presence: str, ips: set[str]) -> None:
            for client in (kube, west):
                await eventually(partial(state, client, clusters, presence, ips), timeout=DEADLINE)

        try:
            await everywhere(["east", "west"], "Present", {"10.1.0.1"})
            # The exporter's only pod goes: no imported slice is left, the import stays.
            await kube.delete(
                f"/api/v1/namespaces/{ns}/pods/web-0",
                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            )
            await everywhere(["east", "west"], "Absent", set())
            await o.pod(kube, ns, "web-1", "10.1.0.2", labels={"app": "web"})
            await everywhere(["east", "west"], "Present", {"10.1.0.2"})
            # The export with endpoints is deleted: west (no endpoints) still exports.
            await unexport(kube, ns, "web")
            await everywhere(["west"], "Absent", set())
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")
