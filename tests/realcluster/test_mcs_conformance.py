"""The kubernetes-sigs/mcs-api conformance suite (``conformance/`` at v0.5.0 and its HEAD of
2026-05-07), ported to two real control planes ("east", the session's, is the suite's first
cluster; "west" its second), each with its own operator reading the other as a peer.

Every check of the suite that needs no cluster DNS is here, with the suite's Service: ``hello``,
ports ``tcp`` 42/TCP and ``udp`` 42/UDP, ClientIP session affinity (10 s), PreferDualStack
(one family on these single-stack planes), a label and an annotation of its own, one pod. Each
test's docstring names the Go spec(s) it ports (file and what the spec asserts, in our words).
The checks that send traffic are ported on the data-plane layer
(``tests/dataplane/test_mcs_conformance_traffic.py``); docs/multicluster.md lists every check of
the suite and where it went, or why it was left (cluster DNS).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    DEADLINE,
    MCS,
    SOURCE_CLUSTER,
    conditions,
    export_of,
    imported_slices,
    unexport,
)
from tests.realcluster.test_mcs import operators, prepare

pytestmark = pytest.mark.realcluster

HELLO = "hello"
KCM_MANAGER = "endpointslice-controller.k8s.io"
UNEXPORT_SECONDS = 20.0
"""The suite's bound for an unexport to reach every cluster (imports and slices gone)."""
STEADY_SECONDS = 5.0
"""The suite's window for 'stays so' checks (an import that must not appear, or remain)."""
TCP = {"name": "tcp", "port": 42, "targetPort": 42, "protocol": "TCP"}
UDP = {"name": "udp", "port": 42, "targetPort": 42, "protocol": "UDP"}


async def hello(
    client: Kube, ns: str, ip: str, *, ports: list[Any] | None = None, **spec: Any
) -> None:
    """The suite's ``hello`` Service (opted in) and one ready pod behind it."""
    await o.service(
        client,
        ns,
        HELLO,
        annotations={o.SELECTOR: f"app={HELLO}", "dummy-svc": "dummy"},
        labels={"dummy-svc": "dummy"},
        ports=ports if ports is not None else [TCP, UDP],
        **{
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10}},
            "ipFamilyPolicy": "PreferDualStack",
            **spec,
        },
    )
    if spec.get("type") != "ExternalName":
        await o.pod(
            client,
            ns,
            f"{HELLO}-0",
            ip,
            labels={"app": HELLO},
            hostname=f"{HELLO}-0",
            subdomain=HELLO,
        )


async def export_hello(client: Kube, ns: str, **spec: Any) -> None:
    """The suite's ServiceExport: a label and an annotation of its own, ``spec`` as given."""
    body = {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {
            "name": HELLO,
            "namespace": ns,
            "labels": {"dummy-svcexport": "dummy"},
            "annotations": {"dummy-svcexport": "dummy"},
        },
        "spec": spec,
    }
    await client.create(f"{MCS}/namespaces/{ns}/serviceexports", body)


async def import_in(client: Kube, ns: str) -> Any:
    status, body = await client.status_of("GET", f"{MCS}/namespaces/{ns}/serviceimports/{HELLO}")
    assert status == 200, f"no ServiceImport {ns}/{HELLO} in {client.base}: {status}"
    return body


async def no_import(client: Kube, ns: str) -> bool:
    status, _ = await client.status_of("GET", f"{MCS}/namespaces/{ns}/serviceimports/{HELLO}")
    assert status == 404, f"ServiceImport {ns}/{HELLO} still in {client.base}"
    return True


async def steadily(check: Callable[[], Awaitable[Any]], seconds: float = STEADY_SECONDS) -> None:
    """``check`` passes at every probe (every 0.1 s) for ``seconds`` of wall time."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await check()
        await asyncio.sleep(0.1)


async def export_condition(client: Kube, ns: str, kind: str, status: str) -> bool:
    found = conditions(await export_of(client, ns, HELLO))
    assert found.get(kind, ("",))[0] == status, found
    return True


def sorted_ports(ports: list[Any]) -> list[Any]:
    """Ports as the suite compares them: name, protocol, port (and appProtocol), by name."""
    return sorted(
        ({k: p[k] for k in ("name", "protocol", "port", "appProtocol") if k in p} for p in ports),
        key=lambda p: str(p["name"]).lower(),
    )


@contextlib.asynccontextmanager
async def two_clusters(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> AsyncIterator[None]:
    """Both planes named and ready for MCS, both operators running; their logs on failure."""
    await prepare(kube, west, ns)
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm as west_op:
        try:
            yield
        except AssertionError as exc:
            raise AssertionError(
                f"{exc}\n--- east:\n{east_op.log()[-3000:]}\n--- west:\n{west_op.log()[-3000:]}"
            ) from exc
    await west.delete(f"/api/v1/namespaces/{ns}")


async def second_export(kube: Kube, west: Kube, ns: str, **spec: Any) -> None:
    """The suite's two-cluster driver: east exports and is imported, then (more than a second
    later, so that the exports' creationTimestamps differ) west exports its own ``hello``."""
    await export_hello(kube, ns)
    await eventually(partial(import_in, kube, ns), timeout=DEADLINE)
    await asyncio.sleep(1.1)
    await hello(west, ns, "10.2.0.1", **spec)
    await export_hello(west, ns)


