"""A namespace being deleted: the real server keeps it ``Terminating`` while the namespace
controller empties it and refuses creates inside with 403, cause ``NamespaceTerminating``. The
operator must not loop on errors or flood Warnings meanwhile.

A finalizer of the test's own holds the Service (the operator never writes finalizers), so that
the operator keeps wanting slices for it while the namespace controller deletes them.

Since v1.33 (``OrderedNamespaceDeletion``) the namespace controller deletes the pods first and
waits until they are gone before it deletes anything else; with no kubelet to finish a graceful
deletion, the test confirms the pod's deletion itself (``gracePeriodSeconds: 0``), as a kubelet
would. On v1.24 the order is not kept, and the same steps hold."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster

HOLD = "test.endpointslice-operator.io/hold"
FORCE = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
WINDOW = 15.0
"""Seconds watched while the namespace is Terminating: several of the 1 s..16 s retries."""


async def test_a_terminating_namespace_causes_no_error_loop_and_no_warning_storm(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager's namespace controller")
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await kube.patch(f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"finalizers": [HOLD]}})
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns) as operator:

        async def published() -> bool:
            assert o.addresses(await kube.slices(ns, "web")) == {"10.1.0.1"}
            return True

        await eventually(published, timeout=60)
        await kube.delete(f"/api/v1/namespaces/{ns}")
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-0", FORCE)

        async def emptied() -> bool:
            namespace = await kube.get(f"/api/v1/namespaces/{ns}")
            assert namespace["status"]["phase"] == "Terminating"
            assert await kube.slices(ns, "web") == []
            return True

        await eventually(emptied, timeout=60)
        status, body = await kube.status_of(
            "POST",
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"generateName": "probe-"},
                "addressType": "IPv4",
                "endpoints": [],
            },
        )
        assert status == 403
        assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating"

        errors_before = await operator.metric(r'endpoint_slice_controller_syncs\{result="error"\}')
        syncs_before = await operator.metric(r"endpoint_slice_controller_syncs\{.*\}")
        lines_before = len(operator.log().splitlines())
        # The Service changes while the namespace is Terminating: the operator syncs it and
        # wants its placeholder slice, which the server refuses (403 NamespaceTerminating).
        await kube.patch(
            f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"labels": {"touched": "1"}}}
        )
        await asyncio.sleep(WINDOW)  # observing that nothing happens needs a window
        errors = await operator.metric(r'endpoint_slice_controller_syncs\{result="error"\}')
        assert await operator.metric(r"endpoint_slice_controller_syncs\{.*\}") > syncs_before
        new_lines = operator.log().splitlines()[lines_before:]
        assert errors - errors_before == 0, new_lines
        assert [line for line in new_lines if "WARNING" in line or "ERROR" in line] == []
        assert await operator.metric("endpointslice_operator_queue_dropped_total") == 0
        warnings = [e for e in await kube.events(ns) if e.get("type") == "Warning"]
        assert warnings == []
        assert await kube.slices(ns, "web") == []

    # Let the namespace go: release the Service.
    await kube.patch(f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"finalizers": None}})
