"""``endpointslice-operator plan --mcs-cluster ID=PATH``: the writes this cluster's operator
would make for Multi-Cluster Services imports, offline.

The manifests of each cluster are fed to the same caches the operator's list-watches fill
(:mod:`endpointslice_operator.controller.mcs.cache`), so the same objects count: a Service's
slices of every manager as its source, slices that carry a source-cluster label never, the
imported slices, derived Services and ServiceImports of this cluster. Each import is then
planned as :class:`~endpointslice_operator.controller.mcs.imports.ImportSyncer` syncs it, with
the functions of :mod:`endpointslice_operator.reconciler.mcs` it calls, every named cluster
being reachable (a cluster that is not named is gone, as after its Lease expired).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from endpointslice_operator.commands.manifests import (
    InputError,
    Operation,
    ServiceResult,
    default_service,
    iter_objects,
)
from endpointslice_operator.controller.cache.owner_kinds import SERVICE_IMPORT
from endpointslice_operator.controller.mcs.cache import ClusterCache, Key, LocalCache
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY
from endpointslice_operator.reconciler.mcs import (
    CLUSTER_ID_PROPERTY,
    LABEL_SOURCE_CLUSTER,
    MCS_GROUP,
    ExportedService,
    ImportResolution,
    InvalidExport,
    derived_service,
    derived_service_change,
    derived_service_name,
    endpoint_slice_objects,
    export_conditions,
    is_cluster_id,
    merge_conditions,
    owned_by_import,
    plan_import_slices,
    read_export,
    resolve_import,
    same_conditions,
    service_import,
    service_import_change,
)

__all__ = ["NEW_IMPORT_UID", "McsCluster", "load_clusters", "parse_mcs_cluster", "plan_imports"]

NEW_IMPORT_UID = "<uid of the new ServiceImport>"
"""The owner uid shown for objects owned by a ServiceImport the plan creates (the API server
assigns it)."""

# kind -> (the cache's list-watch kind, the apiVersions read)
_KINDS: dict[str, tuple[str, tuple[str | None, ...]]] = {
    "ServiceExport": ("serviceexports", (f"{MCS_GROUP}/v1beta1", f"{MCS_GROUP}/v1alpha1")),
    "ServiceImport": ("serviceimports", (f"{MCS_GROUP}/v1beta1", f"{MCS_GROUP}/v1alpha1")),
    "Service": ("services", (None, "v1")),
    "EndpointSlice": ("endpointslices", (None, "discovery.k8s.io/v1")),
    "Namespace": ("namespaces", (None, "v1")),
    "ClusterProperty": ("clusterproperties", ("about.k8s.io/v1alpha1", "about.k8s.io/v1beta1")),
}
_CLUSTER_SCOPED = ("Namespace", "ClusterProperty")


@dataclass
class McsCluster:
    """One ``--mcs-cluster ID=PATH``."""

    cluster_id: str
    path: str


def parse_mcs_cluster(text: str) -> McsCluster:
    cluster_id, sep, path = text.partition("=")
    if not sep or not path:
        raise InputError(f"--mcs-cluster {text}: expected ID=PATH")
    if not is_cluster_id(cluster_id):
        raise InputError(
            f"--mcs-cluster {text}: {cluster_id!r} is not a valid cluster id (a DNS label)"
        )
    return McsCluster(cluster_id, path)


def _feed(
    cache: ClusterCache,
    paths: Sequence[str],
    *,
    recursive: bool,
    default_namespace: str,
    ip_family: str,
) -> None:
    """List every kind the cache watches from the manifests (a complete listing)."""
    for where, obj in iter_objects(paths, recursive=recursive):
        known = _KINDS.get(str(obj.get("kind")))
        if known is None or obj.get("apiVersion") not in known[1] or known[0] not in cache.kinds:
            continue
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping) or not metadata.get("name"):
            raise InputError(f"{where}: the {obj['kind']} has no metadata.name")
        body = dict(obj)
        if obj["kind"] not in _CLUSTER_SCOPED:
            body["metadata"] = {
                **metadata,
                "namespace": metadata.get("namespace") or default_namespace,
            }
        if obj["kind"] == "Service":
            body = default_service(body, ip_family)[0]
        cache.handler(known[0])("ADDED", body)
    for kind in cache.kinds:
        cache.listed_callback(kind)(None)


def load_clusters(
    local_paths: Sequence[str],
    peers: Sequence[McsCluster],
    config: ReconcilerConfig,
    *,
    cluster_id: str | None,
    recursive: bool = False,
    default_namespace: str = "default",
    ip_family: str = "IPv4",
) -> tuple[LocalCache, list[ClusterCache]]:
    """This cluster's cache (from ``local_paths``) and each peer's (from its path)."""
    options: dict[str, Any] = {
        "recursive": recursive,
        "default_namespace": default_namespace,
        "ip_family": ip_family,
    }
    local = LocalCache(lambda _key: None, config.controller_name)
    _feed(local, local_paths, **options)
    if cluster_id is not None:
        if not is_cluster_id(cluster_id):
            raise InputError(f"--cluster-id {cluster_id}: not a valid cluster id (a DNS label)")
        local.cluster_id = cluster_id
    caches: list[ClusterCache] = []
    seen = {local.cluster_id}
    for peer in peers:
        if peer.cluster_id in seen:
            raise InputError(f"--mcs-cluster {peer.cluster_id}: the cluster id is given twice")
        seen.add(peer.cluster_id)
        cache = ClusterCache(peer.path, lambda _key: None)
        _feed(cache, [peer.path], **options)
        if cache.cluster_id not in (None, peer.cluster_id):
            raise InputError(
                f"--mcs-cluster {peer.cluster_id}={peer.path}: its {CLUSTER_ID_PROPERTY} "
                f"ClusterProperty says {cache.cluster_id!r}"
            )
        cache.cluster_id = peer.cluster_id
        caches.append(cache)
    return local, caches


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _ours(obj: Mapping[str, Any] | None, managed_by: str) -> bool:
    return obj is not None and (_meta(obj).get("labels") or {}).get(LABEL_MANAGED_BY) == managed_by


def _service(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A Service as the cache holds it (metadata and spec), with its kind back."""
    return None if obj is None else {"apiVersion": "v1", "kind": "Service", **obj}


