"""Multi-Cluster Services (KEP-1645): the pure half of the MCS controller, no I/O.

:func:`derived_service_name` (as kubernetes-sigs/mcs-api computes it), :func:`read_export`,
:func:`resolve_import` (the oldest export decides; the result does not depend on the order of
the exports, so every cluster computes the same import and Conflict condition),
:func:`service_import`, :func:`derived_service`, the export conditions, and the imported slices
planned by the same :class:`~.planner.Reconciler`. Ports merge oldest first by name; a port that
clashes on name, or on protocol and number, is left out and its cluster does not serve it
(:attr:`ImportResolution.cluster_ports`); any difference is a ``PortConflict``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from .config import ReconcilerConfig
from .desired import IPV4, IPV6, DesiredEndpoints, EndpointGroup
from .endpoints import Endpoint, endpoint_from_dict, new_endpoint
from .labels import LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LabelsFunc
from .plan import Plan
from .planner import Reconciler
from .ports import ports_from_dicts

__all__ = [
    "ABOUT_API_VERSION",
    "ABOUT_GROUP",
    "ANNOTATION_DERIVED_SERVICE",
    "CLUSTER_ID_PROPERTY",
    "CONDITION_CONFLICT",
    "CONDITION_READY",
    "CONDITION_VALID",
    "CONFLICT_REASONS",
    "ENDPOINT_SLICES_ABSENT",
    "ENDPOINT_SLICES_PRESENT",
    "EXPORT_CONDITION_TYPES",
    "LABEL_MCS_SERVICE_NAME",
    "LABEL_SOURCE_CLUSTER",
    "MCS_API_VERSION",
    "MCS_GROUP",
    "MCS_VERSION",
    "REASON_ANNOTATIONS_CONFLICT",
    "REASON_FAILED",
    "REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT",
    "REASON_INVALID_SERVICE_TYPE",
    "REASON_IP_FAMILY_CONFLICT",
    "REASON_LABELS_CONFLICT",
    "REASON_NO_CONFLICTS",
    "REASON_NO_SERVICE",
    "REASON_PENDING",
    "REASON_PORT_CONFLICT",
    "REASON_READY",
    "REASON_SESSION_AFFINITY_CONFIG_CONFLICT",
    "REASON_SESSION_AFFINITY_CONFLICT",
    "REASON_TRAFFIC_DISTRIBUTION_CONFLICT",
    "REASON_TYPE_CONFLICT",
    "REASON_VALID",
    "TYPE_CLUSTER_SET_IP",
    "TYPE_HEADLESS",
    "ExportedService",
    "ImportPort",
    "ImportResolution",
    "InvalidExport",
    "cluster_id_of",
    "derived_service",
    "derived_service_change",
    "derived_service_name",
    "desired_from_source_slices",
    "endpoint_slice_objects",
    "export_conditions",
    "import_slice_labels",
    "is_cluster_id",
    "merge_conditions",
    "owned_by_import",
    "plan_import_slices",
    "read_export",
    "resolve_import",
    "same_conditions",
    "service_import",
    "service_import_change",
]

MCS_GROUP = "multicluster.x-k8s.io"
MCS_VERSION = "v1beta1"
"""The version of ServiceExports and ServiceImports the operator reads and writes (the CRDs'
storage version)."""
MCS_API_VERSION = f"{MCS_GROUP}/{MCS_VERSION}"
ABOUT_GROUP = "about.k8s.io"
ABOUT_API_VERSION = f"{ABOUT_GROUP}/v1beta1"
CLUSTER_ID_PROPERTY = "cluster.clusterset.k8s.io"
"""The name of the cluster-scoped ``ClusterProperty`` whose ``spec.value`` is the cluster id."""

LABEL_MCS_SERVICE_NAME = "multicluster.kubernetes.io/service-name"
LABEL_SOURCE_CLUSTER = "multicluster.kubernetes.io/source-cluster"
ANNOTATION_DERIVED_SERVICE = "multicluster.kubernetes.io/derived-service"

TYPE_CLUSTER_SET_IP = "ClusterSetIP"
TYPE_HEADLESS = "Headless"

ENDPOINT_SLICES_PRESENT = "Present"
ENDPOINT_SLICES_ABSENT = "Absent"
"""The values of a ServiceImport's ``status.endpointSliceObjects`` (KEP-1645, since
kubernetes/enhancements PR #6037): whether imported EndpointSlices exist for it here."""

