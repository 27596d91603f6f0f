"""Multi-Cluster Services on three real control planes: c1 (the session's, cluster id "east")
and c2 ("north") export the same Service, c3 ("south") only consumes it. Each cluster runs its
own operator, which reads the two others through kubeconfigs whose identity (a ServiceAccount
token) is bound only to the chart's read-only peer ClusterRole, as the multi-cluster guide sets
it up."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster, assets_dir
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    CLUSTER_ID,
    CLUSTER_PROPERTY,
    DEADLINE,
    MCS,
    by_source,
    cluster_id,
    conditions,
    export,
    export_of,
    extra_plane,
    gone_everywhere,
    import_of,
    imported_slices,
    namespace,
    peer_reader_kubeconfig,
    unexport,
)
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster

HTTP = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
GRPC = {"name": "grpc", "port": 9090, "targetPort": 9090, "protocol": "TCP"}
#: The cluster ids asked for: the session's control plane is "east" in every MCS test module.
NAMES = ("east", "north", "south")
REFUSED = re.compile(r"\b403\b|Forbidden")


@pytest.fixture(scope="module")
def planes(cluster: Cluster) -> Iterator[tuple[ControlPlane, ControlPlane, ControlPlane]]:
    """c1 (the session's control plane), c2 and c3 (started for this module)."""
    if cluster.plane is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: two more control planes are started")
    with extra_plane(assets_dir(), "c2") as two, extra_plane(assets_dir(), "c3") as three:
        yield cluster.plane, two, three


@pytest.fixture(scope="module")
def readers(planes: tuple[ControlPlane, ...]) -> list[Path]:
    """Per cluster, the kubeconfig the OTHER clusters' operators read it with: a ServiceAccount
    bound to the chart's peer ClusterRole and nothing else."""
    return [peer_reader_kubeconfig(plane) for plane in planes]


@dataclass
class Member:
    id: str
    kube: Kube
    reader: Path
    """How the other members read this one."""


@pytest.fixture
async def clusterset(
    planes: tuple[ControlPlane, ...], readers: list[Path], kube: Kube, ns: str
) -> AsyncIterator[list[Member]]:
    """c1, c2, c3 with the CRDs, a cluster id each and the test's namespace in all three."""
    async with contextlib.AsyncExitStack() as stack:
        members = []
        for index, (plane, reader) in enumerate(zip(planes, readers, strict=True)):
            client = kube if index == 0 else await stack.enter_async_context(
                await Kube.load(plane.kubeconfig)
            )  # fmt: skip
            await install_crds(client)
            member_id = await cluster_id(client, NAMES[index])
            await namespace(client, ns)
            await o.node(client, "node-a", "zone-a")
            members.append(Member(member_id, client, reader))
        assert len({m.id for m in members}) == 3, [m.id for m in members]
        yield members
        for member in members[1:]:
            await member.kube.delete(f"/api/v1/namespaces/{ns}")


@contextlib.asynccontextmanager
async def operators(
    members: list[Member], ns: str, log_dir: Path
) -> AsyncIterator[list[OperatorProcess]]:
    """An operator per cluster, each reading the two others with their peer credentials."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(member: Member) -> OperatorProcess:
            others = [m for m in members if m is not member]
            peers = [arg for m in others for arg in ("--mcs-peer", str(m.reader))]
            return await stack.enter_async_context(
                running(
                    member.kube.kubeconfig,
                    log_dir / f"{member.id}.log",
                    "--multicluster",
                    "--mcs-peer-timeout",
                    "30s",
                    "--namespace",
                    ns,
                    *peers,
                )
            )

        started = list(await asyncio.gather(*(start(m) for m in members)))
        try:
            yield started
        except AssertionError as exc:
            logs = "".join(
                f"\n--- {m.id}:\n{op.log()[-2500:]}" for m, op in zip(members, started, strict=True)
            )
            raise AssertionError(f"{exc}{logs}") from exc
        for op in started:  # the peers' credentials were enough: nothing was refused
            assert not REFUSED.search(op.log()), op.log()[-3000:]


def clusters_of(body: Any) -> Any:
    """``status.clusters`` (the status is written after the ServiceImport is created)."""
    return (body.get("status") or {}).get("clusters")


def port_names(items: list[Any]) -> dict[str, list[str]]:
    return {
        item["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"]: sorted(
            p["name"] for p in item["ports"]
        )
        for item in items
    }


async def created_before(older: Kube, younger: Kube, ns: str, name: str) -> None:
    """The two exports' creationTimestamps (seconds) differ: the older one decides."""
    first = (await export_of(older, ns, name))["metadata"]["creationTimestamp"]
    second = (await export_of(younger, ns, name))["metadata"]["creationTimestamp"]
    assert first < second, (first, second)


async def test_two_exporting_clusters_and_one_consumer(
    clusterset: list[Member], ns: str, log_dir: Path
) -> None:
    """c3's import has the endpoints of c1 and c2, one slice set per source; the ports differ:
    the union in c3 and PortConflict on BOTH exports; c1 unexports: its endpoints leave; the
    last export goes: the import is gone from all three clusters within 20 s."""
    c1, c2, c3 = clusterset
    await o.service(c1.kube, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[HTTP])
    await o.pod(c1.kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await o.service(c2.kube, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[HTTP, GRPC])
    await o.pod(c2.kube, ns, "web-0", "10.2.0.1", labels={"app": "web"})
    await o.pod(c2.kube, ns, "web-1", "10.2.0.2", labels={"app": "web"})
    await export(c1.kube, ns, "web")
    everyone = [m.kube for m in clusterset]
    async with operators(clusterset, ns, log_dir):

        async def from_c1_only(client: Kube) -> bool:
            assert by_source(await imported_slices(client, ns, "web")) == {c1.id: {"10.1.0.1"}}
            return True

        for client in everyone:
            await eventually(partial(from_c1_only, client), timeout=DEADLINE)
        await export(c2.kube, ns, "web")
        await created_before(c1.kube, c2.kube, ns, "web")

        async def merged(client: Kube) -> bool:
            body = await import_of(client, ns)
            assert body["spec"]["ports"] == [
                {"name": "http", "protocol": "TCP", "port": 80},
                {"name": "grpc", "protocol": "TCP", "port": 9090},
            ], body["spec"]
            assert clusters_of(body) == [{"cluster": cluster} for cluster in sorted((c1.id, c2.id))]
            items = await imported_slices(client, ns, "web")
            assert by_source(items) == {c1.id: {"10.1.0.1"}, c2.id: {"10.2.0.1", "10.2.0.2"}}
            assert port_names(items) == {c1.id: ["http"], c2.id: ["grpc", "http"]}
            return True

        async def port_conflict(client: Kube) -> bool:
            found = conditions(await export_of(client, ns))
            assert found.get("Conflict") == ("True", "PortConflict"), found
            assert found.get("Ready") == ("True", "Ready"), found
            return True

        for client in (c3.kube, c1.kube, c2.kube):
            await eventually(partial(merged, client), timeout=DEADLINE)
        for client in (c1.kube, c2.kube):
            await eventually(partial(port_conflict, client), timeout=DEADLINE)
        status, _ = await c3.kube.status_of("GET", f"{MCS}/namespaces/{ns}/serviceexports/web")
        assert status == 404  # c3 only consumes

        # c1 unexports: its endpoints leave every import; c2's port list is the only one.
        await unexport(c1.kube, ns, "web")

        async def from_c2_only(client: Kube) -> bool:
            body = await import_of(client, ns)
            assert [p["name"] for p in body["spec"]["ports"]] == ["http", "grpc"]
            assert clusters_of(body) == [{"cluster": c2.id}]
            items = await imported_slices(client, ns, "web")
            assert by_source(items) == {c2.id: {"10.2.0.1", "10.2.0.2"}}
            return True

        async def no_conflict() -> bool:
            found = conditions(await export_of(c2.kube, ns))
            assert found.get("Conflict") == ("False", "NoConflicts"), found
            return True

        for client in (c3.kube, c1.kube, c2.kube):
            await eventually(partial(from_c2_only, client), timeout=DEADLINE)
        await eventually(no_conflict, timeout=DEADLINE)

        # The last export goes: the import, its derived Service and slices leave all three.
        await unexport(c2.kube, ns, "web")
        derived = derived_service_name(ns, "web")
        await eventually(lambda: gone_everywhere(everyone, ns, "web", derived), timeout=20)


async def test_headless_and_cluster_ip_the_oldest_export_wins_in_all_three(
    clusterset: list[Member], ns: str, log_dir: Path
) -> None:
    """c1 exports a headless Service, later c2 a ClusterIP one of the same name: TypeConflict on
    both exports, and every cluster's import is Headless (the oldest export's type)."""
    c1, c2, c3 = clusterset
    await o.service(c1.kube, ns, "db", annotations={o.SELECTOR: "app=db"}, clusterIP="None")
    await o.pod(c1.kube, ns, "db-0", "10.1.0.5", labels={"app": "db"})
    await o.service(c2.kube, ns, "db", annotations={o.SELECTOR: "app=db"})
    await o.pod(c2.kube, ns, "db-0", "10.2.0.5", labels={"app": "db"})
    await export(c1.kube, ns, "db")
    derived = derived_service_name(ns, "db")
    async with operators(clusterset, ns, log_dir):

        async def imported_from(client: Kube, *clusters: str) -> bool:
            body = await import_of(client, ns, "db")
            assert clusters_of(body) == [{"cluster": c} for c in sorted(clusters)]
            return True

        await eventually(lambda: imported_from(c3.kube, c1.id), timeout=DEADLINE)
        await export(c2.kube, ns, "db")
        await created_before(c1.kube, c2.kube, ns, "db")

        async def headless(client: Kube) -> bool:
            await imported_from(client, c1.id, c2.id)
            body = await import_of(client, ns, "db")
            assert body["spec"]["type"] == "Headless", body["spec"]
            assert not body["spec"].get("ips"), body["spec"]
            service = await client.get(f"/api/v1/namespaces/{ns}/services/{derived}")
            assert service["spec"]["clusterIP"] == "None"
            items = await imported_slices(client, ns, "db")
            assert by_source(items) == {c1.id: {"10.1.0.5"}, c2.id: {"10.2.0.5"}}
            return True

        async def type_conflict(client: Kube) -> bool:
            status, reasons = conditions(await export_of(client, ns, "db")).get(
                "Conflict", ("", "")
            )
            # (A headless Service without a selector gets both IP families from the API server,
            # so IPFamilyConflict may be named too.)
            assert status == "True" and "TypeConflict" in reasons.split(","), (status, reasons)
            return True

        for member in (c3, c1, c2):
            await eventually(partial(headless, member.kube), timeout=DEADLINE)
        for member in (c1, c2):
            await eventually(partial(type_conflict, member.kube), timeout=DEADLINE)


async def test_the_peer_identity_reads_what_the_operator_needs_and_writes_nothing(
    clusterset: list[Member], ns: str
) -> None:
    """The kubeconfig the other clusters read c1 with: the chart's peer ClusterRole lets it list
    and watch ServiceExports, Services, EndpointSlices and the ClusterProperty, and nothing
    else: every write is refused."""
    async with await Kube.load(clusterset[0].reader) as peer:
        collections = (
            f"{MCS}/serviceexports",
            f"{MCS}/namespaces/{ns}/serviceexports",
            "/api/v1/services",
            "/apis/discovery.k8s.io/v1/endpointslices",
            CLUSTER_PROPERTY,
        )
        for path in collections:
            status, body = await peer.status_of("GET", path)
            assert status == 200, (path, status, body)
        # What the identity may do with each kind, as the API server's authorizer answers.
        kinds = (
            ("multicluster.x-k8s.io", "serviceexports"),
            ("", "services"),
            ("discovery.k8s.io", "endpointslices"),
            ("about.k8s.io", "clusterproperties"),
        )
        allowed = {}
        for group, resource in kinds:
            for verb in ("get", "list", "watch", "create", "update", "patch", "delete"):
                review = {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "spec": {"resourceAttributes": {"group": group, "resource": resource,
                                                    "verb": verb}},
                }  # fmt: skip
                answer = await peer.create(
                    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review
                )
                allowed[resource, verb] = answer["status"]["allowed"]
        assert {key for key, yes in allowed.items() if yes} == {
            (resource, verb) for _, resource in kinds for verb in ("get", "list", "watch")
        }, allowed
        status, body = await peer.status_of("GET", f"{CLUSTER_PROPERTY}/{CLUSTER_ID}")
        assert (status, body["spec"]["value"]) == (200, clusterset[0].id), body
        slice_body = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "x", "labels": {"kubernetes.io/service-name": "x"}},
            "addressType": "IPv4",
            "endpoints": [],
        }
        refused = [
            ("POST", f"{MCS}/namespaces/{ns}/serviceimports", {"metadata": {"name": "x"}}),
            ("POST", f"{MCS}/namespaces/{ns}/serviceexports", {"metadata": {"name": "x"}}),
            ("PUT", f"{MCS}/namespaces/{ns}/serviceexports/x/status", {"metadata": {"name": "x"}}),
            ("POST", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", slice_body),
            ("DELETE", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/x", None),
            ("POST", f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": "x"}}),
            ("DELETE", f"{CLUSTER_PROPERTY}/{CLUSTER_ID}", None),
            ("GET", f"/api/v1/namespaces/{ns}/secrets", None),
            ("GET", f"{MCS}/namespaces/{ns}/serviceimports", None),
            ("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", None),
        ]
        answers = [(m, p, (await peer.status_of(m, p, b))[0]) for m, p, b in refused]
        assert [a for a in answers if a[2] != 403] == [], answers
