"""Multi-Cluster Services on two real control planes: an export in one cluster ("east", the
session's control plane) is imported, by the operator of each cluster, into both: the
ServiceImport, its derived Service, and the imported slices that follow the source's pods."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    DEADLINE,
    MCS,
    by_source,
    cluster_id,
    conditions,
    export,
    import_of,
    imported_slices,
)
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import running

pytestmark = pytest.mark.realcluster


async def test_export_in_east_is_imported_in_both_clusters_and_follows_readiness(
    cluster: Cluster, kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await install_crds(kube)
    await install_crds(west)
    await cluster_id(kube, "east")
    await cluster_id(west, "west")
    await west.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    derived = derived_service_name(ns, "web")
    args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
    async with (
        running(
            kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(west_plane.kubeconfig)
        ) as east_op,
        running(
            west.kubeconfig, log_dir / "west.log", *args, "--mcs-peer", str(kube.kubeconfig)
        ) as west_op,
    ):

        async def exported() -> bool:
            body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
            found = conditions(body)
            assert found.get("Valid") == ("True", "Valid"), found
            assert found.get("Ready") == ("True", "Ready"), found
            assert found.get("Conflict") == ("False", "NoConflicts"), found
            return True

        async def imported(client: Kube) -> dict[str, Any]:
            body = await client.get(f"{MCS}/namespaces/{ns}/serviceimports/web")
            spec = body["spec"]
            assert spec["type"] == "ClusterSetIP"
            assert spec["ports"] == [{"name": "http", "protocol": "TCP", "port": 80}]
            assert spec["sessionAffinity"] == "None"
            assert spec.get("ips") and len(spec["ips"]) == len(spec["ipFamilies"])
            assert body["status"]["clusters"] == [{"cluster": "east"}]
            assert (
                body["metadata"]["annotations"]["multicluster.kubernetes.io/derived-service"]
                == derived
            )
            service = await client.get(f"/api/v1/namespaces/{ns}/services/{derived}")
            assert service["spec"]["clusterIPs"] == spec["ips"]
            assert "selector" not in service["spec"]
            (ref,) = service["metadata"]["ownerReferences"]
            assert (ref["kind"], ref["name"], ref["uid"]) == (
                "ServiceImport",
                "web",
                body["metadata"]["uid"],
            )
            return body  # type: ignore[no-any-return]

        async def slices_ready(client: Kube, ready: bool) -> bool:
            items = await imported_slices(client, ns, "web")
            assert len(items) == 1, items
            (item,) = items
            assert item["metadata"]["labels"] == {
                "multicluster.kubernetes.io/service-name": "web",
                "multicluster.kubernetes.io/source-cluster": "east",
                "kubernetes.io/service-name": derived,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io",
            }
            assert [e["addresses"] for e in item["endpoints"]] == [["10.1.0.1"]]
            assert item["endpoints"][0]["conditions"]["ready"] is ready
            assert item["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            return True

        try:
            await eventually(exported, timeout=DEADLINE)
            for client in (west, kube):
                await eventually(partial(imported, client), timeout=DEADLINE)
                await eventually(partial(slices_ready, client, True), timeout=DEADLINE)
            # A readiness flip in east reaches the imported slices of both clusters.
            await o.set_ready(kube, ns, "web-0", False, at="2026-01-01T00:01:00Z")
            for client in (west, kube):
                await eventually(partial(slices_ready, client, False), timeout=DEADLINE)
            # A scale-up past 100 endpoints: more than one imported slice, all from east.
            sem = asyncio.Semaphore(8)

            async def add(i: int) -> None:
                async with sem:
                    ip = f"10.1.1.{i + 1}"
                    await o.pod(kube, ns, f"web-{i + 1}", ip, labels={"app": "web"})

            await asyncio.gather(*(add(i) for i in range(105)))
            wanted = {"10.1.0.1", *(f"10.1.1.{i + 1}" for i in range(105))}

            async def scaled(client: Kube) -> bool:
                items = await imported_slices(client, ns, "web")
                assert by_source(items) == {"east": wanted}
                assert len(items) >= 2 and all(len(i["endpoints"]) <= 100 for i in items)
                return True

            for client in (west, kube):
                await eventually(partial(scaled, client), timeout=90)
            # The endpoint view of the import in west: every endpoint, its source cluster.
            view = await endpoints_command(
                west, "--service-import", "web", "-n", ns, "--policy", "all", "-o", "json"
            )
            assert {(r["key"]["service"], r["endpoint"]["cluster"]) for r in view} == {
                ("web", "east")
            }
            assert {r["key"]["address"] for r in view} == wanted
            # Pods deleted in east leave the imports.
            for i in range(5):
                await kube.delete(
                    f"/api/v1/namespaces/{ns}/pods/web-{i + 1}",
                    {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                )
            wanted -= {f"10.1.1.{i + 1}" for i in range(5)}
            for client in (west, kube):
                await eventually(partial(scaled, client), timeout=90)
            # Unexported: the import, its derived Service and slices are gone within 20 s.
            await kube.delete(f"{MCS}/namespaces/{ns}/serviceexports/web")

            async def gone(client: Kube) -> bool:
                status, _ = await client.status_of(
                    "GET", f"{MCS}/namespaces/{ns}/serviceimports/web"
                )
                assert status == 404
                status, _ = await client.status_of(
                    "GET", f"/api/v1/namespaces/{ns}/services/{derived}"
                )
                assert status == 404
                assert await imported_slices(client, ns, "web") == []
                return True

            for client in (west, kube):
                await eventually(partial(gone, client), timeout=20)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


# -- helpers for the scenarios below ------------------------------------------------------------


async def endpoints_command(client: Kube, *args: str) -> list[Any]:
    """``endpointslice-operator endpoints --kubeconfig <client's> *args``: its JSON lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "endpoints",
        "--kubeconfig",
        str(client.kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(DEADLINE):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


async def prepare(kube: Kube, west: Kube, ns: str, *, west_namespace: bool = True) -> None:
    await install_crds(kube)
    await install_crds(west)
    await cluster_id(kube, "east")
    await cluster_id(west, "west")
    if west_namespace:
        await west.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        )
    for client in (kube, west):
        await o.node(client, "node-a", "zone-a")