CONDITION_VALID = "Valid"
CONDITION_READY = "Ready"
CONDITION_CONFLICT = "Conflict"
EXPORT_CONDITION_TYPES = (CONDITION_VALID, CONDITION_READY, CONDITION_CONFLICT)

REASON_VALID = "Valid"
REASON_NO_SERVICE = "NoService"
REASON_INVALID_SERVICE_TYPE = "InvalidServiceType"
REASON_READY = "Ready"
REASON_PENDING = "Pending"
REASON_FAILED = "Failed"
REASON_PORT_CONFLICT = "PortConflict"
REASON_TYPE_CONFLICT = "TypeConflict"
REASON_SESSION_AFFINITY_CONFLICT = "SessionAffinityConflict"
REASON_SESSION_AFFINITY_CONFIG_CONFLICT = "SessionAffinityConfigConflict"
REASON_ANNOTATIONS_CONFLICT = "AnnotationsConflict"
REASON_LABELS_CONFLICT = "LabelsConflict"
REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT = "InternalTrafficPolicyConflict"
REASON_TRAFFIC_DISTRIBUTION_CONFLICT = "TrafficDistributionConflict"
REASON_IP_FAMILY_CONFLICT = "IPFamilyConflict"
REASON_NO_CONFLICTS = "NoConflicts"

CONFLICT_REASONS = (
    REASON_PORT_CONFLICT,
    REASON_TYPE_CONFLICT,
    REASON_SESSION_AFFINITY_CONFLICT,
    REASON_SESSION_AFFINITY_CONFIG_CONFLICT,
    REASON_ANNOTATIONS_CONFLICT,
    REASON_LABELS_CONFLICT,
    REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT,
    REASON_TRAFFIC_DISTRIBUTION_CONFLICT,
    REASON_IP_FAMILY_CONFLICT,
)
"""Every conflict reason, in the order they are comma-joined in a Conflict condition."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LATEST = datetime.max.replace(tzinfo=UTC)


def derived_service_name(namespace: str, name: str) -> str:
    """``derived-`` + the first 10 characters of lowercase unpadded base32hex(sha256("ns/name"))."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return "derived-" + base64.b32hexencode(digest).decode("ascii").rstrip("=").lower()[:10]


def is_cluster_id(value: object) -> bool:
    """True for a valid cluster id: an RFC 1123 DNS label (at most 63 characters)."""
    return isinstance(value, str) and len(value) <= 63 and _DNS_LABEL.match(value) is not None


def cluster_id_of(cluster_property: Mapping[str, Any] | None) -> str | None:
    """The cluster id held by a ``cluster.clusterset.k8s.io`` ClusterProperty, or ``None``.

    ``None`` for a missing object, another property, or a value that is not a DNS label.
    """
    if not isinstance(cluster_property, Mapping):
        return None
    metadata = cluster_property.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("name") != CLUSTER_ID_PROPERTY:
        return None
    spec = cluster_property.get("spec")
    value = spec.get("value") if isinstance(spec, Mapping) else None
    return value if is_cluster_id(value) else None


@dataclass(frozen=True, order=True)
class ImportPort:
    """One port of an exported Service, as a ServiceImport lists it."""

    name: str
    protocol: str
    port: int
    app_protocol: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name, "protocol": self.protocol, "port": self.port}
        if self.app_protocol is not None:
            body["appProtocol"] = self.app_protocol
        return body


