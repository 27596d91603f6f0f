"""What one cluster holds that imports are made from, filled by list-watches.

A :class:`ClusterCache` keeps the cluster's ServiceExports, the Services and EndpointSlices of
exported Services (every Service and slice is kept: an export may name a Service seen earlier),
and its cluster id. ``complete`` tells whether every kind's listing has come in at least once:
an import is never computed from a cluster whose state is unknown (a failed or partial listing
is never taken as empty: objects are only dropped by a DELETED event or by the end of a
complete re-listing that did not deliver them).

Imported slices (labelled with a source cluster) are never taken as a Service's source
endpoints, so that a cluster does not re-export what it imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY, LABEL_SERVICE_NAME
from endpointslice_operator.reconciler.mcs import (
    CLUSTER_ID_PROPERTY,
    LABEL_MCS_SERVICE_NAME,
    LABEL_SOURCE_CLUSTER,
    cluster_id_of,
)

__all__ = ["KINDS", "LOCAL_KINDS", "ClusterCache", "Key", "LocalCache"]

Key = tuple[str, str]
"""``(namespace, name)`` of a Service, its export, or its import."""

KINDS = ("serviceexports", "services", "endpointslices", "clusterproperties")
LOCAL_KINDS = (*KINDS, "serviceimports", "namespaces")


def newer(obj: Mapping[str, Any], known: Mapping[str, Any] | None) -> bool:
    """Whether ``obj`` is not older than ``known`` (by resourceVersion): the caches are written
    through by our own writes, and a watch event of an earlier version may still arrive."""
    if known is None:
        return True
    try:
        return int(_meta(obj).get("resourceVersion") or 0) >= int(
            _meta(known).get("resourceVersion") or 0
        )
    except ValueError:
        return True


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = _meta(obj)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


class ClusterCache:
    """One cluster's exports, Services, source slices and cluster id.

    ``on_change(key)`` is called with the ``(namespace, name)`` of every Service whose import
    may have changed.
    """

    kinds: tuple[str, ...] = KINDS

    def __init__(self, name: str, on_change: Callable[[Key], None]) -> None:
        self.name = name
        """How logs call the cluster (the kubeconfig path for a peer, ``local`` here)."""
        self.on_change = on_change
        self.exports: dict[Key, Mapping[str, Any]] = {}
        self.services: dict[Key, Mapping[str, Any]] = {}
        self.slices: dict[Key, dict[str, Mapping[str, Any]]] = {}
        self.cluster_id: str | None = None
        self.listed: set[str] = set()
        self._relisting: dict[str, set[tuple[str, ...]]] = {}

    @property
    def complete(self) -> bool:
        """Every kind has been listed at least once."""
        return self.listed >= set(self.kinds)

    def export(self, key: Key) -> Mapping[str, Any] | None:
        return self.exports.get(key)

    def source_slices(self, key: Key) -> list[Mapping[str, Any]]:
        return list(self.slices.get(key, {}).values())

    # -- list-watch plumbing -------------------------------------------------------------------

    def handler(self, kind: str) -> Callable[[str | None, Mapping[str, Any]], None]:
        handlers: dict[str, Callable[[str | None, Mapping[str, Any]], None]] = {
            "serviceexports": self._on_export,
            "services": self._on_service,
            "endpointslices": self._on_slice,
            "clusterproperties": self._on_property,
        }
        return handlers[kind]

    def listing(self, kind: str) -> Callable[[str | None], None]:
        def begin(_scope: str | None) -> None:
            self._relisting[kind] = set()

        return begin

    def listed_callback(self, kind: str) -> Callable[[str | None], None]:
        def done(_scope: str | None) -> None:
            seen = self._relisting.pop(kind, None)
            if seen is not None:
                self._prune(kind, seen)
            self.listed.add(kind)

        return done

    def _seen(self, kind: str, ident: tuple[str, ...]) -> None:
        seen = self._relisting.get(kind)
        if seen is not None:
            seen.add(ident)

    def _prune(self, kind: str, seen: set[tuple[str, ...]]) -> None:
        """After a complete re-listing: drop what it did not deliver (deleted meanwhile)."""
        if kind == "serviceexports":
            for key in [k for k in self.exports if k not in seen]:
                del self.exports[key]
                self.on_change(key)
        elif kind == "services":
            for key in [k for k in self.services if k not in seen]:
                del self.services[key]
                self.on_change(key)
        elif kind == "endpointslices":
            for key, by_name in list(self.slices.items()):
                for name in [n for n in by_name if (*key, n) not in seen]:
                    del by_name[name]
                    self.on_change(key)
                if not by_name:
                    del self.slices[key]
        elif kind == "clusterproperties" and (CLUSTER_ID_PROPERTY,) not in seen:
            self._set_cluster_id(None)

    def _on_export(self, event: str | None, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        self._seen("serviceexports", key)
        if event == "DELETED":
            self.exports.pop(key, None)
        else:
            self.exports[key] = obj
        self.on_change(key)

    def _on_service(self, event: str | None, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        self._seen("services", key)
        if event == "DELETED":
            self.services.pop(key, None)
        else:
            self.services[key] = {"metadata": dict(_meta(obj)), "spec": obj.get("spec") or {}}
        if key in self.exports:
            self.on_change(key)

    def _on_slice(self, event: str | None, obj: Mapping[str, Any]) -> None:
        metadata = _meta(obj)
        labels = metadata.get("labels")
        labels = labels if isinstance(labels, Mapping) else {}
        service = labels.get(LABEL_SERVICE_NAME)
        if LABEL_SOURCE_CLUSTER in labels:
            self._on_imported_slice(event, obj, labels)
            return
        if not isinstance(service, str):
            return
        key = (str(metadata.get("namespace") or ""), service)
        name = str(metadata.get("name") or "")
        self._seen("endpointslices", (*key, name))
        if event == "DELETED":
            by_name = self.slices.get(key)
            if by_name is not None:
                by_name.pop(name, None)
                if not by_name:
                    del self.slices[key]
        else:
            self.slices.setdefault(key, {})[name] = obj
        if key in self.exports:
            self.on_change(key)

    def _on_imported_slice(
        self, event: str | None, obj: Mapping[str, Any], labels: Mapping[str, Any]
    ) -> None:
        """A slice imported by an MCS controller: not a source (overridden for this cluster)."""

    def _on_property(self, event: str | None, obj: Mapping[str, Any]) -> None:
        if _meta(obj).get("name") != CLUSTER_ID_PROPERTY:
            return
        self._seen("clusterproperties", (CLUSTER_ID_PROPERTY,))
        self._set_cluster_id(None if event == "DELETED" else cluster_id_of(obj))

    def _set_cluster_id(self, value: str | None) -> None:
        if value == self.cluster_id:
            return
        self.cluster_id = value
        for key in list(self.exports):
            self.on_change(key)


class LocalCache(ClusterCache):
    """This cluster: besides what a peer holds, the ServiceImports, the Namespaces and the
    imported slices managed by ``managed_by`` (keyed by import)."""

    kinds = LOCAL_KINDS

    def __init__(self, on_change: Callable[[Key], None], managed_by: str) -> None:
        super().__init__("local", on_change)
        self.managed_by = managed_by
        self.imports: dict[Key, Mapping[str, Any]] = {}
        self.namespaces: set[str] = set()
        self.imported: dict[Key, dict[str, Mapping[str, Any]]] = {}
        self.on_namespace: Callable[[str], None] = lambda _name: None
        """Called when a namespace appears (the controller queues the peers' exports in it)."""

    def handler(self, kind: str) -> Callable[[str | None, Mapping[str, Any]], None]:
        if kind == "serviceimports":
            return self._on_import
        if kind == "namespaces":
            return self._on_namespace
        return super().handler(kind)

    def imported_slices(self, key: Key) -> list[Mapping[str, Any]]:
        return list(self.imported.get(key, {}).values())

    def keys(self) -> set[Key]:
        """Every import this cluster has (ServiceImports, imported slices)."""
        return set(self.imports) | set(self.imported)

    # -- written through by our own writes ----------------------------------------------------

    def put_import(self, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        if newer(obj, self.imports.get(key)):
            self.imports[key] = obj

    def drop_import(self, key: Key) -> None:
        self.imports.pop(key, None)

    def put_service(self, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        if newer(obj, self.services.get(key)):
            self.services[key] = obj

    def drop_service(self, key: Key) -> None:
        self.services.pop(key, None)

    def put_imported(self, key: Key, obj: Mapping[str, Any]) -> None:
        name = str(_meta(obj).get("name") or "")
        by_name = self.imported.setdefault(key, {})
        if newer(obj, by_name.get(name)):
            by_name[name] = obj

    def drop_imported(self, key: Key, name: str) -> None:
        by_name = self.imported.get(key)
        if by_name is not None:
            by_name.pop(name, None)
            if not by_name:
                del self.imported[key]

    # -- events ---------------------------------------------------------------------------------

    def _on_service(self, event: str | None, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        if event != "DELETED" and not newer(obj, self.services.get(key)):
            return
        super()._on_service(event, obj)
        owner = _import_owner(obj)
        if owner is not None:
            self.on_change(owner)

    def _on_import(self, event: str | None, obj: Mapping[str, Any]) -> None:
        key = _key(obj)
        self._seen("serviceimports", key)
        if event == "DELETED":
            self.imports.pop(key, None)
        elif newer(obj, self.imports.get(key)):
            self.imports[key] = obj
        self.on_change(key)

    def _on_namespace(self, event: str | None, obj: Mapping[str, Any]) -> None:
        name = str(_meta(obj).get("name") or "")
        self._seen("namespaces", (name,))
        if event == "DELETED":
            self.namespaces.discard(name)
            return
        if name not in self.namespaces:
            self.namespaces.add(name)
            for key in {*self.exports, *self.imports}:
                if key[0] == name:
                    self.on_change(key)
            self.on_namespace(name)

    def _on_imported_slice(
        self, event: str | None, obj: Mapping[str, Any], labels: Mapping[str, Any]
    ) -> None:
        if labels.get(LABEL_MANAGED_BY) != self.managed_by:
            return
        name = labels.get(LABEL_MCS_SERVICE_NAME)
        if not isinstance(name, str):
            return
        key = (str(_meta(obj).get("namespace") or ""), name)
        slice_name = str(_meta(obj).get("name") or "")
        self._seen("endpointslices", (*key, "imported", slice_name))
        if event == "DELETED":
            self.drop_imported(key, slice_name)
        else:
            self.put_imported(key, obj)
        self.on_change(key)

    def _prune(self, kind: str, seen: set[tuple[str, ...]]) -> None:
        super()._prune(kind, seen)
        if kind == "serviceimports":
            for key in [k for k in self.imports if k not in seen]:
                del self.imports[key]
                self.on_change(key)
        elif kind == "namespaces":
            self.namespaces &= {ident[0] for ident in seen}
        elif kind == "endpointslices":
            for key, by_name in list(self.imported.items()):
                for name in [n for n in by_name if (*key, "imported", n) not in seen]:
                    del by_name[name]
                    self.on_change(key)
                if not by_name:
                    del self.imported[key]


def _import_owner(obj: Mapping[str, Any]) -> Key | None:
    """The ServiceImport a (derived) Service belongs to, from its controller reference."""
    refs = _meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if (
            isinstance(ref, Mapping)
            and ref.get("kind") == "ServiceImport"
            and ref.get("controller")
        ):
            return (str(_meta(obj).get("namespace") or ""), str(ref.get("name") or ""))
    return None
