"""Server-side printing for ``kubectl get``: meta.k8s.io Tables with the upstream columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.tables import human_duration, wants_table
from tests.emulator.conftest import SLICES, endpoint_slice

pytestmark = pytest.mark.looptime  # latencies, drops and watch timeouts on virtual time

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def test_accept_negotiation() -> None:
    assert wants_table(KUBECTL_ACCEPT) == "meta.k8s.io/v1"
    assert wants_table("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == "meta.k8s.io/v1beta1"
    assert wants_table("application/json") is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (-5, "<invalid>"), (119, "119s"), (125, "2m5s"), (600, "10m"),
     (3 * 3600 + 60, "3h1m"), (20 * 3600, "20h"), (50 * 3600, "2d2h"), (30 * 86400, "30d"),
     (800 * 86400, "2y70d")],
)  # fmt: skip
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


async def get_table(emu: Emulator, path: str, **params: str) -> Any:

    async with (
        aiohttp.ClientSession() as session,
        session.get(emu.url + path, params=params, headers={"Accept": KUBECTL_ACCEPT}) as response,
    ):
        assert response.status == 200
        return await response.json()


async def test_endpoint_slice_table(emu: Emulator) -> None:
    addresses = [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 5)]
    emu.store.create(endpoint_slice("web-abc", endpoints=addresses))
    table = await get_table(emu, SLICES)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    [row] = table["rows"]
    assert row["cells"][:4] == ["web-abc", "IPv4", "80", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["name"] == "web-abc"
    assert table["metadata"]["resourceVersion"] == str(emu.store.resource_version)


async def test_single_object_tables_and_node_columns(emu: Emulator) -> None:
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {"unschedulable": True},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.32.1"},
            },
        }
    )
    table = await get_table(emu, "/api/v1/nodes/n1", includeObject="Object")
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Status",
        "Roles",
        "Age",
        "Version",
    ]
    [row] = table["rows"]
    assert row["cells"][:3] == ["n1", "Ready,SchedulingDisabled", "worker"]
    assert row["cells"][4] == "v1.32.1"
    assert row["object"]["kind"] == "Node"


async def test_service_and_pod_cells(emu: Emulator) -> None:
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]},
        }
    )
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]},
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "a", "ready": True, "restartCount": 2}],
            },
        }
    )
    service = await get_table(emu, "/api/v1/namespaces/default/services")
    cells = service["rows"][0]["cells"]
    assert cells[1] == "NodePort" and cells[3:5] == ["<none>", "80:30080/TCP"]
    pods = await get_table(emu, "/api/v1/namespaces/default/pods", includeObject="None")
    assert pods["rows"][0]["cells"][:4] == ["p", "1/2", "Running", 2]
    assert "object" not in pods["rows"][0]


async def test_watch_events_are_one_row_tables(emu: Emulator) -> None:

    emu.store.create(endpoint_slice("web"))
    params = {"watch": "1", "timeoutSeconds": "1"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            emu.url + SLICES, params=params, headers={"Accept": KUBECTL_ACCEPT}
        ) as response,
    ):
        lines = (await response.read()).splitlines()
    event = json.loads(lines[0])
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "Table"
    assert event["object"]["rows"][0]["cells"][0] == "web"


async def test_endpoint_selector_columns_are_those_of_its_crd(emu: Emulator) -> None:
    emu.store.registry.unserved.discard("endpointslice-operator.io")  # the CRD installed
    selector = {"matchLabels": {"app": "web"}}
    body = {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": selector},
    }
    emu.store.create(body)
    emu.store.create({**body, "metadata": {"name": "new", "namespace": "default"}})
    current = emu.store.get("endpointselectors", "default", "web")
    assert current is not None
    current["status"] = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "Accepted"}],
        "endpoints": 3,
        "readyEndpoints": 2,
    }
    emu.store.update(current, subresource="status")
    table = await get_table(
        emu, "/apis/endpointslice-operator.io/v1alpha1/namespaces/default/endpointselectors"
    )
    columns = table["columnDefinitions"]
    assert [c["name"] for c in columns] == [
        "Name",
        "Ready",
        "Reason",
        "Endpoints",
        "Ready-Endpoints",
        "Selector",
        "Age",
    ]
    assert [c["priority"] for c in columns] == [0, 0, 0, 0, 0, 1, 0]  # -o wide adds Selector
    rows = {row["cells"][0]: row["cells"][1:6] for row in table["rows"]}
    assert rows == {
        "web": ["True", "Accepted", 3, 2, '{"matchLabels":{"app":"web"}}'],
        "new": [None, None, None, None, '{"matchLabels":{"app":"web"}}'],  # no status yet
    }


def _crd_columns(plural: str) -> list[tuple[str, str]]:
    """(name, description) of the printer columns of deploy/crds/<plural>...yaml, Age aside."""
    (path,) = CRDS.glob(f"{plural}.*.yaml")
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    (served,) = [v for v in crd["spec"]["versions"] if v["storage"]]
    return [
        (column["name"], column.get("description", ""))
        for column in served["additionalPrinterColumns"]
        if column["name"] != "Age"
    ]


async def test_multicluster_columns_are_those_of_their_crds(emu: Emulator) -> None:
    emu.store.registry.unserved.discard("multicluster.x-k8s.io")  # the CRDs installed
    base = "/apis/multicluster.x-k8s.io/v1beta1/namespaces/default"
    export = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "default"},
    }
    emu.store.create(export)
    emu.store.create({**export, "metadata": {"name": "new", "namespace": "default"}})
    current = emu.store.get("serviceexports", "default", "web")
    assert current is not None
    current["status"] = {
        "conditions": [
            {"type": "Valid", "status": "True", "reason": "Valid"},
            {"type": "Ready", "status": "False", "reason": "Pending"},
        ]
    }
    emu.store.update(current, subresource="status")
    imported = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"type": "ClusterSetIP", "ips": ["10.96.0.10", "fd00::10"], "ports": []},
    }
    emu.store.create(imported)
    emu.store.create(
        {
            **imported,
            "metadata": {"name": "headless", "namespace": "default"},
            "spec": {"type": "Headless", "ports": []},
        }
    )
    for plural, want in (
        ("serviceexports", {"web": ["True", "False", None], "new": [None, None, None]}),
        ("serviceimports", {"web": ["ClusterSetIP", "10.96.0.10"], "headless": ["Headless", None]}),
    ):
        table = await get_table(emu, f"{base}/{plural}")
        columns = table["columnDefinitions"]
        names = [c["name"] for c in columns]
        assert names == ["Name", *(name for name, _ in _crd_columns(plural)), "Age"]
        for column, (_, description) in zip(columns[1:-1], _crd_columns(plural), strict=True):
            assert not description or column["description"] == description
        rows = {row["cells"][0]: row["cells"][1:-1] for row in table["rows"]}
        assert rows == want