def _items(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple(
        sorted((k, v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str))
    )


def _canonical_json(value: object) -> str | None:
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _parse_timestamp(value: object) -> datetime:
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return _LATEST
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return _LATEST


@dataclass(frozen=True)
class ExportedService:
    """What one cluster exports: its ServiceExport and Service, reduced to what an import uses.

    ``created`` is the ServiceExport's ``creationTimestamp`` (a missing or unreadable one sorts
    last). Labels and annotations are the export's ``exportedLabels`` and
    ``exportedAnnotations`` as sorted items; ``session_affinity_config`` is canonical JSON.
    """

    cluster: str
    namespace: str
    name: str
    created: datetime
    type: str
    ports: tuple[ImportPort, ...]
    session_affinity: str = "None"
    session_affinity_config: str | None = None
    ip_families: tuple[str, ...] = ()
    internal_traffic_policy: str | None = None
    traffic_distribution: str | None = None
    exported_labels: tuple[tuple[str, str], ...] = ()
    exported_annotations: tuple[tuple[str, str], ...] = ()

    @property
    def order_key(self) -> tuple[datetime, str]:
        """Oldest first; ties broken by cluster id."""
        return (self.created, self.cluster)


@dataclass(frozen=True)
class InvalidExport:
    """A ServiceExport that cannot be exported: ``reason`` is a ``Valid=False`` reason."""

    cluster: str
    namespace: str
    name: str
    reason: str
    message: str


def _ports_of(spec: Mapping[str, Any]) -> tuple[ImportPort, ...]:
    raw = spec.get("ports")
    if not isinstance(raw, list):
        return ()
    ports: list[ImportPort] = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        number = entry.get("port")
        if not isinstance(number, int) or isinstance(number, bool):
            continue
        name = entry.get("name")
        protocol = entry.get("protocol")
        app_protocol = entry.get("appProtocol")
        ports.append(
            ImportPort(
                name=name if isinstance(name, str) else "",
                protocol=protocol if isinstance(protocol, str) and protocol else "TCP",
                port=number,
                app_protocol=app_protocol if isinstance(app_protocol, str) else None,
            )
        )
    return tuple(ports)


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def read_export(
    cluster: str, service_export: Mapping[str, Any], service: Mapping[str, Any] | None
) -> ExportedService | InvalidExport:
    """One cluster's ServiceExport and its Service (``None`` when there is none)."""
    metadata = service_export.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    namespace = namespace if isinstance(namespace, str) else ""
    name = name if isinstance(name, str) else ""
    if not isinstance(service, Mapping):
        return InvalidExport(
            cluster, namespace, name, REASON_NO_SERVICE, f"Service {namespace}/{name} not found"
        )
    spec = service.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    service_type = spec.get("type")
    if service_type == "ExternalName":
        return InvalidExport(
            cluster,
            namespace,
            name,
            REASON_INVALID_SERVICE_TYPE,
            "Service type ExternalName is not supported for export",
        )
    export_spec = service_export.get("spec")
    export_spec = export_spec if isinstance(export_spec, Mapping) else {}
    families = spec.get("ipFamilies")
    affinity = spec.get("sessionAffinity")
    return ExportedService(
        cluster=cluster,
        namespace=namespace,
        name=name,
        created=_parse_timestamp(metadata.get("creationTimestamp")),
        type=TYPE_HEADLESS if spec.get("clusterIP") == "None" else TYPE_CLUSTER_SET_IP,
        ports=_ports_of(spec),
        session_affinity=affinity if isinstance(affinity, str) and affinity else "None",
        session_affinity_config=_canonical_json(spec.get("sessionAffinityConfig")),
        ip_families=tuple(f for f in families if isinstance(f, str))
        if isinstance(families, list)
        else (),
        internal_traffic_policy=_str_or_none(spec.get("internalTrafficPolicy")),
        traffic_distribution=_str_or_none(spec.get("trafficDistribution")),
        exported_labels=_items(export_spec.get("exportedLabels")),
        exported_annotations=_items(export_spec.get("exportedAnnotations")),
    )


@dataclass(frozen=True)
class ImportResolution:
    """The merged view of one Service's exports, the same in every cluster.

    ``clusters`` are the exporting cluster ids, sorted; ``decided_by`` the cluster of the oldest
    export; ``conflicts`` the conflict reasons in :data:`CONFLICT_REASONS` order;
    ``cluster_ports`` the port names each cluster serves; ``conflict_message`` says which
    clusters differ, in words built from the exports alone.
    """

    namespace: str
    name: str
    type: str
    ports: tuple[ImportPort, ...]
    session_affinity: str
    session_affinity_config: str | None
    ip_families: tuple[str, ...]
    internal_traffic_policy: str | None
    traffic_distribution: str | None
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    clusters: tuple[str, ...]
    decided_by: str
    conflicts: tuple[str, ...]
    conflict_message: str
    cluster_ports: Mapping[str, frozenset[str]] = field(hash=False, compare=True)

    @property
    def derived_name(self) -> str:
        return derived_service_name(self.namespace, self.name)

    @property
    def conflict_reason(self) -> str:
        """The Conflict condition's reason: the conflicts comma-joined, or ``NoConflicts``."""
        return ",".join(self.conflicts) if self.conflicts else REASON_NO_CONFLICTS


_COMPARED: tuple[tuple[str, str, str], ...] = (
    # (ExportedService attribute, conflict reason, words for the message)
    ("type", REASON_TYPE_CONFLICT, "type"),
    ("session_affinity", REASON_SESSION_AFFINITY_CONFLICT, "session affinity"),
    ("session_affinity_config", REASON_SESSION_AFFINITY_CONFIG_CONFLICT, "session affinity config"),
    ("exported_annotations", REASON_ANNOTATIONS_CONFLICT, "exported annotations"),
    ("exported_labels", REASON_LABELS_CONFLICT, "exported labels"),
    ("internal_traffic_policy", REASON_INTERNAL_TRAFFIC_POLICY_CONFLICT, "internal traffic policy"),
    ("traffic_distribution", REASON_TRAFFIC_DISTRIBUTION_CONFLICT, "traffic distribution"),
    ("ip_families", REASON_IP_FAMILY_CONFLICT, "IP families"),
)
"""Compared after the ports, in :data:`CONFLICT_REASONS` order (so the reasons come out in it)."""


def _merge_ports(
    ordered: Sequence[ExportedService],
) -> tuple[tuple[ImportPort, ...], dict[str, frozenset[str]]]:
    accepted: dict[str, ImportPort] = {}
    taken: set[tuple[str, int]] = set()
    served: dict[str, set[str]] = {export.cluster: set() for export in ordered}
    for export in ordered:
        for port in export.ports:
            known = accepted.get(port.name)
            if known is not None:
                if (known.protocol, known.port) == (port.protocol, port.port):
                    served[export.cluster].add(port.name)
                continue
            if (port.protocol, port.port) in taken:
                continue
            if accepted and (port.name == "" or "" in accepted):
                continue
            accepted[port.name] = port
            taken.add((port.protocol, port.port))
            served[export.cluster].add(port.name)
    return tuple(accepted.values()), {c: frozenset(names) for c, names in served.items()}


def resolve_import(exports: Iterable[ExportedService]) -> ImportResolution | None:
    """Merge the valid exports of one Service (one per cluster); ``None`` when there are none.

    Of several exports naming the same cluster, only the one that sorts first counts. Raises
    ``ValueError`` when the exports are not of one namespace and name (a caller's mistake).
    """
    by_cluster: dict[str, ExportedService] = {}
    for export in sorted(exports, key=_total_order):
        by_cluster.setdefault(export.cluster, export)
    if not by_cluster:
        return None
    ordered = list(by_cluster.values())  # oldest first: inserted in that order
    oldest = ordered[0]
    if any((e.namespace, e.name) != (oldest.namespace, oldest.name) for e in ordered):
        raise ValueError("resolve_import takes the exports of one Service")
    ports, cluster_ports = _merge_ports(ordered)
    conflicts: list[str] = []
    sentences: list[str] = []
    differing_ports = sorted(
        e.cluster for e in ordered if frozenset(e.ports) != frozenset(oldest.ports)
    )
    if differing_ports:
        conflicts.append(REASON_PORT_CONFLICT)
        left_out = "".join(
            f"; {e.cluster}'s {'/'.join(str(x) for x in (p.name, p.protocol, p.port) if x)} is "
            f"left out, its name or protocol and number being taken, and {e.cluster} does not "
            "serve it"
            for e in ordered
            for p in e.ports
            if p.name not in cluster_ports[e.cluster]
        )
        sentences.append(
            f"ports of {', '.join(differing_ports)} differ from {oldest.cluster}'s: the import "
            f"has the union of the ports (merged by name, oldest export first{left_out})"
        )
    words: list[str] = []
    for attribute, reason, label in _COMPARED:
        decided = getattr(oldest, attribute)
        differing = sorted(e.cluster for e in ordered if getattr(e, attribute) != decided)
        if differing:
            conflicts.append(reason)
            words.append(f"{label} of {', '.join(differing)} differ from {oldest.cluster}'s")
    if words:
        sentences.append(
            f"{'; '.join(words)}: the oldest export (cluster {oldest.cluster}) decides"
        )
    message = "; ".join(sentences) or f"the exports of {len(ordered)} cluster(s) agree"
    return ImportResolution(
        namespace=oldest.namespace,
        name=oldest.name,
        type=oldest.type,
        ports=ports,
        session_affinity=oldest.session_affinity,
        session_affinity_config=oldest.session_affinity_config,
        ip_families=oldest.ip_families,
        internal_traffic_policy=oldest.internal_traffic_policy,
        traffic_distribution=oldest.traffic_distribution,
        labels=oldest.exported_labels,
        annotations=oldest.exported_annotations,
        clusters=tuple(sorted(by_cluster)),
        decided_by=oldest.cluster,
        conflicts=tuple(conflicts),
        conflict_message=message,
        cluster_ports=cluster_ports,
    )


def _total_order(export: ExportedService) -> tuple[datetime, str, str]:
    # The order key, then the export's full content, so that duplicates of one cluster pick
    # the same winner whatever order they come in.
    return (export.created, export.cluster, repr(export))


def _derived_addresses(derived: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    if not isinstance(derived, Mapping):
        return [], []
    spec = derived.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    ips = spec.get("clusterIPs")
    families = spec.get("ipFamilies")
    if not isinstance(ips, list) or not isinstance(families, list):
        return [], []
    pairs = [
        (ip, family)
        for ip, family in zip(ips, families, strict=False)
        if isinstance(ip, str) and ip not in ("", "None") and isinstance(family, str)
    ]
    return [ip for ip, _ in pairs], [family for _, family in pairs]


def endpoint_slice_objects(imported_slices: Iterable[object]) -> str:
    """A ServiceImport's ``status.endpointSliceObjects``: ``Present`` when this cluster holds
    at least one imported EndpointSlice of the import (of any source cluster, whatever its
    endpoints), ``Absent`` when it holds none.

    The operator imports every source cluster's endpoints as slices, ClusterSetIP and Headless
    alike, and writes no placeholder: a source whose Service has no endpoints has no imported
    slice, so an import whose exporters all have none is ``Absent`` until one has an endpoint.
    """
    return ENDPOINT_SLICES_PRESENT if any(True for _ in imported_slices) else ENDPOINT_SLICES_ABSENT


def service_import(
    resolution: ImportResolution,
    derived: Mapping[str, Any] | None = None,
    *,
    endpoint_slices: str | None = None,
) -> dict[str, Any]:
    """The ServiceImport a cluster holds for ``resolution`` (metadata, spec and status).

    ``derived`` is the derived Service as read back from the server: for ``ClusterSetIP`` its
    ``clusterIPs`` become ``spec.ips`` and its ``ipFamilies`` ``spec.ipFamilies`` (so both have
    the same length; empty until the Service is allocated). A Headless import has no ips.
    ``endpoint_slices`` (:func:`endpoint_slice_objects`) becomes
    ``status.endpointSliceObjects``; ``None`` leaves it out (not compared, not written).
    """
    spec: dict[str, Any] = {
        "type": resolution.type,
        "ports": [port.to_json() for port in resolution.ports],
        "sessionAffinity": resolution.session_affinity,
    }
    if resolution.type == TYPE_CLUSTER_SET_IP:
        ips, families = _derived_addresses(derived)
        if ips:
            spec["ips"] = ips
            spec["ipFamilies"] = families
    elif resolution.ip_families:
        spec["ipFamilies"] = list(resolution.ip_families)
    if resolution.session_affinity_config is not None:
        spec["sessionAffinityConfig"] = json.loads(resolution.session_affinity_config)
    if resolution.internal_traffic_policy is not None:
        spec["internalTrafficPolicy"] = resolution.internal_traffic_policy
    if resolution.traffic_distribution is not None:
        spec["trafficDistribution"] = resolution.traffic_distribution
    annotations = dict(resolution.annotations)
    annotations[ANNOTATION_DERIVED_SERVICE] = resolution.derived_name
    status: dict[str, Any] = {"clusters": [{"cluster": cluster} for cluster in resolution.clusters]}
    if endpoint_slices is not None:
        status["endpointSliceObjects"] = endpoint_slices
    return {
        "apiVersion": MCS_API_VERSION,
        "kind": "ServiceImport",
        "metadata": {
            "name": resolution.name,
            "namespace": resolution.namespace,
            "labels": dict(resolution.labels),
            "annotations": annotations,
        },
        "spec": spec,
        "status": status,
    }


def derived_service(
    resolution: ImportResolution, import_uid: str, *, managed_by: str
) -> dict[str, Any]:
    """The selectorless derived Service, owned by the ServiceImport with uid ``import_uid``.

    ClusterIP (``clusterIP: None`` for a Headless import), the import's ports (no targetPort:
    the imported slices carry the source clusters' target ports), session affinity, traffic
    policies, and IP families: a dual-stack import asks for ``PreferDualStack`` so that a
    single-stack cluster still allocates it. ``managed_by`` becomes the
    ``endpointslice.kubernetes.io/managed-by`` label the operator uses as its marker.
    """
    spec: dict[str, Any] = {
        "type": "ClusterIP",
        "ports": [port.to_json() for port in resolution.ports],
        "sessionAffinity": resolution.session_affinity,
    }
    if resolution.type == TYPE_HEADLESS:
        spec["clusterIP"] = "None"
    if resolution.ip_families:
        spec["ipFamilies"] = list(resolution.ip_families)
        spec["ipFamilyPolicy"] = (
            "PreferDualStack" if len(resolution.ip_families) > 1 else "SingleStack"
        )
    if resolution.session_affinity_config is not None and resolution.session_affinity != "None":
        spec["sessionAffinityConfig"] = json.loads(resolution.session_affinity_config)
    if resolution.internal_traffic_policy is not None:
        spec["internalTrafficPolicy"] = resolution.internal_traffic_policy
    if resolution.traffic_distribution is not None:
        spec["trafficDistribution"] = resolution.traffic_distribution
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": resolution.derived_name,
            "namespace": resolution.namespace,
            "labels": {
                LABEL_MCS_SERVICE_NAME: resolution.name,
                LABEL_MANAGED_BY: managed_by,
            },
            "ownerReferences": [
                {
                    "apiVersion": MCS_API_VERSION,
                    "kind": "ServiceImport",
                    "name": resolution.name,
                    "uid": import_uid,
                    "controller": True,
                }
            ],
        },
        "spec": spec,
    }


