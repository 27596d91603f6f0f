"""EndpointSelectors on a real kube-apiserver (and its garbage collector): the CRD installed by
the test, its schema, selection, conditions, named ports, families, labels, deletion, restart,
and parity with a Service of the same selector and ports."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.watch.relist import Relisting
from tests.realcluster import objects as o
from tests.realcluster.kube import (
    JSON,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    OURS,
    Kube,
    eventually,
)
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "deploy" / "crds" / "endpointselectors.endpointslice-operator.io.yaml"
KEP6116_EXAMPLE = ROOT / "deploy" / "examples" / "endpointselector.yaml"
GROUP_VERSION = "endpointslice-operator.io/v1alpha1"
LABEL_SELECTOR_NAME = "endpointslice-operator.io/endpoint-selector-name"
LABEL_KEP6116 = "kubernetes.io/endpoint-selector-name"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
async def crd(kube: Kube) -> AsyncIterator[None]:
    """The CRD of deploy/crds/, installed (once per control plane; again if another test
    deleted it, as the plain-manifests uninstall does) and established."""
    body = yaml.safe_load(CRD_FILE.read_text(encoding="utf-8"))
    path = f"{CRDS}/{body['metadata']['name']}"

    async def established() -> bool:
        status, current = await kube.status_of("GET", path)
        if status == 404:
            status, answer = await kube.status_of("POST", CRDS, body)
            assert status in (200, 409), answer
            raise AssertionError("created; waiting for it to be established")
        assert status == 200, current
        assert not current["metadata"].get("deletionTimestamp"), "being deleted"
        conditions = (current.get("status") or {}).get("conditions") or []
        assert any(c["type"] == "Established" and c["status"] == "True" for c in conditions)
        listed, answer = await kube.status_of("GET", f"/apis/{GROUP_VERSION}/endpointselectors")
        assert listed == 200, answer
        return True

    await eventually(established, timeout=90)
    yield


@pytest.fixture
async def selector_operator(
    crd: None, kube: Kube, ns: str, log_dir: Path
) -> AsyncIterator[OperatorProcess]:
    await o.node(kube, "node-a", "zone-a")
    await o.node(kube, "node-b", "zone-b")
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns) as op:
        yield op


def selector_body(name: str, selector: JSON, **spec: Any) -> JSON:
    spec.setdefault("ports", [{"name": "http", "port": 8080, "protocol": "TCP"}])
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "EndpointSelector",
        "metadata": {"name": name},
        "spec": {"selector": selector, **spec},
    }


async def create_selector(kube: Kube, ns: str, body: JSON) -> JSON:
    return await kube.create(f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors", body)


async def selector_slices(kube: Kube, ns: str, name: str) -> list[JSON]:
    body = await kube.get(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        labelSelector=f"{LABEL_SELECTOR_NAME}={name},{LABEL_MANAGED_BY}={OURS}",
    )
    return sorted(body["items"], key=lambda s: (s["addressType"], s["metadata"]["name"]))


async def ready_condition(kube: Kube, ns: str, name: str) -> JSON:
    current = await kube.get(f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors/{name}")
    status = current.get("status") or {}
    found = [c for c in status.get("conditions") or [] if c["type"] == "Ready"]
    assert len(found) == 1, current
    (ready,) = found
    return dict(
        ready,
        objectGeneration=current["metadata"]["generation"],
        statusGeneration=status.get("observedGeneration"),
    )


async def until_selected(
    kube: Kube, ns: str, name: str, want: set[str], timeout: float = 60
) -> None:
    async def check() -> bool:
        assert o.addresses(await selector_slices(kube, ns, name)) == want
        return True

    await eventually(check, timeout=timeout)


async def until_condition(kube: Kube, ns: str, name: str, status: str, reason: str) -> JSON:
    async def check() -> JSON:
        condition = await ready_condition(kube, ns, name)
        assert (condition["status"], condition["reason"]) == (status, reason), condition
        assert condition["statusGeneration"] == condition["objectGeneration"], condition
        return condition

    result: JSON = await eventually(check, timeout=60)
    return result


async def test_selection_labels_owner_status_and_printer_columns(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web", "tier": "front"})
    await o.pod(kube, ns, "web-1", "10.1.0.2", labels={"app": "web", "tier": "back"})
    await o.pod(kube, ns, "db-0", "10.1.0.3", labels={"app": "db"})
    body = selector_body("by-labels", {"matchLabels": {"app": "web"}})
    body["metadata"]["labels"] = {"team": "a", LABEL_SERVICE_NAME: "spoofed"}
    created = await create_selector(kube, ns, body)
    expressions = {
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": ["web", "db"]},
            {"key": "tier", "operator": "NotIn", "values": ["back"]},
        ]
    }
    await create_selector(kube, ns, selector_body("by-expressions", expressions))
    await until_selected(kube, ns, "by-labels", {"10.1.0.1", "10.1.0.2"})
    await until_selected(kube, ns, "by-expressions", {"10.1.0.1", "10.1.0.3"})
    (only,) = await selector_slices(kube, ns, "by-labels")
    # Non-reserved labels copied, reserved ones ours (no kubernetes.io/service-name).
    assert only["metadata"]["labels"] == {
        "team": "a",
        LABEL_MANAGED_BY: OURS,
        LABEL_SELECTOR_NAME: "by-labels",
        LABEL_KEP6116: "by-labels",
    }
    (owner,) = only["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "EndpointSelector",
        created["metadata"]["uid"],
        True,
    )
    assert only["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    await until_condition(kube, ns, "by-labels", "True", "Accepted")
    # kubectl's columns (the server's Table rendering of the CRD's printer columns).
    table = await kube.request(
        "GET",
        f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    # The emulator renders the same (tests/emulator/test_tables.py).
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
    assert [c["priority"] for c in columns] == [0, 0, 0, 0, 0, 1, 0]
    cells = {row["cells"][0]: row["cells"] for row in table["rows"]}
    assert cells["by-labels"][5] == '{"matchLabels":{"app":"web"}}'

    async def row(want: list[Any]) -> bool:
        table = await kube.request(
            "GET",
            f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        )
        rows = {row["cells"][0]: row["cells"][1:5] for row in table["rows"]}
        assert rows["by-labels"] == want, rows
        return True

    # The endpoint counts, written at most every 5 s (endpoint_selector_status).
    await eventually(lambda: row(["True", "Accepted", 2, 2]), timeout=60)
    await o.set_ready(kube, ns, "web-1", False)
    await eventually(lambda: row(["True", "Accepted", 2, 1]), timeout=60)
    # What kubectl shows.
    kubectl = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kube.kubeconfig),
        "get",
        "endpointselectors",
        "-n",
        ns,
        "by-labels",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(kubectl.communicate(), timeout=60)
    assert kubectl.returncode == 0, err.decode()
    header, line = out.decode().splitlines()
    assert header.split()[:5] == ["NAME", "READY", "REASON", "ENDPOINTS", "READY-ENDPOINTS"]
    assert line.split()[:5] == ["by-labels", "True", "Accepted", "2", "1"]
    # No finalizer: deleting it (or its namespace, or the CRD) never waits for the operator.
    current = await kube.get(f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors/by-labels")
    assert "finalizers" not in current["metadata"]


async def test_the_schema_refuses_what_it_can_and_the_operator_the_rest(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors"
    refused = [
        selector_body("no-selector", {}),
        selector_body(
            "icmp", {"matchLabels": {"app": "web"}}, ports=[{"port": 80, "protocol": "ICMP"}]
        ),
        selector_body("object-port", {"matchLabels": {"app": "web"}}, ports=[{"port": {"a": 1}}]),
        selector_body("bad-op", {"matchExpressions": [{"key": "a", "operator": "Gt"}]}),
    ]
    for body in refused:
        status, answer = await kube.status_of("POST", path, body)
        assert status == 422, (body["metadata"]["name"], answer)
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    duplicate = selector_body(
        "duplicate",
        {"matchLabels": {"app": "web"}},
        ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}],
    )
    await create_selector(kube, ns, duplicate)
    # An empty matchLabels: refused by the CEL rule where the server has it (1.25+), by the
    # operator otherwise.
    status, _ = await kube.status_of(
        "POST", path, selector_body("empty-labels", {"matchLabels": {}})
    )
    assert status in (200, 201, 422)
    await until_condition(kube, ns, "duplicate", "False", "DuplicatePortName")
    if status != 422:
        await until_condition(kube, ns, "empty-labels", "False", "InvalidSelector")
    # A name that is no label value (the slices carry it as one): the same split.
    long_name = "n" * 64
    status, answer = await kube.status_of(
        "POST", path, selector_body(long_name, {"matchLabels": {"app": "web"}})
    )
    assert status in (200, 201, 422), answer
    if status == 422:
        assert "at most 63 characters" in answer["message"], answer
    else:
        await until_condition(kube, ns, long_name, "False", "InvalidName")

    async def warned() -> bool:
        found = await kube.events(ns, "DuplicatePortName")
        assert len(found) == 1, found
        (event,) = found
        assert event["type"] == "Warning"
        assert event["involvedObject"]["kind"] == "EndpointSelector"
        return True

    await eventually(warned, timeout=60)
    assert await selector_slices(kube, ns, "duplicate") == []


async def test_target_port_is_an_alias_of_port_and_both_must_agree(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    """``port`` is KEP-6116's field; ``targetPort`` (a Service's spelling) is accepted as its
    alias. Both given and different: refused at admission by the CRD's validation rule (1.25
    and later), else ``Ready=False/InvalidPort``; neither given: the same."""
    path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors"
    await o.pod(
        kube,
        ns,
        "web-0",
        "10.1.0.1",
        container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
    )
    labels = {"matchLabels": {"app": "web"}}
    await create_selector(kube, ns, selector_body("alias", labels, ports=[{"targetPort": "http"}]))
    await create_selector(
        kube, ns, selector_body("both", labels, ports=[{"port": 8080, "targetPort": 8080}])
    )
    for name, ports in (
        ("differ", [{"port": 8080, "targetPort": 8081}]),
        ("number-and-name", [{"port": 8080, "targetPort": "http"}]),
        ("neither", [{"name": "a"}]),
    ):
        status, answer = await kube.status_of(
            "POST", path, selector_body(name, labels, ports=ports)
        )
        assert status in (200, 201, 422), answer
        if status == 422:
            assert "targetPort" in answer["message"], answer
        else:  # a server without CRD validation rules: the operator refuses it
            await until_condition(kube, ns, name, "False", "InvalidPort")

    async def check() -> bool:
        alias = await selector_slices(kube, ns, "alias")
        assert [p["port"] for s in alias for p in s["ports"]] == [9090], alias
        both = await selector_slices(kube, ns, "both")
        assert [p["port"] for s in both for p in s["ports"]] == [8080], both
        assert o.addresses(alias) == o.addresses(both) == {"10.1.0.1"}
        return True

    await eventually(check, timeout=60)
    await until_condition(kube, ns, "alias", "True", "Accepted")


async def kubectl(kube: Kube, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kube.kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    return out.decode()


async def test_the_kep6116_example_applied_as_it_is(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    """deploy/examples/endpointselector.yaml (KEP-6116's shape, only the apiVersion changed),
    applied with kubectl as it is. This control plane runs no ReplicaSet controller and no
    kubelet, so the test makes the Deployments' pods from their templates and gives them the
    status a kubelet would. The slices: KEP-6116's label, the EndpointSelector's own labels
    copied, owned by it, the named port resolved per pod (a slice per track), the numbered
    port as given, the shadow track left out by ``matchExpressions``, IPv4 only as
    ``ipFamilies`` asks, zone hints from ``trafficSettings``."""
    version = await kube.get("/version")
    # v1.24.0-alpha.2 stores no hints (its TopologyAwareHints gate is off by default).
    hints = int(str(version["minor"]).rstrip("+")) >= 30
    await kubectl(kube, "apply", "-n", ns, "-f", str(KEP6116_EXAMPLE))
    documents = [d for d in yaml.safe_load_all(KEP6116_EXAMPLE.read_text("utf-8")) if d]
    (example,) = [d for d in documents if d["kind"] == "EndpointSelector"]
    name = example["metadata"]["name"]
    assert example["apiVersion"] == GROUP_VERSION
    number = 0
    for deployment in (d for d in documents if d["kind"] == "Deployment"):
        template = deployment["spec"]["template"]
        for replica in range(deployment["spec"]["replicas"]):
            number += 1
            pod_name = f"{deployment['metadata']['name']}-{replica}"
            body = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod_name, "labels": template["metadata"]["labels"]},
                "spec": {**template["spec"], "nodeName": ("node-a", "node-b")[number % 2]},
            }
            await kube.create(f"/api/v1/namespaces/{ns}/pods", body)
            await o.set_status(
                kube, ns, pod_name, o.pod_status([f"10.1.0.{number}", f"fd00::{number}"])
            )

    async def check() -> bool:
        listed = await kube.get(
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
            labelSelector=f"{LABEL_KEP6116}={name},{LABEL_MANAGED_BY}={OURS}",
        )
        by_grpc: dict[int, set[str]] = {}
        for item in listed["items"]:
            assert item["addressType"] == "IPv4"
            labels = item["metadata"]["labels"]
            assert labels[LABEL_SELECTOR_NAME] == name
            assert labels["inference.example.com/pool"] == name
            assert LABEL_SERVICE_NAME not in labels
            (owner,) = item["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["name"], owner["controller"]) == (
                "EndpointSelector",
                name,
                True,
            )
            ports = {
                p["name"]: (p["port"], p["protocol"], p.get("appProtocol")) for p in item["ports"]
            }
            grpc = ports["grpc"][0]
            assert ports == {
                "grpc": (grpc, "TCP", "kubernetes.io/h2c"),
                "metrics": (9100, "TCP", None),
            }
            by_grpc[grpc] = {e["targetRef"]["name"] for e in item["endpoints"]}
            for endpoint in item["endpoints"]:
                assert endpoint["conditions"]["ready"] is True
                if hints:
                    assert endpoint["hints"]["forZones"] == [{"name": endpoint["zone"]}]
        assert by_grpc == {
            8080: {"model-server-stable-0", "model-server-stable-1"},
            8081: {"model-server-next-0"},
        }
        return True

    await eventually(check, timeout=60)
    await until_condition(kube, ns, name, "True", "Accepted")

    # `kubectl get esel` (the short name and the printer columns), once the counts are written.
    async def columns() -> bool:
        header, line = (await kubectl(kube, "get", "esel", "-n", ns, name)).splitlines()
        assert header.split()[:5] == ["NAME", "READY", "REASON", "ENDPOINTS", "READY-ENDPOINTS"]
        assert line.split()[:5] == [name, "True", "Accepted", "3", "3"]
        return True

    await eventually(columns, timeout=60)


async def test_conditions_publish_not_ready_and_a_selector_change(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "web-1", "10.1.0.2", ready=False)
    await o.pod(kube, ns, "api-0", "10.1.0.9", labels={"app": "api"})
    await create_selector(kube, ns, selector_body("plain", {"matchLabels": {"app": "web"}}))
    await create_selector(
        kube,
        ns,
        selector_body("all", {"matchLabels": {"app": "web"}}, publishNotReadyAddresses=True),
    )

    async def views(plain: dict[str, tuple[Any, ...]], every: dict[str, tuple[Any, ...]]) -> None:
        async def check() -> bool:
            got_plain = {
                k: v[1:4]
                for k, v in o.endpoint_view(await selector_slices(kube, ns, "plain")).items()
            }
            got_all = {
                k: v[1:4]
                for k, v in o.endpoint_view(await selector_slices(kube, ns, "all")).items()
            }
            assert (got_plain, got_all) == (plain, every)
            return True

        await eventually(check, timeout=60)

    await views(
        {"web-0": (True, True, False), "web-1": (False, False, False)},
        {"web-0": (True, True, False), "web-1": (True, False, False)},
    )
    await o.set_ready(kube, ns, "web-1", True)
    await kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/web-0", {"gracePeriodSeconds": 60})
    await views(
        {"web-0": (False, True, True), "web-1": (True, True, False)},
        {"web-0": (True, True, True), "web-1": (True, True, False)},
    )
    await kube.patch(
        f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors/plain",
        {"spec": {"selector": {"matchLabels": {"app": "api"}}}},
    )
    await until_selected(kube, ns, "plain", {"10.1.0.9"})
    await until_condition(kube, ns, "plain", "True", "Accepted")


async def test_named_ports_and_ip_families(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    await o.pod(kube, ns, "web-0", ["10.1.0.1", "fd00::1"])
    await o.pod(
        kube,
        ns,
        "web-1",
        ["10.1.0.2", "fd00::2"],
        container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
    )
    await create_selector(
        kube,
        ns,
        selector_body(
            "named",
            {"matchLabels": {"app": "web"}},
            ports=[{"name": "web", "port": "http"}],
            ipFamilies=["IPv4"],
        ),
    )
    await create_selector(
        kube, ns, selector_body("v6", {"matchLabels": {"app": "web"}}, ipFamilies=["IPv6"])
    )
    await create_selector(kube, ns, selector_body("both", {"matchLabels": {"app": "web"}}))

    async def check() -> bool:
        named = await selector_slices(kube, ns, "named")
        by_port = {s["ports"][0]["port"]: o.addresses([s]) for s in named}
        assert by_port == {8080: {"10.1.0.1"}, 9090: {"10.1.0.2"}}
        assert {s["addressType"] for s in named} == {"IPv4"}
        v6 = await selector_slices(kube, ns, "v6")
        assert o.addresses(v6) == {"fd00::1", "fd00::2"}
        assert {s["addressType"] for s in v6} == {"IPv6"}
        both = await selector_slices(kube, ns, "both")
        assert {s["addressType"] for s in both} == {"IPv4", "IPv6"}
        return True

    await eventually(check, timeout=60)


async def test_a_named_port_on_no_pod_is_ready_false_with_a_warning(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    await o.pod(kube, ns, "web-0", "10.1.0.1")  # container port "http" only
    await create_selector(
        kube,
        ns,
        selector_body(
            "typo", {"matchLabels": {"app": "web"}}, ports=[{"name": "web", "port": "htp"}]
        ),
    )
    # The slice stays what kube-controller-manager publishes for such a Service: no ports.
    await until_selected(kube, ns, "typo", {"10.1.0.1"})
    (published,) = await selector_slices(kube, ns, "typo")
    assert not published.get("ports"), published
    condition = await until_condition(kube, ns, "typo", "False", "UnresolvedPort")
    assert "htp/TCP" in condition["message"], condition

    async def warned() -> bool:
        events = await kube.events(ns, "UnresolvedPort")
        assert [(e["type"], e["involvedObject"]["name"]) for e in events] == [
            ("Warning", "typo")
        ], events
        assert events[0]["message"] == condition["message"]
        return True

    await eventually(warned, timeout=60)
    await kube.patch(
        f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors/typo",
        {"spec": {"ports": [{"name": "web", "port": "http"}]}},
    )
    await until_condition(kube, ns, "typo", "True", "Accepted")


async def test_service_name_label_only_when_owned_by_a_service(
    kube: Kube, ns: str, crd: None, log_dir: Path
) -> None:
    await o.node(kube, "node-a", "zone-a")
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    service = await o.service(kube, ns, "web", opt_in=False)
    owned = selector_body("web-owned", {"matchLabels": {"app": "web"}})
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "web",
            "uid": service["metadata"]["uid"],
            "controller": True,
        }
    ]
    await create_selector(kube, ns, owned)
    await create_selector(kube, ns, selector_body("free", {"matchLabels": {"app": "web"}}))
    # KEP-6116's label by default (no --kep6116-labels).
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns):
        await until_selected(kube, ns, "web-owned", {"10.1.0.1"})
        await until_selected(kube, ns, "free", {"10.1.0.1"})
    (owned_slice,) = await selector_slices(kube, ns, "web-owned")
    (free_slice,) = await selector_slices(kube, ns, "free")
    assert owned_slice["metadata"]["labels"][LABEL_SERVICE_NAME] == "web"
    assert owned_slice["metadata"]["labels"][LABEL_KEP6116] == "web-owned"
    assert LABEL_SERVICE_NAME not in free_slice["metadata"]["labels"]
    assert free_slice["metadata"]["labels"][LABEL_KEP6116] == "free"
    # kube-proxy would program the owned one for the Service "web" (its slices by that label).
    assert [s["metadata"]["name"] for s in await kube.slices(ns, "web")] == [
        owned_slice["metadata"]["name"]
    ]


async def test_deleting_an_endpoint_selector_deletes_its_slices(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    """The garbage collector (through the ownerReference), and the operator itself where the
    collector leaves them (orphan propagation stands for a cluster without one)."""
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    for name in ("collected", "orphaned"):
        await create_selector(kube, ns, selector_body(name, {"matchLabels": {"app": "web"}}))
        await until_selected(kube, ns, name, {"10.1.0.1"})
    path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors"
    await kube.delete(f"{path}/collected")
    await kube.delete(
        f"{path}/orphaned",
        {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan"},
    )

    async def gone() -> bool:
        assert await selector_slices(kube, ns, "collected") == []
        assert await selector_slices(kube, ns, "orphaned") == []
        return True

    await eventually(gone, timeout=60)
    deleted = await selector_operator.metric(
        r'endpoint_slice_controller_changes\{operation="delete"\}'
    )
    assert deleted >= 1  # the orphaned one's slice, at least, went by the operator's hand


async def test_a_restart_with_nothing_changed_writes_nothing(
    kube: Kube, ns: str, crd: None, log_dir: Path
) -> None:
    await o.node(kube, "node-a", "zone-a")
    for i in range(12):
        await o.pod(kube, ns, f"web-{i}", f"10.1.0.{i + 1}")
    await create_selector(kube, ns, selector_body("web", {"matchLabels": {"app": "web"}}))
    await create_selector(
        kube, ns, selector_body("bad", {"matchLabels": {"app": "web"}}, ports=[{"port": 0}])
    )
    args = ("--namespace", ns)
    async with running(kube.kubeconfig, log_dir / "first.log", *args):
        await until_selected(kube, ns, "web", {f"10.1.0.{i + 1}" for i in range(12)})
        await until_condition(kube, ns, "web", "True", "Accepted")
        await until_condition(kube, ns, "bad", "False", "InvalidPort")

        async def counted() -> bool:
            current = await kube.get(f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors/web")
            status = current.get("status") or {}
            assert (status.get("endpoints"), status.get("readyEndpoints")) == (12, 12), status
            return True

        await eventually(counted, timeout=60)
    slices_path = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
    selectors_path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors"
    slices_version = (await kube.get(slices_path))["metadata"]["resourceVersion"]
    selectors_version = (await kube.get(selectors_path))["metadata"]["resourceVersion"]
    async with (
        kube.watch(slices_path, resource_version=slices_version) as slice_events,
        kube.watch(selectors_path, resource_version=selectors_version) as selector_events,
    ):
        async with running(kube.kubeconfig, log_dir / "second.log", *args) as second:

            async def synced() -> bool:
                return (
                    await second.metric(r'endpoint_slice_controller_syncs\{result="success"\}') >= 1
                )

            await eventually(synced, timeout=60)
            # A status patch would come right after the listing, or at the counts writer's
            # next round (every 5 s).
            await asyncio.sleep(6)
            assert await second.metric(r"endpoint_slice_controller_changes\{.*\}") == 0
        assert slice_events == []
        assert selector_events == [], json.dumps(selector_events)[:2000]


def _packing(found: list[JSON]) -> list[str]:
    return sorted(
        json.dumps(
            [
                s["addressType"],
                s.get("ports") or [],
                sorted(s.get("endpoints") or [], key=lambda ep: ep["addresses"]),
            ],
            sort_keys=True,
        )
        for s in found
    )


async def test_parity_with_a_service_of_the_same_selector_and_ports(
    kube: Kube, ns: str, crd: None, log_dir: Path
) -> None:
    await o.node(kube, "node-a", "zone-a")
    await o.node(kube, "node-b", "zone-b")
    for i in range(7):
        await o.pod(
            kube,
            ns,
            f"web-{i}",
            f"10.1.0.{i + 1}",
            ready=i % 3 != 0,
            node_name="node-a" if i % 2 else "node-b",
        )
    await o.pod(
        kube,
        ns,
        "web-odd",
        "10.1.0.50",
        container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
    )
    port = {"name": "http", "protocol": "TCP", "appProtocol": "http"}
    await o.service(
        kube,
        ns,
        "web",
        annotations={o.SELECTOR: "app=web"},
        ports=[{**port, "port": 80, "targetPort": "http"}],
        clusterIP="None",
        ipFamilies=["IPv4"],
        ipFamilyPolicy="SingleStack",
    )
    await create_selector(
        kube,
        ns,
        selector_body("web", {"matchLabels": {"app": "web"}}, ports=[{**port, "port": "http"}]),
    )
    args = ("--namespace", ns, "--max-endpoints-per-slice", "3")
    async with running(kube.kubeconfig, log_dir / "operator.log", *args):

        async def same() -> bool:
            service_slices = [
                s
                for s in await kube.slices(ns, "web")
                if LABEL_SELECTOR_NAME not in s["metadata"]["labels"]
            ]
            selector = await selector_slices(kube, ns, "web")
            assert len(o.addresses(service_slices)) == 8
            assert len(service_slices) == 4
            assert _packing(service_slices) == _packing(selector)
            return True

        await eventually(same, timeout=60)


async def test_sigterm_stops_the_operator_while_endpoint_selectors_are_served(
    selector_operator: OperatorProcess,
) -> None:
    """The EndpointSelectors' Kopf instance takes SIGTERM for itself when it starts; the
    operator must still stop on it, gracefully, rather than wait to be killed (found in CI:
    every realcluster test after the CRD was installed waited out the 20 s kill deadline)."""

    async def serving() -> bool:
        assert "serving EndpointSelectors" in selector_operator.log()
        return True

    await eventually(serving, timeout=60)
    assert await selector_operator.stop() == 0, selector_operator.log()[-2000:]
    assert "stopped" in selector_operator.log().splitlines()[-1]


async def test_counting_them_takes_one_list_of_one_item(kube: Kube, ns: str, crd: None) -> None:
    """The missed-deletion check's safety net (``Relisting.keep_counting``) counts a scope's
    EndpointSelectors from a ``limit=1`` list's ``remainingItemCount``: the real server gives it
    for them."""
    for name in ("a", "b", "c"):
        await create_selector(kube, ns, selector_body(name, {"matchLabels": {"app": name}}))
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kube.kubeconfig), client_configuration=configuration
    )
    async with ApiClient(configuration) as api:
        relisting = Relisting(
            api,
            f"/apis/{GROUP_VERSION}",
            "endpointselectors",
            held=list,
            uid_of=lambda _key: None,
            forget=lambda _key: None,
        )
        assert await relisting.count(ns) == 3
        page = await kube.get(f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors", limit="1")
        assert page["metadata"]["remainingItemCount"] == 2


async def test_the_crd_deleted_and_applied_again_is_served_again(
    kube: Kube, ns: str, selector_operator: OperatorProcess
) -> None:
    """``kubectl delete crd`` then ``kubectl apply`` while the operator runs, twice: the
    deleted EndpointSelectors' slices go, one warning (no traceback) and
    ``endpointslice_operator_api_served`` 0 say the kind is not served, and once the CRD is
    back a new EndpointSelector is served."""
    body = yaml.safe_load(CRD_FILE.read_text(encoding="utf-8"))
    crd_path = f"{CRDS}/{body['metadata']['name']}"
    served = (
        r'endpointslice_operator_api_served\{group="endpointslice-operator.io",'
        r'resource="endpointselectors"\}'
    )
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "api-0", "10.1.0.2", labels={"app": "api"})
    for round_ in range(2):
        before, after = f"before-{round_}", f"after-{round_}"
        await create_selector(kube, ns, selector_body(before, {"matchLabels": {"app": "web"}}))
        await until_selected(kube, ns, before, {"10.1.0.1"})
        assert await selector_operator.metric(served) == 1
        status, answer = await kube.status_of("DELETE", crd_path)
        assert status == 200, answer

        async def unserved(before: str = before) -> bool:
            assert (await kube.status_of("GET", crd_path))[0] == 404
            assert await selector_slices(kube, ns, before) == []
            assert await selector_operator.metric(served) == 0
            return True

        await eventually(unserved, timeout=90)
        status, answer = await kube.status_of("POST", CRDS, body)
        assert status in (200, 201), answer
        await create_when_served(kube, ns, selector_body(after, {"matchLabels": {"app": "api"}}))
        await until_selected(kube, ns, after, {"10.1.0.2"}, timeout=90)
        await until_condition(kube, ns, after, "True", "Accepted")
        assert await selector_operator.metric(served) == 1
    log = selector_operator.log()
    assert log.count("EndpointSelectors no longer served") == 2, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


async def create_when_served(kube: Kube, ns: str, body: JSON) -> None:
    """Create an EndpointSelector once the API server takes it (the CRD just applied)."""

    async def created() -> bool:
        path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/endpointselectors"
        try:
            status, answer = await kube.status_of("POST", path, body)
        except json.JSONDecodeError as exc:  # "404 page not found": not served yet
            raise AssertionError("not served yet") from exc
        assert status in (200, 201), answer
        return True

    await eventually(created, timeout=90)