def operators(kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path) -> Any:
    args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
    east = running(
        kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(west_plane.kubeconfig)
    )
    west_op = running(
        west.kubeconfig, log_dir / "west.log", *args, "--mcs-peer", str(kube.kubeconfig)
    )
    return east, west_op


async def settled(op: Any) -> bool:
    """The operator's work queue (import keys included) has run and is idle."""
    adds = await op.metric(r'workqueue_adds_total\{name="endpoint_slice"\}')
    depth = await op.metric(r'workqueue_depth\{name="endpoint_slice"\}')
    unfinished = await op.metric(r'workqueue_unfinished_work_seconds\{name="endpoint_slice"\}')
    assert adds >= 1 and depth == 0 and unfinished == 0, (adds, depth, unfinished)
    return True


async def versions(kube: Kube, west: Kube, ns: str) -> dict[str, str]:
    derived = derived_service_name(ns, "web")
    found: dict[str, str] = {}
    for label, client in (("east", kube), ("west", west)):
        found[f"{label}/import"] = (await import_of(client, ns))["metadata"]["resourceVersion"]
        service = await client.get(f"/api/v1/namespaces/{ns}/services/{derived}")
        found[f"{label}/derived"] = service["metadata"]["resourceVersion"]
        for item in await imported_slices(client, ns, "web"):
            found[f"{label}/{item['metadata']['name']}"] = item["metadata"]["resourceVersion"]
    export_body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
    found["east/export"] = export_body["metadata"]["resourceVersion"]
    return found


# -- scenarios ------------------------------------------------------------------------------------