def _describe(resolution: ImportResolution) -> str:
    ports = ", ".join(f"{p.name or '-'}/{p.protocol}/{p.port}" for p in resolution.ports)
    text = f"import {resolution.type}, ports [{ports}], clusters [{', '.join(resolution.clusters)}]"
    if resolution.conflicts:
        text += f", conflict {resolution.conflict_reason}: {resolution.conflict_message}"
    return text


def _conditions_text(conditions: Iterable[Mapping[str, str]]) -> str:
    return ", ".join(f"{c['type']}={c['status']}/{c['reason']}" for c in conditions)


class _ImportPlan:
    """One import's writes, in the order the operator's sync makes them."""

    def __init__(
        self,
        key: Key,
        local: LocalCache,
        peers: Sequence[ClusterCache],
        config: ReconcilerConfig,
        assume_namespaces: bool,
    ) -> None:
        self.key = key
        self.local = local
        self.peers = peers
        self.config = config
        self.managed_by = config.controller_name
        self.assume_namespaces = assume_namespaces
        self.result = ServiceResult(SERVICE_IMPORT.key(*key))

    def write(
        self, operation: Operation, obj: Mapping[str, Any], before: Mapping[str, Any] | None
    ) -> None:
        if before is not None:
            self.result.previous[len(self.result.writes)] = before
        self.result.writes.append((operation, obj))

    def run(self) -> ServiceResult:
        key = self.key
        live: list[tuple[str, ClusterCache]] = []
        if self.local.cluster_id is not None:
            live.append((self.local.cluster_id, self.local))
        live += [(str(peer.cluster_id), peer) for peer in self.peers]
        exports: list[ExportedService] = []
        reads: list[ExportedService | InvalidExport] = []
        sources: dict[str, list[Mapping[str, Any]]] = {}
        for cluster, cache in live:
            export = cache.export(key)
            if export is None:
                continue
            read = read_export(cluster, export, cache.services.get(key))
            reads.append(read)
            if isinstance(read, ExportedService):
                exports.append(read)
                sources[cluster] = cache.source_slices(key)
        resolution = resolve_import(exports)
        notes = self.result.notes
        if resolution is not None:
            notes.append(_describe(resolution))
        namespace_here = self.assume_namespaces or key[0] in self.local.namespaces
        if resolution is None or not namespace_here:
            if resolution is not None:
                notes.append(f"namespace {key[0]} does not exist here: no import")
            self.remove()
        else:
            self.apply(resolution, sources, {cluster for cluster, _ in live})
        imported_here = namespace_here and resolution is not None
        for read in reads:
            conditions = export_conditions(read, resolution, imported=True)
            if read.cluster == self.local.cluster_id:
                conditions = export_conditions(read, resolution, imported=imported_here)
            notes.append(f"ServiceExport of {read.cluster}: {_conditions_text(conditions)}")
        self.export_status(resolution, imported_here)
        return self.result

    # -- mirrors ImportSyncer._apply ----------------------------------------------------------

    def apply(
        self,
        resolution: ImportResolution,
        sources: Mapping[str, list[Mapping[str, Any]]],
        live_ids: set[str],
    ) -> None:
        key = self.key
        imported = self.ensure_import(resolution)
        if imported is None:
            return
        self.ensure_derived(resolution, imported)
        existing = self.local.imported_slices(key)
        clusters = set(resolution.clusters) | {
            str((_meta(s).get("labels") or {}).get(LABEL_SOURCE_CLUSTER)) for s in existing
        }
        remaining = len(existing)
        for cluster in sorted(clusters):
            plan = plan_import_slices(
                imported,
                cluster,
                sources.get(cluster) if cluster in live_ids else None,
                existing,
                self.config,
                served_ports=resolution.cluster_ports.get(cluster, ()),
            )
            for body in plan.creates:
                self.write("create", body, None)
            for body in plan.updates:
                self.write("update", body, self._slice(body))
            for gone in plan.deletes:
                self.write("delete", gone, gone)
            if plan.creates or plan.updates or plan.deletes:
                self.result.notes.append(
                    f"slices from {cluster}: create={len(plan.creates)} "
                    f"update={len(plan.updates)} delete={len(plan.deletes)}"
                )
            remaining += len(plan.creates) - len(plan.deletes)
        self.import_status(resolution, imported, endpoint_slice_objects(range(remaining)))

    def _slice(self, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        name = _meta(body).get("name")
        return next(
            (s for s in self.local.imported_slices(self.key) if _meta(s).get("name") == name),
            None,
        )

    def ensure_import(self, resolution: ImportResolution) -> Mapping[str, Any] | None:
        key = self.key
        current = self.local.imports.get(key)
        derived = None
        if current is not None:
            derived = self.local.services.get((key[0], resolution.derived_name))
        desired = service_import(resolution, derived)
        desired["metadata"]["labels"][LABEL_MANAGED_BY] = self.managed_by
        status = desired.pop("status")
        if current is None:
            self.write("create", desired, None)
            return {**desired, "metadata": {**desired["metadata"], "uid": NEW_IMPORT_UID}}
        if not _ours(current, self.managed_by):
            self.result.notes.append(f"ServiceImport {key[0]}/{key[1]} is not ours: left alone")
            return None
        update, _ = service_import_change(current, {**desired, "status": status})
        body = dict(current)
        if update:
            body["metadata"] = {
                **_meta(current),
                "labels": desired["metadata"]["labels"],
                "annotations": desired["metadata"]["annotations"],
            }
            body["spec"] = desired["spec"]
            self.write("update", body, current)
        return body

    def import_status(
        self, resolution: ImportResolution, imported: Mapping[str, Any], presence: str
    ) -> None:
        """Mirrors ImportSyncer._import_status: after the slices, the import's status."""
        desired = service_import(resolution, endpoint_slices=presence)
        created = self.local.imports.get(self.key) is None
        if not created and not service_import_change(imported, desired)[1]:
            return
        body = {**imported, "status": {**(imported.get("status") or {}), **desired["status"]}}
        self.write("status", body, None if created else dict(imported))

    def ensure_derived(self, resolution: ImportResolution, imported: Mapping[str, Any]) -> None:
        key = self.key
        name = derived_service_name(*key)
        uid = str(_meta(imported).get("uid") or "")
        desired = derived_service(resolution, uid, managed_by=self.managed_by)
        current = _service(self.local.services.get((key[0], name)))
        if current is not None and not owned_by_import(current, uid):
            self.result.notes.append(
                f"Service {key[0]}/{name} (the derived name of import {key[1]}) is not ours: "
                "left alone"
            )
            return
        change = "create" if current is None else derived_service_change(current, desired)
        if change == "none":
            return
        if change == "replace" and current is not None:
            self.write("delete", current, current)
            change = "create"
            current = None
        if change == "create":
            self.write("create", desired, None)
        else:
            assert current is not None
            body = dict(current)
            body["spec"] = {**(current.get("spec") or {}), **desired["spec"]}
            body["metadata"] = {**_meta(current), "labels": desired["metadata"]["labels"]}
            self.write("update", body, current)
        if resolution.type != "Headless":
            self.result.notes.append(
                "the ServiceImport's spec.ips follow once the derived Service's cluster IPs "
                "are allocated (one more ServiceImport update)"
            )

    # -- mirrors ImportSyncer._remove and _export_status --------------------------------------

    def remove(self) -> None:
        key = self.key
        for body in self.local.imported_slices(key):
            self.write("delete", body, body)
        current = self.local.imports.get(key)
        if current is None or not _ours(current, self.managed_by):
            return
        uid = str(_meta(current).get("uid") or "")
        derived = _service(self.local.services.get((key[0], derived_service_name(*key))))
        if derived is not None and owned_by_import(derived, uid):
            self.write("delete", derived, derived)
        self.write("delete", current, current)

    def export_status(self, resolution: ImportResolution | None, imported: bool) -> None:
        export = self.local.export(self.key)
        if export is None:
            return
        cluster = self.local.cluster_id
        failure = None
        if cluster is None:
            read = read_export("unknown", export, self.local.services.get(self.key))
            failure = "this cluster has no cluster.clusterset.k8s.io ClusterProperty"
        else:
            read = read_export(cluster, export, self.local.services.get(self.key))
        desired = export_conditions(read, resolution, imported=imported, failure=failure)
        current = (export.get("status") or {}).get("conditions")
        merged = merge_conditions(
            current, desired, now=datetime.now(UTC), generation=_meta(export).get("generation")
        )
        if same_conditions(current, merged):
            return
        body = {**export, "status": {**(export.get("status") or {}), "conditions": merged}}
        self.write("status", body, export)


def plan_imports(
    local: LocalCache,
    peers: Sequence[ClusterCache],
    config: ReconcilerConfig,
    keys: Iterable[Key] | None = None,
) -> list[ServiceResult]:
    """Plan every import (the Services exported by some cluster, the imports and imported
    slices of this one), or those of ``keys``, as the operator's sync of each would."""
    if keys is None:
        found: set[Key] = set(local.keys()) | set(local.exports)
        for peer in peers:
            found |= set(peer.exports)
        keys = sorted(found)
    assume_namespaces = not local.namespaces
    results = []
    for key in keys:
        planned = _ImportPlan(key, local, peers, config, assume_namespaces).run()
        if assume_namespaces:
            planned.notes.append("no Namespace in the local input: its namespace assumed to exist")
        results.append(planned)
    return results