_MUTABLE_SPEC_FIELDS = (
    "ports",
    "sessionAffinity",
    "sessionAffinityConfig",
    "internalTrafficPolicy",
    "trafficDistribution",
)


def _port_view(ports: object) -> list[tuple[str, str, int, str | None]]:
    if not isinstance(ports, list):
        return []
    return [(p.name, p.protocol, p.port, p.app_protocol) for p in _ports_of({"ports": ports})]


def derived_service_change(
    existing: Mapping[str, Any], desired: Mapping[str, Any]
) -> Literal["none", "update", "replace"]:
    """What it takes to turn ``existing`` (as read) into ``desired`` (:func:`derived_service`).

    ``replace`` when the headlessness or the IP families differ (immutable once allocated),
    ``update`` when a field the operator sets differs, ``none`` otherwise. Fields the server
    fills in (clusterIPs, targetPorts, defaults for unset fields) are not compared.
    """
    old = existing.get("spec")
    old = old if isinstance(old, Mapping) else {}
    new = desired.get("spec")
    new = new if isinstance(new, Mapping) else {}
    if (old.get("clusterIP") == "None") != (new.get("clusterIP") == "None"):
        return "replace"
    wanted_families = new.get("ipFamilies")
    if wanted_families is not None and old.get("ipFamilies") not in (None, wanted_families):
        families = old.get("ipFamilies")
        # A PreferDualStack Service on a single-stack cluster holds only the first family.
        if not (
            isinstance(families, list)
            and new.get("ipFamilyPolicy") == "PreferDualStack"
            and families == wanted_families[: len(families)]
        ):
            return "replace"
    for key in _MUTABLE_SPEC_FIELDS:
        if key not in new:
            continue
        if key == "ports":
            if _port_view(old.get("ports")) != _port_view(new.get("ports")):
                return "update"
        elif old.get(key) != new.get(key):
            return "update"
    return "none"