# -- service_import.go: ClusterIP --------------------------------------------------------------


async def test_clusterip_export_imports_clustersetip_everywhere_as_the_service_says(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports these specs of service_import.go and endpoint_slice.go, on one export of
    ``hello`` (with PreferClose traffic distribution and Cluster internal traffic policy):

    - a ClusterIP export gives a ServiceImport of type ClusterSetIP in the namespace of every
      cluster, and the unexport deletes it everywhere;
    - the import's session affinity and its config are the exported Service's;
    - its internal traffic policy is the Service's; its traffic distribution is the Service's;
    - it has a clusterset IP per IP family: ``ips`` as long as ``ipFamilies``, each a valid IP
      of the family at the same index;
    - its ports are the Service's (compared by name);
    - only the labels and annotations the ServiceExport lists (exportedLabels,
      exportedAnnotations) reach the import, not the Service's own;
    - (endpoint_slice.go) every cluster gets, per IP family of the import, an EndpointSlice
      with endpoints carrying the MCS service-name and source-cluster labels and a managed-by
      label that is not kube-controller-manager's; the unexport deletes those slices within
      20 s.
    """
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(
            kube,
            ns,
            "10.1.0.1",
            internalTrafficPolicy="Cluster",
            trafficDistribution="PreferClose",
        )
        await export_hello(
            kube,
            ns,
            exportedLabels={"dummy-label": "true"},
            exportedAnnotations={"dummy-annotation": "true"},
        )
        service = await kube.get(f"/api/v1/namespaces/{ns}/services/{HELLO}")
        await eventually(partial(export_condition, kube, ns, "Valid", "True"), timeout=DEADLINE)

        async def imported(client: Kube) -> Any:
            body = await import_in(client, ns)
            spec = body["spec"]
            assert spec["type"] == "ClusterSetIP", spec
            assert spec["sessionAffinity"] == service["spec"]["sessionAffinity"] == "ClientIP"
            assert spec.get("sessionAffinityConfig") == service["spec"]["sessionAffinityConfig"]
            # As the suite does, against the Service the server stored (v1.24 drops
            # trafficDistribution, which it does not know: then neither has it).
            for key in ("internalTrafficPolicy", "trafficDistribution"):
                assert spec.get(key) == service["spec"].get(key), (key, spec)
            assert spec.get("ips"), spec
            assert len(spec["ips"]) == len(spec["ipFamilies"]), spec
            for ip, family in zip(spec["ips"], spec["ipFamilies"], strict=True):
                parsed = ipaddress.ip_address(ip)
                assert family == ("IPv4" if parsed.version == 4 else "IPv6"), spec
            assert sorted_ports(spec["ports"]) == sorted_ports(service["spec"]["ports"])
            labels = body["metadata"].get("labels") or {}
            annotations = body["metadata"].get("annotations") or {}
            assert labels.get("dummy-label") == "true", labels
            assert annotations.get("dummy-annotation") == "true", annotations
            assert "dummy-svc" not in labels and "dummy-svc" not in annotations, body["metadata"]
            assert "dummy-svcexport" not in labels and "dummy-svcexport" not in annotations
            return body

        slice_names: dict[str, list[str]] = {}
        for label, client in (("east", kube), ("west", west)):
            body = await eventually(partial(imported, client), timeout=DEADLINE)

            async def mcs_slices(client: Kube = client, families: Any = body["spec"]) -> Any:
                items = [
                    item
                    for item in (
                        await client.get(
                            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
                        )
                    )["items"]
                    if {"multicluster.kubernetes.io/service-name", SOURCE_CLUSTER}
                    <= set(item["metadata"].get("labels") or {})
                    and item.get("endpoints")
                ]
                for family in families["ipFamilies"]:
                    mine = [i for i in items if i["addressType"] == family]
                    assert mine, f"no {family} MCS EndpointSlice with endpoints"
                for item in items:
                    item_labels = item["metadata"]["labels"]
                    assert item_labels["multicluster.kubernetes.io/service-name"] == HELLO
                    assert item_labels[SOURCE_CLUSTER] == "east"
                    manager = item_labels.get("endpointslice.kubernetes.io/managed-by")
                    assert manager and manager != KCM_MANAGER, item_labels
                return items

            items = await eventually(mcs_slices, timeout=DEADLINE)
            slice_names[label] = [item["metadata"]["name"] for item in items]

        await unexport(kube, ns, HELLO)
        for label, client in (("east", kube), ("west", west)):
            await eventually(partial(no_import, client, ns), timeout=UNEXPORT_SECONDS)

            async def slices_gone(
                client: Kube = client, names: list[str] = slice_names[label]
            ) -> bool:
                for name in names:
                    status, _ = await client.status_of(
                        "GET", f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/{name}"
                    )
                    assert status == 404, name
                return True

            await eventually(slices_gone, timeout=UNEXPORT_SECONDS)


async def test_an_import_lives_while_one_cluster_still_exports(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's general spec: a ServiceImport exists only while at least one
    cluster exports the Service (exported in both, unexported in east: it stays; unexported in
    west too: it goes)."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        await second_export(kube, west, ns)

        async def both_clusters() -> bool:
            body = await import_in(kube, ns)
            clusters = [c["cluster"] for c in (body.get("status") or {}).get("clusters") or []]
            assert clusters == ["east", "west"], clusters
            return True

        await eventually(both_clusters, timeout=DEADLINE)
        await steadily(partial(import_in, kube, ns))
        await unexport(kube, ns, HELLO)
        await steadily(partial(import_in, kube, ns))
        await unexport(west, ns, HELLO)
        await eventually(partial(no_import, kube, ns), timeout=UNEXPORT_SECONDS)


async def test_conflicting_exported_labels_and_annotations(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's spec for a Service exported from two clusters with differing
    exported labels and annotations: Conflict=True on the ServiceExport of each cluster, and
    the import carries the oldest export's labels and annotations, not the other's."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        await export_hello(
            kube, ns, exportedLabels={"dummy-label": "true"},
            exportedAnnotations={"dummy-annotation": "true"},
        )  # fmt: skip
        await eventually(partial(import_in, kube, ns), timeout=DEADLINE)
        await asyncio.sleep(1.1)
        await hello(west, ns, "10.2.0.1")
        await export_hello(
            west, ns, exportedLabels={"dummy-label2": "true"},
            exportedAnnotations={"dummy-annotation2": "true"},
        )  # fmt: skip
        for client in (kube, west):
            await eventually(
                partial(export_condition, client, ns, "Conflict", "True"), timeout=DEADLINE
            )

        async def oldest_wins() -> bool:
            body = await import_in(kube, ns)
            labels = body["metadata"].get("labels") or {}
            annotations = body["metadata"].get("annotations") or {}
            assert labels.get("dummy-label") == "true" and "dummy-label2" not in labels, labels
            assert annotations.get("dummy-annotation") == "true", annotations
            assert "dummy-annotation2" not in annotations, annotations
            return True

        await eventually(oldest_wins, timeout=DEADLINE)


async def test_two_clusters_ports_union_and_conflict(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's spec for a ClusterIP Service exported from two clusters whose
    second adds a port (``stcp`` 142/SCTP): the import exposes the union of the ports and
    Conflict=True is raised on both ServiceExports."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        stcp = {"name": "stcp", "port": 142, "targetPort": 142, "protocol": "SCTP"}
        await second_export(kube, west, ns, ports=[TCP, stcp])
        for client in (kube, west):
            await eventually(
                partial(export_condition, client, ns, "Conflict", "True"), timeout=DEADLINE
            )

        async def union() -> bool:
            body = await import_in(kube, ns)
            assert sorted_ports(body["spec"]["ports"]) == sorted_ports(
                [
                    {"name": "tcp", "protocol": "TCP", "port": 42},
                    {"name": "udp", "protocol": "UDP", "port": 42},
                    {"name": "stcp", "protocol": "SCTP", "port": 142},
                ]
            ), body["spec"]["ports"]
            return True

        await eventually(union, timeout=DEADLINE)


async def test_two_clusters_conflicting_ports(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's spec for two clusters whose ``tcp`` port differs in number
    (42 and 43): Conflict=True on both ServiceExports, and the conflict resolution policy
    leaves the import with the oldest export's ports."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        await second_export(kube, west, ns, ports=[{**TCP, "port": 43}])
        for client in (kube, west):
            await eventually(
                partial(export_condition, client, ns, "Conflict", "True"), timeout=DEADLINE
            )

        async def oldest_ports() -> bool:
            body = await import_in(kube, ns)
            assert sorted_ports(body["spec"]["ports"]) == sorted_ports(
                [
                    {"name": "tcp", "protocol": "TCP", "port": 42},
                    {"name": "udp", "protocol": "UDP", "port": 42},
                ]
            ), body["spec"]["ports"]
            return True

        await eventually(oldest_ports, timeout=DEADLINE)


# -- service_import.go: Headless, ExternalName, type conflict --------------------------------


async def test_headless_export_imports_headless_everywhere_without_ips(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's Headless specs: a headless export gives a ServiceImport of
    type Headless in every cluster, which never gets a clusterset IP (none over 5 s), and the
    unexport deletes it everywhere. Also the EndpointSlice part of headless_service_dns.go's
    StatefulSet spec (its DNS lookup is left): the MCS EndpointSlice in every cluster holds
    the pods' endpoints, ready, each with its hostname."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1", clusterIP="None")
        await o.pod(
            kube, ns, f"{HELLO}-1", "10.1.0.2", labels={"app": HELLO},
            hostname=f"{HELLO}-1", subdomain=HELLO,
        )  # fmt: skip
        await export_hello(kube, ns)

        async def headless(client: Kube) -> bool:
            body = await import_in(client, ns)
            assert body["spec"]["type"] == "Headless", body["spec"]
            assert not body["spec"].get("ips"), body["spec"]
            return True

        async def hostnames(client: Kube) -> bool:
            found = {
                (tuple(e["addresses"]), e.get("hostname"), (e.get("conditions") or {}).get("ready"))
                for item in await imported_slices(client, ns, HELLO)
                for e in item.get("endpoints") or []
            }
            assert found == {
                (("10.1.0.1",), f"{HELLO}-0", True),
                (("10.1.0.2",), f"{HELLO}-1", True),
            }, found
            return True

        for client in (kube, west):
            await eventually(partial(headless, client), timeout=DEADLINE)
            await eventually(partial(hostnames, client), timeout=DEADLINE)
        await steadily(partial(headless, kube))
        await unexport(kube, ns, HELLO)
        for client in (kube, west):
            await eventually(partial(no_import, client, ns), timeout=UNEXPORT_SECONDS)


async def test_externalname_export_is_invalid_and_never_imported(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's ExternalName spec: exporting an ExternalName Service sets the
    ServiceExport's Valid condition to False, and no ServiceImport appears (none over 5 s)."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(
            kube, ns, "", type="ExternalName", externalName="example.com",
            ipFamilyPolicy=None, ports=[TCP],
        )  # fmt: skip
        await export_hello(kube, ns)
        await eventually(partial(export_condition, kube, ns, "Valid", "False"), timeout=DEADLINE)
        await steadily(partial(no_import, kube, ns))


async def test_conflicting_headlessness_keeps_the_oldest_type(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports service_import.go's type conflict spec: a Service exported from two clusters, the
    second headless: Conflict=True on both ServiceExports, and the import is of the oldest
    export's type (ClusterSetIP) in every cluster."""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        await second_export(kube, west, ns, clusterIP="None")
        for client in (kube, west):
            await eventually(
                partial(export_condition, client, ns, "Conflict", "True"), timeout=DEADLINE
            )

        async def clusterset_ip(client: Kube) -> bool:
            body = await import_in(client, ns)
            assert body["spec"]["type"] == "ClusterSetIP", body["spec"]
            return True

        for client in (kube, west):
            await eventually(partial(clusterset_ip, client), timeout=DEADLINE)


# -- connectivity.go: the part that needs no traffic ------------------------------------------


async def test_a_service_not_exported_is_not_imported(
    kube: Kube, west: Kube, west_plane: ControlPlane, ns: str, log_dir: Path
) -> None:
    """Ports the API side of connectivity.go's spec that a Service which is not exported is
    inaccessible through the clusterset: no ServiceImport, derived Service or MCS EndpointSlice
    appears in any cluster (none over 5 s), so there is no clusterset address to reach. (The
    suite reaches it by its clusterset DNS name, which is left; the traffic side is in
    tests/dataplane/test_mcs_conformance_traffic.py.)"""
    async with two_clusters(kube, west, west_plane, ns, log_dir):
        await hello(kube, ns, "10.1.0.1")
        await hello(west, ns, "10.2.0.1")
        derived = derived_service_name(ns, HELLO)

        async def nothing(client: Kube) -> bool:
            await no_import(client, ns)
            status, _ = await client.status_of("GET", f"/api/v1/namespaces/{ns}/services/{derived}")
            assert status == 404
            assert await imported_slices(client, ns, HELLO) == []
            return True

        for client in (kube, west):
            await steadily(partial(nothing, client))