async def test_the_same_service_exported_from_two_clusters(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Endpoints of both, one slice set per source; differing ports: the union and
    PortConflict on both exports; unexporting one: its endpoints leave both imports."""
    await prepare(kube, west, ns)
    http = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
    grpc = {"name": "grpc", "port": 9090, "targetPort": 9090, "protocol": "TCP"}
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[http])
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await o.service(west, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[http, grpc])
    await o.pod(west, ns, "web-0", "10.2.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        try:

            async def east_only(client: Kube) -> bool:
                assert by_source(await imported_slices(client, ns, "web")) == {"east": {"10.1.0.1"}}
                return True

            for client in (kube, west):
                await eventually(partial(east_only, client), timeout=DEADLINE)
            await export(west, ns, "web")  # younger: east's export decides

            async def merged(client: Kube) -> bool:
                body = await import_of(client, ns)
                assert body["spec"]["ports"] == [
                    {"name": "http", "protocol": "TCP", "port": 80},
                    {"name": "grpc", "protocol": "TCP", "port": 9090},
                ]
                assert body["status"]["clusters"] == [{"cluster": "east"}, {"cluster": "west"}]
                items = await imported_slices(client, ns, "web")
                assert by_source(items) == {"east": {"10.1.0.1"}, "west": {"10.2.0.1"}}
                ports = {
                    item["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"]: sorted(
                        p["name"] for p in item["ports"]
                    )
                    for item in items
                }
                assert ports == {"east": ["http"], "west": ["grpc", "http"]}
                return True

            async def port_conflict(client: Kube) -> bool:
                body = await client.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
                assert conditions(body).get("Conflict") == ("True", "PortConflict"), body
                # And a Warning Event on the ServiceExport, in each cluster.
                events = await client.events(ns, reason="PortConflict")
                assert [
                    (e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"])
                    for e in events
                ] == [("Warning", "ServiceExport", "web")], events
                return True

            for client in (kube, west):
                await eventually(partial(merged, client), timeout=DEADLINE)
                await eventually(partial(port_conflict, client), timeout=DEADLINE)
            # West unexports: its endpoints leave both imports, the conflict clears.
            await west.delete(f"{MCS}/namespaces/{ns}/serviceexports/web")

            async def no_conflict() -> bool:
                body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
                assert conditions(body).get("Conflict") == ("False", "NoConflicts"), body
                return True

            for client in (kube, west):
                await eventually(partial(east_only, client), timeout=DEADLINE)
            await eventually(no_conflict, timeout=DEADLINE)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


async def test_imported_only_where_the_namespace_exists(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await prepare(kube, west, ns, west_namespace=False)
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        try:

            async def in_east() -> bool:
                assert by_source(await imported_slices(kube, ns, "web")) == {"east": {"10.1.0.1"}}
                return True

            await eventually(in_east, timeout=DEADLINE)
            await eventually(lambda: settled(west_op), timeout=DEADLINE)
            status, _ = await west.status_of("GET", f"/api/v1/namespaces/{ns}")
            assert status == 404
            # The namespace is created later: the import follows.
            await west.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            )

            async def in_west() -> bool:
                assert by_source(await imported_slices(west, ns, "web")) == {"east": {"10.1.0.1"}}
                assert (await import_of(west, ns))["spec"]["type"] == "ClusterSetIP"
                return True

            await eventually(in_west, timeout=DEADLINE)
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


async def test_restart_costs_no_write_and_cleans_up_exports_gone_meanwhile(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await prepare(kube, west, ns)
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")

    async def everywhere() -> bool:
        for client in (kube, west):
            assert by_source(await imported_slices(client, ns, "web")) == {"east": {"10.1.0.1"}}
            assert (await import_of(client, ns))["spec"].get("ips")
        body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
        assert conditions(body).get("Ready") == ("True", "Ready")
        return True

    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        await eventually(everywhere, timeout=DEADLINE)
        await eventually(lambda: settled(east_op), timeout=DEADLINE)
        await eventually(lambda: settled(west_op), timeout=DEADLINE)
        before = await versions(kube, west, ns)
        for op in (east_op, west_op):  # the first run wrote the import side
            assert await op.metric(r"endpointslice_operator_mcs_writes_total\{.*\}") > 0
    # Nothing changed while they were down: the restarted operators write nothing.
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        await eventually(lambda: settled(east_op), timeout=DEADLINE)
        await eventually(lambda: settled(west_op), timeout=DEADLINE)
        assert await versions(kube, west, ns) == before
        for op in (east_op, west_op):
            assert await op.metric(r"endpointslice_operator_mcs_writes_total\{.*\}") == 0
    # The export is deleted while both operators are down: cleaned up at start.
    await kube.delete(f"{MCS}/namespaces/{ns}/serviceexports/web")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:

        async def gone(client: Kube) -> bool:
            status, _ = await client.status_of("GET", f"{MCS}/namespaces/{ns}/serviceimports/web")
            assert status == 404
            assert await imported_slices(client, ns, "web") == []
            return True

        for client in (kube, west):
            await eventually(partial(gone, client), timeout=DEADLINE)
    await west.delete(f"/api/v1/namespaces/{ns}")


async def test_headless_and_external_name_exports(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    await prepare(kube, west, ns)
    await o.service(kube, ns, "db", annotations={o.SELECTOR: "app=db"}, clusterIP="None")
    await o.pod(kube, ns, "db-0", "10.1.0.5", labels={"app": "db"})
    await o.service(kube, ns, "ext", type="ExternalName", externalName="example.com", opt_in=False)
    await export(kube, ns, "db")
    await export(kube, ns, "ext")
    derived = derived_service_name(ns, "db")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        try:

            async def headless(client: Kube) -> bool:
                body = await import_of(client, ns, "db")
                assert body["spec"]["type"] == "Headless"
                assert not body["spec"].get("ips")
                service = await client.get(f"/api/v1/namespaces/{ns}/services/{derived}")
                assert service["spec"]["clusterIP"] == "None"
                assert by_source(await imported_slices(client, ns, "db")) == {"east": {"10.1.0.5"}}
                return True

            async def invalid() -> bool:
                body = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/ext")
                found = conditions(body)
                assert found.get("Valid") == ("False", "InvalidServiceType"), found
                assert found.get("Ready") == ("False", "Failed"), found
                events = await kube.events(ns, reason="InvalidServiceType")
                assert [(e["type"], e["involvedObject"]["name"]) for e in events] == [
                    ("Warning", "ext")
                ], events
                return True

            for client in (west, kube):
                await eventually(partial(headless, client), timeout=DEADLINE)
            await eventually(invalid, timeout=DEADLINE)
            for op in (east_op, west_op):
                await eventually(partial(settled, op), timeout=DEADLINE)
            for client in (west, kube):
                status, _ = await client.status_of(
                    "GET", f"{MCS}/namespaces/{ns}/serviceimports/ext"
                )
                assert status == 404
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


async def test_an_unreachable_peer_keeps_its_slices_until_its_lease_expires(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """West's API server stops: east keeps west's endpoints until west's Lease is older than
    the peer timeout, then they leave (and the import, west being its only exporter); west
    back: they return. (Runs last: it stops the module's second control plane.)"""
    await prepare(kube, west, ns)
    await o.service(west, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(west, ns, "web-0", "10.2.0.1", labels={"app": "web"})
    await export(west, ns, "web")
    args = ("--multicluster", "--mcs-peer-timeout", "15s", "--namespace", ns)

    async def from_west() -> bool:
        assert by_source(await imported_slices(kube, ns, "web")) == {"west": {"10.2.0.1"}}
        return True

    async with running(
        kube.kubeconfig, log_dir / "east.log", *args, "--mcs-peer", str(west_plane.kubeconfig)
    ) as east_op:
        try:
            async with running(
                west.kubeconfig, log_dir / "west.log", *args, "--mcs-peer", str(kube.kubeconfig)
            ):
                await eventually(from_west, timeout=DEADLINE)

                async def held_metric() -> bool:
                    # The peer is named by its kubeconfig (from the first scrape on).
                    reachable = (
                        r'endpointslice_operator_mcs_peer_reachable\{peer="'
                        + re.escape(str(west_plane.kubeconfig))
                        + r'"\}'
                    )
                    held = r'endpointslice_operator_mcs_imported_slices\{source_cluster="west"\}'
                    assert await east_op.metric(reachable) == 1
                    assert await east_op.metric(held) == 1
                    return True

                await eventually(held_metric, timeout=DEADLINE)
            await asyncio.to_thread(west_plane.stop)
            try:

                async def noticed() -> bool:
                    assert "does not answer" in east_op.log()
                    return True

                await eventually(noticed, timeout=DEADLINE)

                async def unreachable_metric() -> bool:
                    # The peer is named by its kubeconfig (from the first scrape on).
                    reachable = (
                        r'endpointslice_operator_mcs_peer_reachable\{peer="'
                        + re.escape(str(west_plane.kubeconfig))
                        + r'"\}'
                    )
                    assert await east_op.metric(reachable) == 0
                    return True

                await eventually(unreachable_metric, timeout=DEADLINE)
                # Unreachable, Lease still fresh: the slices stay.
                assert by_source(await imported_slices(kube, ns, "web")) == {"west": {"10.2.0.1"}}

                async def expired() -> bool:
                    assert await imported_slices(kube, ns, "web") == []
                    status, _ = await kube.status_of(
                        "GET", f"{MCS}/namespaces/{ns}/serviceimports/web"
                    )
                    assert status == 404
                    return True

                await eventually(expired, timeout=90)
            finally:
                await asyncio.to_thread(west_plane.start)
            await eventually(from_west, timeout=90)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- east:\n{east_op.log()[-4000:]}") from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


async def test_a_standby_keeps_warm_caches_and_takes_over_without_writes(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Two replicas in east with leader election: the standby lists and watches the
    multi-cluster kinds (this cluster through Kopf, the peer) before it leads; when the leader
    is killed it takes over, with nothing changed, without a write to the import side."""
    await prepare(kube, west, ns)
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    args = ("--multicluster", "--mcs-peer-timeout", "30s", "--namespace", ns)
    east_args = (*args, "--lease-namespace", ns, "--mcs-peer", str(west_plane.kubeconfig))
    leader_metric = "endpointslice_operator_leader"

    async def everywhere() -> bool:
        for client in (kube, west):
            assert by_source(await imported_slices(client, ns, "web")) == {"east": {"10.1.0.1"}}
        return True

    async with (
        running(west.kubeconfig, log_dir / "west.log", *args, "--mcs-peer", str(kube.kubeconfig)),
        running(kube.kubeconfig, log_dir / "a.log", *east_args, leader_election=True) as a,
        running(kube.kubeconfig, log_dir / "b.log", *east_args, leader_election=True) as b,
    ):

        async def one_leader() -> tuple[Any, Any]:
            found = [r for r in (a, b) if await r.metric(leader_metric) == 1]
            assert len(found) == 1, "exactly one leader"
            return found[0], (b if found[0] is a else a)

        leader, standby = await eventually(one_leader, timeout=DEADLINE)
        await eventually(everywhere, timeout=DEADLINE)
        await eventually(lambda: settled(leader), timeout=DEADLINE)

        async def warm() -> bool:
            log = standby.log()
            assert "1 ServiceExport(s), " in log and "listed; Kopf takes over" in log
            assert "multi-cluster: this cluster is" not in log  # it has not led
            return True

        await eventually(warm, timeout=DEADLINE)
        await leader.kill()  # no release: the standby waits for the Lease to expire

        async def took_over() -> bool:
            assert await standby.metric(leader_metric) == 1
            assert "multi-cluster: this cluster is east" in standby.log()
            return True

        await eventually(took_over, timeout=DEADLINE)
        await eventually(lambda: settled(standby), timeout=DEADLINE)
        await everywhere()
        assert await standby.metric(r"endpointslice_operator_mcs_writes_total\{.*\}") == 0
        # The new leader follows changes: a readiness flip reaches both clusters.
        await o.set_ready(kube, ns, "web-0", False, at="2026-01-01T00:01:00Z")

        async def flipped(client: Kube) -> bool:
            (item,) = await imported_slices(client, ns, "web")
            assert item["endpoints"][0]["conditions"]["ready"] is False
            return True

        for client in (kube, west):
            await eventually(partial(flipped, client), timeout=DEADLINE)
    await west.delete(f"/api/v1/namespaces/{ns}")