def service_import_change(
    current: Mapping[str, Any], desired: Mapping[str, Any]
) -> tuple[bool, bool]:
    """What it takes to turn the stored ServiceImport ``current`` into ``desired`` (a
    :func:`service_import` with the managed-by label): (an update of its spec, labels and
    annotations; a write of its ``status.clusters`` or, when ``desired`` has one, its
    ``status.endpointSliceObjects``)."""
    old_meta = current.get("metadata")
    old_meta = old_meta if isinstance(old_meta, Mapping) else {}
    new_meta = desired["metadata"]
    update = (
        current.get("spec") != desired["spec"]
        or (old_meta.get("labels") or {}) != new_meta["labels"]
        or (old_meta.get("annotations") or {}) != new_meta["annotations"]
    )
    status = current.get("status")
    status = status if isinstance(status, Mapping) else {}
    wanted = desired["status"]
    write = status.get("clusters") != wanted["clusters"] or (
        "endpointSliceObjects" in wanted
        and status.get("endpointSliceObjects") != wanted["endpointSliceObjects"]
    )
    return update, write


def owned_by_import(obj: Mapping[str, Any], import_uid: str) -> bool:
    """Whether ``obj`` (a derived Service) has an owner reference to the ServiceImport with
    uid ``import_uid``."""
    metadata = obj.get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    return any(
        isinstance(ref, Mapping)
        and ref.get("kind") == "ServiceImport"
        and ref.get("uid") == import_uid
        for ref in (refs if isinstance(refs, list) else ())
    )


