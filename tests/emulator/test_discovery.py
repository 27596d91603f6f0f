"""Discovery documents, as Kopf's scanner and kubectl read them."""

from __future__ import annotations

from pathlib import Path

import yaml

from endpointslice_operator.testing import Emulator, protobuf
from endpointslice_operator.testing.resources import UNSERVED_BY_DEFAULT
from tests.emulator.conftest import Client

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"


async def test_version(client: Client) -> None:
    status, body = await client.get("/version")
    assert status == 200 and body["major"] == "1" and body["gitVersion"].startswith("v1.")


async def test_core_group(client: Client) -> None:
    status, body = await client.get("/api")
    assert status == 200 and body["kind"] == "APIVersions" and body["versions"] == ["v1"]
    status, body = await client.get("/api/v1")
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    resources = {r["name"]: r for r in body["resources"]}
    expected = {
        "pods", "pods/status", "services", "services/status", "nodes", "nodes/status",
        "namespaces", "namespaces/status", "namespaces/finalize", "endpoints", "events",
    }  # fmt: skip
    assert expected <= set(resources)
    assert resources["pods"]["namespaced"] is True
    assert resources["nodes"]["namespaced"] is False
    assert resources["services"]["shortNames"] == ["svc"]
    assert "watch" in resources["pods"]["verbs"]
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]


async def test_named_groups(client: Client) -> None:
    status, body = await client.get("/apis")
    assert status == 200 and body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    assert set(groups) == {
        "discovery.k8s.io",
        "events.k8s.io",
        "coordination.k8s.io",
        "apps",
        "resource.k8s.io",
    }
    assert groups["discovery.k8s.io"]["preferredVersion"]["groupVersion"] == "discovery.k8s.io/v1"
    status, body = await client.get("/apis/discovery.k8s.io/v1")
    assert [r["name"] for r in body["resources"]] == ["endpointslices"]
    assert body["resources"][0]["kind"] == "EndpointSlice"
    status, body = await client.get("/apis/discovery.k8s.io")
    assert status == 200 and body["kind"] == "APIGroup"
    # DRA ResourceClaims (the device-network source), with a status subresource.
    status, body = await client.get("/apis/resource.k8s.io/v1")
    assert [r["name"] for r in body["resources"]] == ["resourceclaims", "resourceclaims/status"]
    status, body = await client.get("/apis/resource.k8s.io")
    assert body["preferredVersion"]["groupVersion"] == "resource.k8s.io/v1"


async def test_unknown_paths_are_not_found(client: Client) -> None:
    # As kube-apiserver answers: unknown resources and core versions with a Status, unknown
    # groups, group versions and paths from its mux in plain text.
    for path in ["/openapi/v3", "/api/v2", "/api/v1/namespaces/default/configmaps"]:
        status, body = await client.get(path)
        assert status == 404, path
        assert body["kind"] == "Status"
    for path in ["/apis/batch/v1", "/apis/nope.example", "/apis/discovery.k8s.io/v1beta1",
                 "/nonsense"]:  # fmt: skip
        status, body = await client.get(path)
        assert (status, body) == (404, "404 page not found\n"), path


async def test_a_group_not_served_yet_is_unknown_until_it_is(emu: Emulator, client: Client) -> None:
    # A cluster before the upgrade that brings resource.k8s.io (or before a CRD-based API is
    # installed): kube-apiserver leaves the group out of discovery and its mux answers its URLs
    # in plain text; served later, it answers as any group.
    emu.store.registry.unserved.add("resource.k8s.io")
    status, body = await client.get("/apis")
    assert "resource.k8s.io" not in {g["name"] for g in body["groups"]}
    status, body = await client.get("/")
    assert not [p for p in body["paths"] if p.startswith("/apis/resource.k8s.io")]
    for path in ["/apis/resource.k8s.io", "/apis/resource.k8s.io/v1",
                 "/apis/resource.k8s.io/v1/resourceclaims",
                 "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"]:  # fmt: skip
        status, body = await client.get(path)
        assert (status, body) == (404, "404 page not found\n"), path
    emu.store.registry.unserved.discard("resource.k8s.io")
    status, body = await client.get("/apis/resource.k8s.io")
    assert status == 200 and body["preferredVersion"]["version"] == "v1"
    status, body = await client.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims")
    assert status == 200 and body["kind"] == "ResourceClaimList"


