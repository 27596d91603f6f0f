"""The view of ServiceImports (Multi-Cluster Services): the imported slices of an import, each
endpoint with its source cluster; the Service path's view is unchanged (pure)."""

from __future__ import annotations

from endpointslice_operator.testing import run_emulator
from endpointslice_operator.view import (
    Change,
    Endpoint,
    EndpointKey,
    EndpointView,
    ServiceFilter,
    open_api_client,
    snapshot,
)
from tests.view.objects import JSON, NS, OURS, endpoint, endpoint_slice, service
from tests.view.test_endpoints_cli import run_cli

MCS_NAME = "multicluster.kubernetes.io/service-name"
SOURCE = "multicluster.kubernetes.io/source-cluster"


def service_import(name: str, ports: list[tuple[str, int]]) -> JSON:
    return {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "type": "ClusterSetIP",
            "ports": [{"name": n, "port": p, "protocol": "TCP"} for n, p in ports],
        },
    }


def imported(name: str, cluster: str, addresses: list[str], derived: str = "derived-x") -> JSON:
    body = endpoint_slice(
        name, derived, [endpoint(a) for a in addresses], ports=[("http", 8080)], managed_by=OURS
    )
    body["metadata"]["labels"][MCS_NAME] = "web"
    body["metadata"]["labels"][SOURCE] = cluster
    return body


def clusters(changes: list[Change]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for change in changes:
        assert isinstance(change.key, EndpointKey) and isinstance(change.endpoint, Endpoint)
        found[change.key.address] = change.endpoint.cluster
    return found


def test_an_import_shows_the_endpoints_of_every_source_cluster_with_the_cluster() -> None:
    view = EndpointView(
        service_filter=ServiceFilter(services=frozenset({"web"})), service_imports=True
    )
    view.apply_service(service_import("web", [("http", 80)]))
    changes = view.apply_slice(imported("web-east-1", "east", ["10.1.0.1", "10.1.0.2"]))
    changes += view.apply_slice(imported("web-west-1", "west", ["10.2.0.1"]))
    assert clusters(changes) == {"10.1.0.1": "east", "10.1.0.2": "east", "10.2.0.1": "west"}
    assert {key.port for key in view.current} == {80}  # the import's port
    assert {e.target_port for e in view.current.values()} == {8080}
    shown = view.current[EndpointKey(NS, "web", "http", 80, "TCP", "10.2.0.1")]
    assert shown.to_json()["cluster"] == "west"
    # One source cluster's slice goes: only its endpoints leave.
    gone = view.delete_slice(NS, "web-east-1")
    assert {(c.type, c.key.address) for c in gone if isinstance(c.key, EndpointKey)} == {
        ("removed", "10.1.0.1"),
        ("removed", "10.1.0.2"),
    }
    assert set(clusters(view.snapshot())) == {"10.2.0.1"}


def test_the_service_view_shows_the_cluster_of_a_derived_services_slices_only() -> None:
    view = EndpointView(service_filter=ServiceFilter(services=frozenset({"web", "derived-x"})))
    view.apply_service(service("web"))
    view.apply_service(service("derived-x"))
    own = endpoint_slice("web-1", "web", [endpoint("10.0.0.1")], ports=[("http", 8080)])
    changes = view.apply_slice(own)
    assert clusters(changes) == {"10.0.0.1": None}
    assert isinstance(changes[0].endpoint, Endpoint)
    assert "cluster" not in changes[0].endpoint.to_json()  # unchanged for a cluster's own
    # kube-proxy sees an imported slice as one of the derived Service (kubernetes.io/service-name).
    changes = view.apply_slice(imported("web-east-1", "east", ["10.1.0.1"]))
    assert {c.key.service for c in changes if isinstance(c.key, EndpointKey)} == {"derived-x"}
    assert clusters(changes) == {"10.1.0.1": "east"}


def test_the_models_mcs_labels_are_the_reconcilers() -> None:
    from endpointslice_operator.reconciler import mcs
    from endpointslice_operator.view import model

    assert (
        (model.LABEL_MCS_SERVICE_NAME, model.LABEL_SOURCE_CLUSTER)
        == (
            mcs.LABEL_MCS_SERVICE_NAME,
            mcs.LABEL_SOURCE_CLUSTER,
        )
        == (MCS_NAME, SOURCE)
    )


async def test_the_command_refuses_mixing_and_says_when_imports_are_not_served() -> None:
    code, out, err = await run_cli("--service-import", "web", "--service", "web")
    assert (code, out) == (2, "")
    assert err == (
        "endpointslice-operator endpoints: --service-import cannot be combined with "
        "--service/--selector/--endpoint-selector\n"
    )
    async with run_emulator() as emu:  # it serves no ServiceImports
        code, out, err = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "--service-import", "web"
        )
    assert (code, out) == (1, "")
    assert err.startswith("endpointslice-operator endpoints: the API server refused to list ")
    assert "serviceimports" in err and err.count("\n") == 1


async def test_the_view_of_an_import_over_http() -> None:
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.registry.unserved.discard("multicluster.x-k8s.io")  # the CRDs installed
        emu.store.create(service_import("web", [("http", 80)]))
        emu.store.create(service_import("other", [("http", 80)]))
        emu.store.create(imported("web-east-1", "east", ["10.1.0.1"]))
        emu.store.create(imported("web-west-1", "west", ["10.2.0.1", "10.2.0.2"]))
        async with await open_api_client(emu.kubeconfig_path) as api:
            found = await snapshot(api, service_imports="web", namespace=NS)
        assert clusters(found) == {"10.1.0.1": "east", "10.2.0.1": "west", "10.2.0.2": "west"}
        assert {(c.key.service, c.key.port) for c in found if isinstance(c.key, EndpointKey)} == {
            ("web", 80)
        }
        assert emu.requests.count(verb="list", resource="serviceimports") == 1
