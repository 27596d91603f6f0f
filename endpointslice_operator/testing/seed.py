"""Loading objects into the store from YAML or JSON manifests (``emulator --load FILE``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from endpointslice_operator.testing.store import Store

JSON = dict[str, Any]
SERVER_SET_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def objects_in(documents: Iterable[Any]) -> Iterator[JSON]:
    """Objects of YAML documents, unpacking ``List`` kinds (``kubectl get -o yaml`` output)."""
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("kind", "").endswith("List") and isinstance(document.get("items"), list):
            yield from objects_in(document["items"])
        elif document.get("kind") and document.get("apiVersion"):
            yield document


# Owners before their dependents, so that owner references can be carried over.
KIND_ORDER = ("Namespace", "Node", "Service", "Pod", "Endpoints", "EndpointSlice")


def load_manifests(store: Store, path: Path) -> list[JSON]:
    """Create every object found in ``path``; returns the created objects.

    Server-set metadata from an exported cluster is dropped and statuses are kept, so a
    snapshot taken with ``kubectl get ... -o yaml`` comes back with its pods running. Missing
    namespaces are created, and owner references to objects of the same file are pointed at
    their new uids (so the garbage collector does not take the dependents for orphans).
    """
    with path.open(encoding="utf-8") as stream:
        found = list(objects_in(yaml.safe_load_all(stream)))

    def rank(obj: JSON) -> int:
        kind = obj.get("kind", "")
        return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)

    found.sort(key=rank)
    new_uids: dict[str, str] = {}
    created = []
    for obj in found:
        meta = obj.setdefault("metadata", {})
        old_uid = meta.get("uid")
        for key in SERVER_SET_META:
            meta.pop(key, None)
        for ref in meta.get("ownerReferences") or []:
            ref["uid"] = new_uids.get(ref.get("uid", ""), ref.get("uid", ""))
        info = store.registry.for_object(obj)
        namespace = meta.get("namespace") or "default"
        if info.namespaced and store.get("namespaces", None, namespace) is None:
            store.create_namespace(namespace)
        if info.key == "namespaces" and store.get("namespaces", None, meta.get("name", "")):
            continue
        result = store.create(obj)
        if old_uid:
            new_uids[old_uid] = result["metadata"]["uid"]
        created.append(result)
    return created
