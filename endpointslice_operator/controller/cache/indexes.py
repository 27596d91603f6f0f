"""In-memory indexes of the watched objects, kept as slim projections.

Fed by the event handlers, read by the syncs: nothing on the hot path asks the API server.
:class:`ServiceIndex` (slim Services, the opt-in :class:`~.optin.Decision`, label anchors ->
managed Services), :class:`PodIndex` (``PodRecord`` per pod, ``(key, value) -> pods``),
:class:`NodeIndex`, :class:`SliceIndex` (our slices per Service, and which Services also have
kube-controller-manager's). Each counts its objects for readiness.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.cache.claims import ClaimIndex
from endpointslice_operator.controller.cache.endpoints_index import EndpointsIndex
from endpointslice_operator.controller.cache.optin import (
    UPSTREAM_CONTROLLER_NAME,
    Decision,
    evaluate,
)
from endpointslice_operator.controller.cache.owner_kinds import owner_of_slice, split_owner_key
from endpointslice_operator.controller.cache.selectors import Operator, Selector
from endpointslice_operator.reconciler.cached_slice import CachedSlice, PodLookup
from endpointslice_operator.reconciler.compact import shared_strings
from endpointslice_operator.reconciler.mirroring import MIRRORING_CONTROLLER_NAME
from endpointslice_operator.reconciler.records import PodRecord

__all__ = [
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "Indexes",
    "NodeIndex",
    "PodIndex",
    "ServiceEntry",
    "ServiceIndex",
    "SliceIndex",
    "service_key",
    "slim_node",
    "slim_service",
    "split_key",
]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"

# Service annotations the reconciler reads (topology mode); ours are added per operator.
_TOPOLOGY_ANNOTATIONS = (
    "service.kubernetes.io/topology-mode",
    "service.kubernetes.io/topology-aware-hints",
)
_SERVICE_SPEC_FIELDS = (
    "type",
    "clusterIP",
    "clusterIPs",
    "ipFamilies",
    "ports",
    "publishNotReadyAddresses",
    "trafficDistribution",
    "selector",
)
_NODE_ROLE_LABELS = (
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
)
_ZONE_LABEL = "topology.kubernetes.io/zone"

Anchor = tuple[str, str | None]


def service_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def split_key(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def slim_service(service: Mapping[str, Any], keep_annotations: Iterable[str]) -> dict[str, Any]:
    """The parts of a Service the reconciler, the opt-in rules and Events read."""
    metadata = _mapping(service.get("metadata"))
    spec = _mapping(service.get("spec"))
    annotations = _mapping(metadata.get("annotations"))
    kept = {
        k: annotations[k] for k in (*_TOPOLOGY_ANNOTATIONS, *keep_annotations) if k in annotations
    }
    slim_meta: dict[str, Any] = {
        key: metadata[key]
        for key in (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "labels",
        )
        if key in metadata
    }
    if kept:
        slim_meta["annotations"] = kept
    # Repeated strings (keys, "ClusterIP", "IPv4", "TCP", label and selector keys) shared.
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": shared_strings(slim_meta),
        "spec": shared_strings({key: spec[key] for key in _SERVICE_SPEC_FIELDS if key in spec}),
    }


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """Name, zone and role labels, allocatable CPU and the Ready condition of a Node."""
    metadata = _mapping(node.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    status = _mapping(node.get("status"))
    allocatable = _mapping(status.get("allocatable"))
    conditions = status.get("conditions")
    ready = [
        {"type": "Ready", "status": c.get("status")}
        for c in (conditions if isinstance(conditions, list) else ())
        if isinstance(c, Mapping) and c.get("type") == "Ready"
    ]
    slim: dict[str, Any] = {
        "metadata": {
            "name": metadata.get("name"),
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
            "labels": {k: labels[k] for k in (_ZONE_LABEL, *_NODE_ROLE_LABELS) if k in labels},
        },
        "status": {"conditions": ready},
    }
    if "cpu" in allocatable:
        slim["status"]["allocatable"] = {"cpu": allocatable["cpu"]}
    return slim


def identity(obj: Mapping[str, Any] | None) -> tuple[str, str]:
    """(uid, resourceVersion) of an object or slim projection; empty strings when unknown."""
    metadata = _mapping(obj.get("metadata")) if obj is not None else {}
    return str(metadata.get("uid") or ""), str(metadata.get("resourceVersion") or "")


def replaced_by_newer(held: tuple[str, str], incoming: tuple[str, str]) -> bool:
    """Whether an event is about an older object than the one held under the same name.

    Kopf processes events per object uid, so the events of a pod deleted and recreated under
    the same name (a StatefulSet's) may arrive in either order. When the uids differ, the
    resourceVersions are compared as numbers (what every API server uses, though the API calls
    them opaque) to keep the newer object; same uid, or anything unparseable: not older.
    """
    held_uid, held_rv = held
    uid, rv = incoming
    if not held_uid or not uid or held_uid == uid:
        return False
    try:
        return int(rv) < int(held_rv)
    except ValueError:
        return False


def node_zone(node: Mapping[str, Any] | None) -> str | None:
    if node is None:
        return None
    zone = _mapping(_mapping(node.get("metadata")).get("labels")).get(_ZONE_LABEL)
    return zone if isinstance(zone, str) else None


def node_ready(node: Mapping[str, Any] | None) -> bool:
    if node is None:
        return False
    conditions = _mapping(node.get("status")).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class ObjectEntry:
    """``namespace``, ``name`` and ``uid`` of an index entry's slim ``body`` (a mixin of the
    entry dataclasses)."""

    __slots__ = ()
    body: dict[str, Any]

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.body["metadata"].get("name") or "")

    @property
    def uid(self) -> str:
        return str(self.body["metadata"].get("uid") or "")


@dataclass(frozen=True, slots=True)
class ServiceEntry(ObjectEntry):
    key: str
    body: dict[str, Any]
    """Slim Service JSON (see :func:`slim_service`); never mutated."""
    decision: Decision

    @property
    def has_spec_selector(self) -> bool:
        return bool(self.body["spec"].get("selector"))


class _SelectorIndex:
    """Per namespace: label anchors -> Services whose selector requires them."""

    def __init__(self) -> None:
        self._buckets: dict[Anchor, set[str]] = defaultdict(set)
        self._scan: set[str] = set()
        self._anchors: dict[str, tuple[Anchor, ...]] = {}
        self._selectors: dict[str, Selector] = {}

    def __len__(self) -> int:
        return len(self._selectors)

    def put(self, key: str, selector: Selector) -> None:
        self.remove(key)
        anchors = tuple(selector.anchors())
        self._selectors[key] = selector
        self._anchors[key] = anchors
        if not anchors:
            self._scan.add(key)
        for anchor in anchors:
            self._buckets[anchor].add(key)

    def remove(self, key: str) -> None:
        if self._selectors.pop(key, None) is None:
            return
        self._scan.discard(key)
        for anchor in self._anchors.pop(key, ()):
            bucket = self._buckets.get(anchor)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._buckets[anchor]

    def matching(self, labels: Mapping[str, str]) -> set[str]:
        candidates = set(self._scan)
        for label, value in labels.items():
            for anchor in ((label, value), (label, None)):
                bucket = self._buckets.get(anchor)
                if bucket:
                    candidates.update(bucket)
        return {key for key in candidates if self._selectors[key].matches(labels)}


class ServiceIndex:
    def __init__(
        self,
        *,
        enabled_annotation: str,
        selector_annotation: str,
        managed_by: str,
        extra_annotations: Iterable[str] = (),
    ):
        self.enabled_annotation = enabled_annotation
        self.selector_annotation = selector_annotation
        self.extra_annotations = tuple(extra_annotations)
        """Further annotations of ours kept in the slim bodies (read by the syncs: the source,
        Endpoints and network ones)."""
        self.managed_by = managed_by
        self._entries: dict[str, ServiceEntry] = {}
        self._selectors: dict[str, _SelectorIndex] = defaultdict(_SelectorIndex)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> ServiceEntry | None:
        return self._entries.get(key)

    def keys(self) -> Iterator[str]:
        return iter(list(self._entries))

    def upsert(self, service: Mapping[str, Any]) -> tuple[ServiceEntry | None, ServiceEntry]:
        """Store a Service; returns (previous entry, new entry)."""
        body = slim_service(
            service,
            (self.enabled_annotation, self.selector_annotation, *self.extra_annotations),
        )
        # The full Service: a near miss of the opt-in (see optin.near_miss) may be an
        # annotation the slim body does not keep.
        decision = evaluate(
            service,
            enabled_annotation=self.enabled_annotation,
            selector_annotation=self.selector_annotation,
            managed_by=self.managed_by,
        )
        entry = ServiceEntry(service_key(_ns(body), _name(body)), body, decision)
        previous = self._entries.get(entry.key)
        self._entries[entry.key] = entry
        selectors = self._selectors[entry.namespace]
        if decision.managed and decision.selector is not None:
            selectors.put(entry.key, decision.selector)
        else:
            selectors.remove(entry.key)
        return previous, entry

    def remove(self, namespace: str, name: str) -> ServiceEntry | None:
        key = service_key(namespace, name)
        entry = self._entries.pop(key, None)
        selectors = self._selectors.get(namespace)
        if selectors is not None:
            selectors.remove(key)
            if not len(selectors):
                del self._selectors[namespace]
        return entry

    def names(self) -> list[tuple[str, str]]:
        """(namespace, name) of every Service held."""
        return [split_key(key) for key in self._entries]

    def put_selector(self, key: str, namespace: str, selector: Selector | None) -> None:
        """Enter (or, with None, drop) the pod selector of another owner kind (see
        :mod:`.owner_kinds`; ``key`` is its owner key) in the same per-namespace index, so that
        :meth:`selecting` names it beside the Services."""
        selectors = self._selectors[namespace]
        if selector is not None:
            selectors.put(key, selector)
            return
        selectors.remove(key)
        if not len(selectors):
            del self._selectors[namespace]

    def selecting(self, namespace: str, labels: Mapping[str, str]) -> set[str]:
        """Keys of the managed Services (and other owners, see :meth:`put_selector`) in
        ``namespace`` whose selector matches ``labels``."""
        selectors = self._selectors.get(namespace)
        return selectors.matching(labels) if selectors is not None else set()


def _ns(body: Mapping[str, Any]) -> str:
    return str(_mapping(body.get("metadata")).get("namespace") or "")


def _name(body: Mapping[str, Any]) -> str:
    return str(_mapping(body.get("metadata")).get("name") or "")


class _NamespacePods:
    __slots__ = ("by_label", "indexed", "pods")

    def __init__(self) -> None:
        self.pods: dict[str, PodRecord] = {}
        # A bucket is a dict used as an ordered set (values None): for the usual bucket of a
        # few to a few dozen pods it is half the size of a set.
        self.by_label: dict[tuple[str, str], dict[str, None]] = defaultdict(dict)
        self.indexed: set[str] = set()
        """Label keys with buckets in ``by_label``: those some selector has asked for."""

    def label(self, record: PodRecord) -> None:
        for key in self.indexed:
            value = record.labels.get(key)
            if value is not None:
                self.by_label[(key, value)][record.name] = None

    def unlabel(self, record: PodRecord) -> None:
        for key in self.indexed:
            value = record.labels.get(key)
            if value is None:
                continue
            names = self.by_label.get((key, value))
            if names is not None:
                names.pop(record.name, None)
                if not names:
                    del self.by_label[(key, value)]

    def index(self, key: str) -> None:
        """Start keeping buckets for ``key`` (one scan of the namespace's pods)."""
        self.indexed.add(key)
        for name, record in self.pods.items():
            value = record.labels.get(key)
            if value is not None:
                self.by_label[(key, value)][name] = None


class PodIndex:
    """Pod records per namespace, with label buckets for the keys that selectors use.

    Buckets are built for a label key the first time a selector asks for it (then kept up to
    date): pods carry many labels no Service selects on (``pod-template-hash``,
    ``controller-revision-hash``, StatefulSet pod names), and a bucket per distinct value of
    those would cost more than the pod record itself.
    """

    def __init__(self) -> None:
        self._namespaces: dict[str, _NamespacePods] = defaultdict(_NamespacePods)
        self._count = 0
        # Side tables for the secondary-network sources, keyed by (namespace, pod name) and
        # holding only the pods that carry the data, so that the records of every other pod
        # stay as they are (see controller.networks).
        self.network_statuses: dict[tuple[str, str], str] = {}
        """The ``k8s.v1.cni.cncf.io/network-status`` annotation text."""
        self.claim_statuses: dict[tuple[str, str], dict[str, str]] = {}
        """``status.resourceClaimStatuses`` as ``{pod claim name: ResourceClaim name}``."""

    def __len__(self) -> int:
        return self._count

    def get(self, namespace: str, name: str) -> PodRecord | None:
        pods = self._namespaces.get(namespace)
        return pods.pods.get(name) if pods is not None else None

    def put(self, record: PodRecord) -> PodRecord | None:
        """Store a pod record; returns the one it replaced."""
        ns = self._namespaces[record.namespace]
        previous = ns.pods.get(record.name)
        if previous is None:
            self._count += 1
        elif previous.labels is not record.labels:
            ns.unlabel(previous)
        ns.pods[record.name] = record
        if previous is None or previous.labels is not record.labels:
            ns.label(record)
        return previous

    def put_extras(
        self,
        namespace: str,
        name: str,
        network_status: str | None,
        claim_statuses: dict[str, str] | None,
    ) -> bool:
        """Keep (or drop) a pod's side-table entries; returns whether they changed."""
        key = (namespace, name)
        changed = False
        if network_status is not None:
            changed = self.network_statuses.get(key) != network_status
            self.network_statuses[key] = network_status
        elif self.network_statuses:
            changed = self.network_statuses.pop(key, None) is not None
        if claim_statuses:
            changed = changed or self.claim_statuses.get(key) != claim_statuses
            self.claim_statuses[key] = claim_statuses
        elif self.claim_statuses and self.claim_statuses.pop(key, None) is not None:
            changed = True
        return changed

    def claimed_by(self, namespace: str, claim: str) -> list[PodRecord]:
        """The pods whose resource claim statuses name the ResourceClaim ``claim``."""
        found = []
        for (pod_namespace, pod_name), claims in self.claim_statuses.items():
            if pod_namespace == namespace and claim in claims.values():
                record = self.get(pod_namespace, pod_name)
                if record is not None:
                    found.append(record)
        return found

    def remove(self, namespace: str, name: str) -> PodRecord | None:
        if self.network_statuses or self.claim_statuses:
            self.put_extras(namespace, name, None, None)
        ns = self._namespaces.get(namespace)
        if ns is None:
            return None
        previous = ns.pods.pop(name, None)
        if previous is not None:
            self._count -= 1
            ns.unlabel(previous)
            if not ns.pods:
                del self._namespaces[namespace]
        return previous

    def names(self) -> list[tuple[str, str]]:
        """(namespace, name) of every pod held."""
        return [(namespace, name) for namespace, ns in self._namespaces.items() for name in ns.pods]

    def on_node(self, node_name: str) -> list[PodRecord]:
        """Every pod scheduled to ``node_name`` (a scan: only for rare node changes)."""
        return [
            pod
            for ns in self._namespaces.values()
            for pod in ns.pods.values()
            if pod.node_name == node_name
        ]

    def select(self, namespace: str, selector: Selector) -> list[PodRecord]:
        """The pods of ``namespace`` that ``selector`` matches, in name order.

        Candidates come from the positive requirement (``=`` or ``in``) whose label buckets
        are smallest; a selector without one checks every pod of the namespace.
        """
        ns = self._namespaces.get(namespace)
        if ns is None:
            return []
        candidates: Iterable[str] = ns.pods
        smallest = len(ns.pods) + 1
        for req in selector.requirements:
            if req.operator not in (Operator.EQUALS, Operator.IN):
                continue
            if req.key not in ns.indexed:
                ns.index(req.key)
            buckets = [ns.by_label.get((req.key, value), ()) for value in req.values]
            size = sum(len(bucket) for bucket in buckets)
            if size < smallest:
                smallest = size
                candidates = buckets[0] if len(buckets) == 1 else set().union(*buckets)
        pods = [ns.pods[name] for name in candidates]
        return sorted(
            (pod for pod in pods if selector.matches(pod.labels)), key=lambda pod: pod.name
        )


class NodeIndex:
    def __init__(self) -> None:
        self._nodes: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, name: str) -> dict[str, Any] | None:
        return self._nodes.get(name)

    def put(self, node: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        slim = slim_node(node)
        name = str(slim["metadata"]["name"] or "")
        previous = self._nodes.get(name)
        self._nodes[name] = slim
        return previous, slim

    def remove(self, name: str) -> dict[str, Any] | None:
        return self._nodes.pop(name, None)

    def all(self) -> list[dict[str, Any]]:
        return list(self._nodes.values())

    def names(self) -> list[tuple[str, str]]:
        """("", name) of every node held."""
        return [("", name) for name in self._nodes]

    def subset(self, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``{name: node}`` for the given names that exist."""
        found: dict[str, dict[str, Any]] = {}
        for name in names:
            node = self._nodes.get(name)
            if node is not None:
                found[name] = node
        return found


@dataclass(frozen=True, slots=True)
class SliceRef:
    """Where a slice belongs (its owner's key, see :mod:`.owner_kinds`, and managed-by label), and
    which object it is."""

    service: str | None
    managed_by: str | None
    uid: str = ""
    resource_version: str = ""


def slice_ref(endpoint_slice: Mapping[str, Any]) -> tuple[str, str, SliceRef]:
    metadata = _mapping(endpoint_slice.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    namespace = str(metadata.get("namespace") or "")
    name = str(metadata.get("name") or "")
    managed_by = labels.get(LABEL_MANAGED_BY)
    return (
        namespace,
        name,
        SliceRef(
            owner_of_slice(namespace, labels),
            managed_by if isinstance(managed_by, str) else None,
            str(metadata.get("uid") or ""),
            str(metadata.get("resourceVersion") or ""),
        ),
    )


class SliceIndex:
    """Our slices per Service (as last seen), and where every other slice belongs.

    Our slices are held as ``CachedSlice``s: the endpoints in the reconciler's parsed form
    only (the pods' own strings shared with their records, found through ``pods``), their JSON
    rebuilt when read, which is what the
    planner reads without parsing. The echo of a write of ours (the same object at the same
    resourceVersion as held) is not parsed again.
    """

    def __init__(self, managed_by: str, pods: PodLookup | None = None) -> None:
        self.managed_by = managed_by
        self._pods = pods
        self._refs: dict[tuple[str, str], SliceRef] = {}
        self._ours: dict[str, dict[str, CachedSlice]] = defaultdict(dict)
        self._upstream: dict[str, set[str]] = defaultdict(set)
        self._mirrored: dict[str, set[str]] = defaultdict(set)
        """Slices of kube-controller-manager's mirroring controller, per Service key."""
        self._unlabelled: dict[tuple[str, str], SliceRef] = {}
        """Slices labelled managed-by ours without a ``kubernetes.io/service-name`` label."""

    def __len__(self) -> int:
        return len(self._refs)

    def put(self, endpoint_slice: Mapping[str, Any]) -> SliceRef | None:
        """Store a slice; returns where it belonged before (None if new)."""
        namespace, name, ref = slice_ref(endpoint_slice)
        if ref.resource_version and self._refs.get((namespace, name)) == ref:
            # The same object at the same resourceVersion (the watch's echo of our own write,
            # or a re-list): the same content, held already.
            return ref
        previous = self._forget(namespace, name)
        self._refs[(namespace, name)] = ref
        if ref.service is None and ref.managed_by == self.managed_by:
            self._unlabelled[(namespace, name)] = ref
        if ref.service is not None:
            if ref.managed_by == self.managed_by:
                self._ours[ref.service][name] = CachedSlice(endpoint_slice, self._pods)
            elif ref.managed_by == UPSTREAM_CONTROLLER_NAME:
                self._upstream[ref.service].add(name)
            elif ref.managed_by == MIRRORING_CONTROLLER_NAME:
                self._mirrored[ref.service].add(name)
        return previous

    def remove(self, endpoint_slice: Mapping[str, Any]) -> SliceRef | None:
        namespace, name, _ = slice_ref(endpoint_slice)
        return self._forget(namespace, name)

    def _forget(self, namespace: str, name: str) -> SliceRef | None:
        previous = self._refs.pop((namespace, name), None)
        self._unlabelled.pop((namespace, name), None)
        if previous is not None and previous.service is not None:
            ours = self._ours.get(previous.service)
            if ours is not None:
                ours.pop(name, None)
                if not ours:
                    del self._ours[previous.service]
            upstream = self._upstream.get(previous.service)
            if upstream is not None:
                upstream.discard(name)
                if not upstream:
                    del self._upstream[previous.service]
            mirrored = self._mirrored.get(previous.service)
            if mirrored is not None:
                mirrored.discard(name)
                if not mirrored:
                    del self._mirrored[previous.service]
        return previous

    def names(self) -> list[tuple[str, str]]:
        """(namespace, name) of every slice held."""
        return list(self._refs)

    def ref(self, namespace: str, name: str) -> SliceRef | None:
        return self._refs.get((namespace, name))

    def last_seen(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The slice as last seen if it is ours, else a minimal stand-in (name and labels)."""
        ref = self._refs.get((namespace, name))
        if ref is None:
            return None
        if ref.service is not None and ref.managed_by == self.managed_by:
            found = self._ours.get(ref.service, {}).get(name)
            if found is not None:
                return found
        labels: dict[str, str] = {}
        if ref.service is not None:
            kind, _, owner = split_owner_key(ref.service)
            labels[kind.slice_label] = owner
        if ref.managed_by is not None:
            labels[LABEL_MANAGED_BY] = ref.managed_by
        return {"metadata": {"namespace": namespace, "name": name, "labels": labels}}

    def share_pod_strings(self) -> None:
        """Let every slice of ours take its pods' strings from their records (once the initial
        listings are in: slices listed before their pods hold copies of their own)."""
        if self._pods is None:
            return
        for slices in self._ours.values():
            for cached in slices.values():
                cached.share_pod_strings(self._pods)

    def ours(self, key: str) -> list[Mapping[str, Any]]:
        """Our slices of a Service, as last seen (read-only ``CachedSlice``s)."""
        return list(self._ours.get(key, {}).values())

    def has_ours(self, key: str) -> bool:
        return bool(self._ours.get(key))

    def has_upstream_mirrored(self, key: str) -> bool:
        """Whether kube-controller-manager's mirroring controller has slices for it."""
        return bool(self._mirrored.get(key))

    def has_upstream(self, key: str) -> bool:
        """Whether kube-controller-manager's EndpointSlice controller has slices for it."""
        return bool(self._upstream.get(key))

    def services_with_ours(self) -> list[str]:
        return list(self._ours)

    def unlabelled_ours(self) -> list[tuple[str, str, SliceRef]]:
        """(namespace, name, ref) of the slices labelled managed-by ours that carry no
        ``kubernetes.io/service-name`` label: no Service can ever claim them."""
        return [(ns, name, ref) for (ns, name), ref in self._unlabelled.items()]


class Indexes:
    """The indexes of one operator (the ResourceClaims only once a Service asks for a device
    network: not counted for readiness)."""

    def __init__(
        self,
        *,
        enabled_annotation: str,
        selector_annotation: str,
        managed_by: str,
        extra_annotations: Iterable[str] = (),
    ):
        self.services = ServiceIndex(
            enabled_annotation=enabled_annotation,
            selector_annotation=selector_annotation,
            managed_by=managed_by,
            extra_annotations=extra_annotations,
        )
        self.pods = PodIndex()
        self.nodes = NodeIndex()
        self.slices = SliceIndex(managed_by, pods=self.pods.get)
        self.claims = ClaimIndex()
        self.endpoints = EndpointsIndex(managed_by)

    def counts(self) -> dict[str, int]:
        return {
            "services": len(self.services),
            "pods": len(self.pods),
            "nodes": len(self.nodes),
            "endpointslices": len(self.slices),
            "endpoints": len(self.endpoints),
        }