def same_conditions(current: object, merged: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the stored ``status.conditions`` equal ``merged`` (:func:`merge_conditions`)
    in any order: no status write is needed then."""
    if not isinstance(current, list):
        return not merged

    def canonical(items: Sequence[Any]) -> list[str]:
        return sorted(json.dumps(item, sort_keys=True) for item in items)

    return canonical(current) == canonical(merged)


def export_conditions(
    export: ExportedService | InvalidExport,
    resolution: ImportResolution | None,
    *,
    imported: bool,
    failure: str | None = None,
) -> list[dict[str, str]]:
    """The Valid, Ready and Conflict conditions of one cluster's ServiceExport.

    ``resolution`` is the merged import of every cluster's exports (``None`` while not known);
    ``imported`` is whether this cluster's import side has taken the export in;
    ``failure`` a message for ``Ready=False/Failed`` (the import side cannot be written).
    Invalid exports get ``Valid=False`` and ``Ready=False/Failed`` and no Conflict condition.
    Conditions carry no ``lastTransitionTime``: :func:`merge_conditions` sets it.
    """
    if isinstance(export, InvalidExport):
        return [
            _condition(CONDITION_VALID, "False", export.reason, export.message),
            _condition(CONDITION_READY, "False", REASON_FAILED, export.message),
        ]
    conditions = [_condition(CONDITION_VALID, "True", REASON_VALID, "Service is valid for export")]
    if failure is not None:
        conditions.append(_condition(CONDITION_READY, "False", REASON_FAILED, failure))
    elif imported and resolution is not None and export.cluster in resolution.clusters:
        conditions.append(
            _condition(
                CONDITION_READY, "True", REASON_READY, "Service is exported to the clusterset"
            )
        )
    else:
        conditions.append(
            _condition(CONDITION_READY, "False", REASON_PENDING, "Service is being exported")
        )
    if resolution is not None and export.cluster in resolution.clusters:
        status = "True" if resolution.conflicts else "False"
        conditions.append(
            _condition(
                CONDITION_CONFLICT, status, resolution.conflict_reason, resolution.conflict_message
            )
        )
    return conditions


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def merge_conditions(
    existing: object,
    desired: Sequence[Mapping[str, str]],
    *,
    now: datetime,
    generation: int | None = None,
) -> list[dict[str, Any]]:
    """The new ``status.conditions``: ``desired`` merged into ``existing``.

    A condition keeps its ``lastTransitionTime`` while its status stays the same (as
    ``meta.SetStatusCondition`` does); conditions of other types than
    :data:`EXPORT_CONDITION_TYPES` are kept as they are; ours that are not desired are removed.
    The result equals ``existing`` when nothing changed, so comparing them tells whether a
    status write is needed.
    """
    current: dict[str, Mapping[str, Any]] = {}
    others: list[dict[str, Any]] = []
    if isinstance(existing, list):
        for entry in existing:
            if not isinstance(entry, Mapping):
                continue
            kind = entry.get("type")
            if kind in EXPORT_CONDITION_TYPES:
                current[str(kind)] = entry
            else:
                others.append(dict(entry))
    stamp = _format_time(now)
    merged: list[dict[str, Any]] = []
    for wanted in desired:
        old = current.get(wanted["type"])
        written: dict[str, Any] = dict(wanted)
        if (
            old is not None
            and old.get("status") == wanted["status"]
            and old.get("lastTransitionTime")
        ):
            written["lastTransitionTime"] = old["lastTransitionTime"]
        else:
            written["lastTransitionTime"] = stamp
        if generation is not None:
            written["observedGeneration"] = generation
        merged.append(written)
    return others + merged


def _format_time(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- imported EndpointSlices ---------------------------------------------------------------------


def _rank(endpoint: Endpoint) -> tuple[bool, bool]:
    # Of two copies of one endpoint (two managers' slices), the ready one wins, then serving:
    # the view's and kube-proxy's preference.
    ready, serving = endpoint.state[2], endpoint.state[3]
    return (ready is not False, serving is not False)


def desired_from_source_slices(
    source_slices: Iterable[Mapping[str, Any]], served_ports: Iterable[str]
) -> DesiredEndpoints:
    """The desired endpoints of one source cluster's import, from its EndpointSlices.

    ``source_slices`` are every slice of the exported Service in the source cluster, whoever
    manages them (``kubernetes.io/service-name`` = the Service). Only IPv4 and IPv6 slices count;
    each slice's ports are narrowed to ``served_ports`` (the names
    :attr:`ImportResolution.cluster_ports` gives the cluster) and a slice left without ports is
    skipped. Endpoints keep their addresses, hostname, conditions, zone and targetRef; their
    ``nodeName`` is dropped (it names a node of another cluster, which kube-proxy here would
    take for one of its own) and so are hints. An endpoint found in several slices (two
    managers) is kept once: ready first, then serving, then the slice whose name sorts first.
    """
    served = frozenset(served_ports)
    desired = DesiredEndpoints.empty((IPV4, IPV6))
    ordered = sorted(
        (s for s in source_slices if isinstance(s, Mapping)),
        key=lambda s: str((s.get("metadata") or {}).get("name") or ""),
    )
    for source in ordered:
        address_type = source.get("addressType")
        if address_type not in (IPV4, IPV6):
            continue
        raw_ports = source.get("ports")
        ports = [
            p
            for p in (raw_ports if isinstance(raw_ports, list) else ())
            if isinstance(p, Mapping) and (p.get("name") or "") in served
        ]
        if not ports:
            continue
        key = ports_from_dicts(ports)
        groups = desired.groups[str(address_type)]
        group = groups.get(key)
        if group is None:
            group = groups[key] = EndpointGroup(key)
        endpoints = source.get("endpoints")
        for raw in endpoints if isinstance(endpoints, list) else ():
            if not isinstance(raw, Mapping):
                continue
            parsed = endpoint_from_dict(raw)
            if not parsed.addresses:
                continue
            state = (None, *parsed.state[1:])
            endpoint = new_endpoint(parsed.key, state, parsed.addresses, parsed.hostname)
            known = group.endpoints.get(endpoint.key)
            if known is None or _rank(endpoint) > _rank(known):
                group.endpoints[endpoint.key] = endpoint
    return desired


def import_slice_labels(import_name: str, derived_name: str, cluster: str) -> LabelsFunc:
    """The labels of an imported slice, as a labels callback for the planner.

    ``multicluster.kubernetes.io/service-name`` (the import), ``.../source-cluster``,
    ``kubernetes.io/service-name`` (the derived Service: what makes kube-proxy program the
    slice) and managed-by. Any other label on a slice is removed (``changed``).
    """
    wanted = {LABEL_MCS_SERVICE_NAME: import_name, LABEL_SOURCE_CLUSTER: cluster}

    def labels(
        current: Mapping[str, str] | None, controller_name: str
    ) -> tuple[dict[str, str], bool]:
        others = {
            k: v
            for k, v in (current or {}).items()
            if k not in (LABEL_MANAGED_BY, LABEL_SERVICE_NAME)
        }
        desired = dict(wanted)
        desired[LABEL_SERVICE_NAME] = derived_name
        desired[LABEL_MANAGED_BY] = controller_name
        changed = others != wanted or (
            current is not None and current.get(LABEL_SERVICE_NAME) != derived_name
        )
        return desired, changed

    return labels


def plan_import_slices(
    service_import: Mapping[str, Any],
    cluster: str,
    source_slices: Iterable[Mapping[str, Any]] | None,
    existing_slices: Iterable[Mapping[str, Any]],
    config: ReconcilerConfig,
    *,
    served_ports: Iterable[str] = (),
) -> Plan:
    """Plan the imported slices of one source cluster for one ServiceImport.

    ``service_import`` is the ServiceImport as stored (its uid owns the slices);
    ``source_slices`` the cluster's slices of the exported Service, ``None`` when the cluster
    no longer exports it (then every one of its imported slices is deleted);
    ``existing_slices`` the imported slices of this import managed by ``config.controller_name``
    (those of other source clusters are left out here). The planner runs without placeholder
    and without topology hints; each slice holds the endpoints of this one cluster.
    """
    metadata = service_import.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace = str(metadata.get("namespace") or "")
    name = str(metadata.get("name") or "")
    owner = dict(service_import)
    owner.setdefault("apiVersion", MCS_API_VERSION)
    owner.setdefault("kind", "ServiceImport")
    desired = (
        desired_from_source_slices(source_slices, served_ports)
        if source_slices is not None
        else DesiredEndpoints.empty((IPV4, IPV6))
    )
    mine = [
        s
        for s in existing_slices
        if ((s.get("metadata") or {}).get("labels") or {}).get(LABEL_SOURCE_CLUSTER) == cluster
    ]
    import_config = config.model_copy(update={"placeholder": False, "topology_hints": False})
    return Reconciler(import_config).plan(
        owner,
        desired,
        mine,
        labels=import_slice_labels(name, derived_service_name(namespace, name), cluster),
    )
