"""The pure decisions the import sync and ``plan --mcs-cluster`` share: whether a stored
ServiceImport needs an update or a status write, whether a Service is owned by an import, and
whether an export's conditions changed."""

from __future__ import annotations

import copy
from typing import Any

from endpointslice_operator.reconciler.mcs import (
    ImportPort,
    ImportResolution,
    owned_by_import,
    same_conditions,
    service_import,
    service_import_change,
)


def resolution(clusters: tuple[str, ...] = ("east",)) -> ImportResolution:
    return ImportResolution(
        namespace="shop",
        name="web",
        type="ClusterSetIP",
        ports=(ImportPort("http", "TCP", 80),),
        session_affinity="None",
        session_affinity_config=None,
        ip_families=("IPv4",),
        internal_traffic_policy=None,
        traffic_distribution=None,
        labels=(),
        annotations=(),
        clusters=clusters,
        decided_by=clusters[0],
        conflicts=(),
        conflict_message="",
        cluster_ports={c: frozenset({"http"}) for c in clusters},
    )


def test_service_import_change() -> None:
    desired = service_import(resolution())
    stored: dict[str, Any] = copy.deepcopy(desired)
    stored["metadata"]["uid"] = "u"
    assert service_import_change(stored, desired) == (False, False)
    stored["metadata"]["labels"]["extra"] = "x"
    assert service_import_change(stored, desired) == (True, False)
    assert service_import_change(stored, service_import(resolution(("east", "west")))) == (
        True,
        True,
    )
    del stored["status"]
    assert service_import_change(stored, desired)[1]


def test_owned_by_import_and_same_conditions() -> None:
    ref = {"kind": "ServiceImport", "name": "web", "uid": "u", "controller": True}
    assert owned_by_import({"metadata": {"ownerReferences": [ref]}}, "u")
    assert not owned_by_import({"metadata": {"ownerReferences": [ref]}}, "v")
    assert not owned_by_import({"metadata": {}}, "u")
    a = {"type": "Valid", "status": "True"}
    b = {"type": "Ready", "status": "True"}
    assert same_conditions([a, b], [b, a])
    assert not same_conditions([a], [a, b])
    assert same_conditions(None, [])
    assert not same_conditions(None, [a])
