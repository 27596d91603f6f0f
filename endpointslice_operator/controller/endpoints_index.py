"""The ``core/v1`` Endpoints objects, as last seen, for the Endpoints the operator writes.

Ours (labelled ``endpointslice.kubernetes.io/managed-by: <our controller name>``) are kept
whole, since an update is computed from them and carries their resourceVersion. Every other
Endpoints object is kept as a slim stand-in (name, namespace, uid, resourceVersion, labels): the
operator only needs to know that one is in the way of a Service it would write Endpoints for.
An Endpoints object is named after its Service, so it is indexed by the Service's key.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["LABEL_MANAGED_BY", "EndpointsIndex", "endpoints_key"]

LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
"""The label marking our Endpoints: the same key and value as on our EndpointSlices."""


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def endpoints_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an Endpoints object."""
    metadata = _metadata(obj)
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


class EndpointsIndex:
    """Endpoints objects by ``namespace/name`` (the key of the Service they belong to)."""

    def __init__(self, managed_by: str) -> None:
        self.managed_by = managed_by
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def is_ours(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        labels = _metadata(obj).get("labels")
        return isinstance(labels, Mapping) and labels.get(LABEL_MANAGED_BY) == self.managed_by

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Store an Endpoints object; returns the entry it replaced."""
        key = endpoints_key(obj)
        if self.is_ours(obj):
            entry = copy.deepcopy(dict(obj))
            if isinstance(entry.get("metadata"), dict):
                entry["metadata"].pop("managedFields", None)
        else:
            metadata = _metadata(obj)
            entry = {
                "metadata": {
                    k: copy.deepcopy(metadata[k])
                    for k in ("namespace", "name", "uid", "resourceVersion", "labels")
                    if k in metadata
                }
            }
        previous = self._entries.get(key)
        self._entries[key] = entry
        return previous

    def remove(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._entries.pop(endpoints_key(obj), None)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as last seen (whole if ours, else a stand-in); do not modify it."""
        return self._entries.get((namespace, name))

    def names(self) -> list[tuple[str, str]]:
        return list(self._entries)

    def ours(self) -> list[tuple[str, str]]:
        """(namespace, name) of every Endpoints object of ours."""
        return [key for key, entry in self._entries.items() if self.is_ours(entry)]
