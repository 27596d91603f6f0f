"""The MCS CRDs of deploy/crds/ on a real API server: accepted, both versions served with one
schema, status subresources, validation, and the protected-group approval annotation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from endpointslice_operator.testing import run_emulator
from tests.realcluster.kube import ApiFailure, Kube
from tests.realcluster.mcs_crds import CRDS, crd_manifests, install_crds

pytestmark = pytest.mark.realcluster

MCS = "/apis/multicluster.x-k8s.io"


async def test_service_export_both_versions_and_status(kube: Kube, ns: str) -> None:
    await install_crds(kube)
    export = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"exportedLabels": {"team": "a"}, "exportedAnnotations": {"note": "x"}},
    }
    created = await kube.create(f"{MCS}/v1beta1/namespaces/{ns}/serviceexports", export)
    assert created["spec"] == export["spec"]
    alpha = await kube.get(f"{MCS}/v1alpha1/namespaces/{ns}/serviceexports/web")
    assert alpha["apiVersion"] == "multicluster.x-k8s.io/v1alpha1"
    assert alpha["spec"] == export["spec"]
    condition = {
        "type": "Conflict",
        "status": "True",
        "reason": "PortConflict,TypeConflict",
        "message": "ports differ",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    patched = await kube.request(
        "PATCH",
        f"{MCS}/v1beta1/namespaces/{ns}/serviceexports/web/status",
        {"status": {"conditions": [condition]}},
        content_type="application/merge-patch+json",
    )
    assert patched["status"]["conditions"] == [condition]
    # A status written through the main resource is dropped (status is a subresource).
    again = await kube.patch(
        f"{MCS}/v1beta1/namespaces/{ns}/serviceexports/web", {"status": {"conditions": []}}
    )
    assert again["status"]["conditions"] == [condition]
    bad = copy.deepcopy(condition) | {"reason": "not a reason!"}
    status, body = await kube.status_of(
        "PUT",
        f"{MCS}/v1beta1/namespaces/{ns}/serviceexports/web/status",
        {**again, "status": {"conditions": [bad]}},
    )
    assert status == 422, body


async def test_service_import_schema(kube: Kube, ns: str) -> None:
    await install_crds(kube)
    body: dict[str, Any] = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "type": "ClusterSetIP",
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "appProtocol": "http"}],
            "ips": ["10.96.0.10", "fd00::10"],
            "ipFamilies": ["IPv4", "IPv6"],
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 30}},
            "internalTrafficPolicy": "Cluster",
            "trafficDistribution": "PreferClose",
        },
    }
    created = await kube.create(f"{MCS}/v1beta1/namespaces/{ns}/serviceimports", body)
    assert created["spec"] == body["spec"]
    status = {"clusters": [{"cluster": "east"}, {"cluster": "west"}]}
    written = await kube.request(
        "PATCH",
        f"{MCS}/v1beta1/namespaces/{ns}/serviceimports/web/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )
    assert written["status"] == status
    alpha = await kube.get(f"{MCS}/v1alpha1/namespaces/{ns}/serviceimports/web")
    assert alpha["spec"] == body["spec"] and alpha["status"] == status
    for spec in (
        {**body["spec"], "type": "LoadBalancer"},
        {**body["spec"], "ips": ["10.0.0.1", "10.0.0.2", "10.0.0.3"]},
        {key: value for key, value in body["spec"].items() if key != "ports"},
        {**body["spec"], "ports": [{"name": "http"}]},
    ):
        refused, answer = await kube.status_of(
            "POST",
            f"{MCS}/v1beta1/namespaces/{ns}/serviceimports",
            {**body, "metadata": {"name": "bad", "namespace": ns}, "spec": spec},
        )
        assert refused == 422, answer


async def test_cluster_property_needs_its_approval_annotation(kube: Kube) -> None:
    await install_crds(kube)
    path = "/apis/about.k8s.io/v1beta1/clusterproperties"
    prop = {
        "apiVersion": "about.k8s.io/v1beta1",
        "kind": "ClusterProperty",
        "metadata": {"name": "cluster.clusterset.k8s.io"},
        "spec": {"value": "east"},
    }
    status, body = await kube.status_of("POST", path, prop)
    assert status in (200, 409), body
    read = await kube.get("/apis/about.k8s.io/v1alpha1/clusterproperties/cluster.clusterset.k8s.io")
    assert read["spec"]["value"]
    status, body = await kube.status_of(
        "POST", path, {**prop, "metadata": {"name": "empty.example"}, "spec": {"value": ""}}
    )
    assert status == 422, body
    # The same CRD under another name of the protected group, without the annotation: refused.
    (ours,) = [c for c in crd_manifests() if c["spec"]["group"] == "about.k8s.io"]
    unapproved = copy.deepcopy(ours)
    del unapproved["metadata"]["annotations"]
    unapproved["metadata"]["name"] = "unapprovedprops.about.k8s.io"
    unapproved["spec"]["names"] = {
        "kind": "UnapprovedProp",
        "plural": "unapprovedprops",
        "singular": "unapprovedprop",
        "listKind": "UnapprovedPropList",
    }
    status, body = await kube.status_of("POST", CRDS, unapproved)
    assert status == 422, body
    assert "api-approved.kubernetes.io" in str(body)


async def test_a_create_drops_the_status_as_the_emulator_does(kube: Kube, ns: str) -> None:
    # A custom resource with a status subresource: the status given to a create is dropped
    # (the key is gone, not emptied); the emulator's model of it is held to the real server.
    await install_crds(kube)
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]},
        "status": {"clusters": [{"cluster": "east"}]},
    }
    real = await kube.create(f"{MCS}/v1beta1/namespaces/{ns}/serviceimports", body)
    async with run_emulator(seed=4) as emu, await Kube.load(emu.kubeconfig_path) as local:
        emu.store.registry.unserved.discard("multicluster.x-k8s.io")
        emu.store.create_namespace(ns)
        model = await local.create(f"{MCS}/v1beta1/namespaces/{ns}/serviceimports", body)
    assert "status" not in real, real
    assert "status" not in model, model


async def test_kubectl_columns_show_conditions_and_the_primary_ip(kube: Kube, ns: str) -> None:
    # `kubectl get serviceexports` shows Valid/Ready/Conflict; `kubectl get serviceimports`
    # one IP, not a JSON array. The emulator renders the same (tests/emulator/test_tables.py).
    await install_crds(kube)
    await kube.create(
        f"{MCS}/v1beta1/namespaces/{ns}/serviceexports",
        {
            "apiVersion": "multicluster.x-k8s.io/v1beta1",
            "kind": "ServiceExport",
            "metadata": {"name": "web", "namespace": ns},
        },
    )
    conditions = [
        {"type": kind, "status": status, "reason": reason, "message": "m"}
        | {"lastTransitionTime": "2026-01-01T00:00:00Z"}
        for kind, status, reason in (("Valid", "True", "Valid"), ("Ready", "False", "Pending"))
    ]
    await kube.request(
        "PATCH",
        f"{MCS}/v1beta1/namespaces/{ns}/serviceexports/web/status",
        {"status": {"conditions": conditions}},
        content_type="application/merge-patch+json",
    )
    await kube.create(
        f"{MCS}/v1beta1/namespaces/{ns}/serviceimports",
        {
            "apiVersion": "multicluster.x-k8s.io/v1beta1",
            "kind": "ServiceImport",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "type": "ClusterSetIP",
                "ips": ["10.96.0.10", "fd00::10"],
                "ports": [{"port": 80, "protocol": "TCP"}],
            },
        },
    )
    for plural, columns, cells in (
        ("serviceexports", ["Name", "Valid", "Ready", "Conflict", "Age"], ["True", "False", None]),
        ("serviceimports", ["Name", "Type", "IP", "Age"], ["ClusterSetIP", "10.96.0.10"]),
    ):
        table = await kube.request(
            "GET",
            f"{MCS}/v1beta1/namespaces/{ns}/{plural}",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        assert [c["name"] for c in table["columnDefinitions"]] == columns
        (row,) = table["rows"]
        assert row["cells"][1:-1] == cells


async def test_service_import_endpoint_slice_objects(kube: Kube, ns: str) -> None:
    """``status.endpointSliceObjects`` (KEP-1645 after kubernetes/enhancements PR #6037, not in
    mcs-api v0.5.0): kept by the server in both versions, ``Present`` or ``Absent`` only."""
    await install_crds(kube)
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"type": "Headless", "ports": [{"port": 80, "protocol": "TCP"}]},
    }
    await kube.create(f"{MCS}/v1beta1/namespaces/{ns}/serviceimports", body)
    path = f"{MCS}/v1beta1/namespaces/{ns}/serviceimports/web/status"
    for value in ("Present", "Absent"):
        status = {"clusters": [{"cluster": "east"}], "endpointSliceObjects": value}
        written = await kube.request(
            "PATCH", path, {"status": status}, content_type="application/merge-patch+json"
        )
        assert written["status"] == status
        alpha = await kube.get(f"{MCS}/v1alpha1/namespaces/{ns}/serviceimports/web")
        assert alpha["status"] == status
    with pytest.raises(ApiFailure) as refused:
        await kube.request(
            "PATCH",
            path,
            {"status": {"endpointSliceObjects": "Partly"}},
            content_type="application/merge-patch+json",
        )
    assert refused.value.status == 422, refused.value.body