async def test_health_endpoints(client: Client) -> None:
    for path in ["/healthz", "/livez", "/readyz"]:
        status, body = await client.get(path)
        assert status == 200 and body == "ok"
    status, body = await client.get("/")
    assert "/apis/discovery.k8s.io/v1" in body["paths"]


async def test_openapi_v2_is_an_empty_document(client: Client) -> None:
    # kubectl's client-side validation downloads it (as protobuf) before every apply/create.
    status, body = await client.get("/openapi/v2")
    assert status == 200
    assert body["swagger"] == "2.0" and body["paths"] == {} and body["definitions"] == {}
    async with client.session.get(
        client.base + "/openapi/v2",
        headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
    ) as response:
        raw = await response.read()
    fields = dict(protobuf.fields(raw))
    assert fields[1] == b"2.0"  # swagger
    info = fields[2]
    assert isinstance(info, bytes)
    assert dict(protobuf.fields(info))[1] == b"Kubernetes"  # info.title
    assert fields[8] == b""  # paths


async def test_the_custom_resources_are_the_crds_of_deploy_and_served_once_installed(
    emu: Emulator, client: Client
) -> None:
    # The emulator's stand-ins for installing deploy/crds/ (a test discards the group from
    # registry.unserved): named, scoped and with the subresources of the CRD's storage version.
    crds = {
        doc["spec"]["names"]["plural"]: doc
        for path in sorted(CRD_DIR.glob("*.yaml"))
        for doc in [yaml.safe_load(path.read_text(encoding="utf-8"))]
    }
    registry = emu.store.registry
    custom = [r for r in registry.resources if r.group in UNSERVED_BY_DEFAULT]
    assert {r.plural for r in custom} == {
        "endpointselectors",
        "serviceexports",
        "serviceimports",
        "clusterproperties",
    }
    for info in custom:
        spec = crds[info.plural]["spec"]
        (storage,) = [v for v in spec["versions"] if v["storage"]]
        names = spec["names"]
        assert (info.group, info.version, info.kind, info.singular) == (
            spec["group"],
            storage["name"],
            names["kind"],
            names["singular"],
        )
        assert info.namespaced == (spec["scope"] == "Namespaced")
        assert list(info.short_names) == names.get("shortNames", [])
        assert list(info.categories) == names.get("categories", [])
        assert list(info.subresources) == list(storage.get("subresources") or {})
        # With a status subresource, a create drops the status it is given (the API server's
        # strategy for custom resources).
        assert info.reset_status_on_create == ("status" in info.subresources)
    status, body = await client.get("/apis")
    assert not {r.group for r in custom} & {g["name"] for g in body["groups"]}
    status, body = await client.get("/apis/multicluster.x-k8s.io/v1beta1/serviceimports")
    assert (status, body) == (404, "404 page not found\n")
    registry.unserved.discard("multicluster.x-k8s.io")
    status, body = await client.get("/apis/multicluster.x-k8s.io/v1beta1")
    assert [r["name"] for r in body["resources"]] == [
        "serviceexports",
        "serviceexports/status",
        "serviceimports",
        "serviceimports/status",
    ]
    status, body = await client.get("/apis/multicluster.x-k8s.io/v1beta1/serviceimports")
    assert status == 200 and body["kind"] == "ServiceImportList"
    created = await client.post(
        "/apis/multicluster.x-k8s.io/v1beta1/namespaces/default/serviceimports",
        {
            "apiVersion": "multicluster.x-k8s.io/v1beta1",
            "kind": "ServiceImport",
            "metadata": {"name": "web"},
            "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]},
            "status": {"clusters": [{"cluster": "east"}]},
        },
    )
    assert created[0] == 201 and "status" not in created[1], created
