"""The ``core/v1`` Endpoints objects, as last seen, for the Endpoints the operator writes.

Ours and the sources of mirroring Services (``keep``) are held whole; any other is a slim
stand-in (name, namespace, uid, resourceVersion, labels), since holding kube-controller-manager's
whole would cost memory in proportion to every pod. Indexed by the Service's key. Filled by a
list-watch started only on demand (:class:`~.on_demand.OnDemand`): watching Endpoints costs a
decoded event per pod change.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from endpointslice_operator.controller.cache.on_demand import OnDemand
from endpointslice_operator.reconciler.core_endpoints import LABEL_ENDPOINTS_MANAGED_BY

__all__ = ["LABEL_ENDPOINTS_MANAGED_BY", "LABEL_MANAGED_BY", "EndpointsIndex", "endpoints_key"]

LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
"""The label marking our Endpoints: the same key and value as on our EndpointSlices."""


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def endpoints_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an Endpoints object."""
    metadata = _metadata(obj)
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


class EndpointsIndex(OnDemand):
    """Endpoints objects by ``namespace/name`` (the key of the Service they belong to), and
    the state of their watch."""

    def __init__(self, managed_by: str, keep: Callable[[str, str], bool] | None = None) -> None:
        super().__init__()
        self.managed_by = managed_by
        self.keep = keep
        """Whether someone else's Endpoints object (namespace, name) is to be held whole (the
        source of a mirroring Service); None: never."""
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._full: set[tuple[str, str]] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def is_ours(self, obj: Mapping[str, Any] | None) -> bool:
        """Either managed-by label (ours carry both) with our name."""
        if obj is None:
            return False
        labels = _metadata(obj).get("labels")
        return isinstance(labels, Mapping) and self.managed_by in (
            labels.get(LABEL_MANAGED_BY),
            labels.get(LABEL_ENDPOINTS_MANAGED_BY),
        )

    def put(self, obj: Mapping[str, Any], *, full: bool = False) -> dict[str, Any] | None:
        """Store an Endpoints object (whole if ``full``, ours, or kept); returns the entry it
        replaced."""
        key = endpoints_key(obj)
        whole = full or self.is_ours(obj) or (self.keep is not None and self.keep(*key))
        if whole:
            self._full.add(key)
        else:
            self._full.discard(key)
        if whole:
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
        key = endpoints_key(obj)
        self._full.discard(key)
        return self._entries.pop(key, None)

    def is_full(self, namespace: str, name: str) -> bool:
        """Whether the object is held whole (else only its metadata)."""
        return (namespace, name) in self._full

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as last seen (whole if ours, else a stand-in); do not modify it."""
        return self._entries.get((namespace, name))

    def names(self) -> list[tuple[str, str]]:
        return list(self._entries)

    def ours(self) -> list[tuple[str, str]]:
        """(namespace, name) of every Endpoints object of ours."""
        return [key for key, entry in self._entries.items() if self.is_ours(entry)]
