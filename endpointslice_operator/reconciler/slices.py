"""EndpointSlice objects: reading existing ones, building new ones, comparing placeholders.

Existing slices are read into ``SliceView``s. Parsing a slice's endpoints is the expensive part
of a steady-state sync, so a ``SliceParseCache`` keeps the parsed endpoints per slice UID and
reuses them when it is handed the very same slice object again (same identity, same
resourceVersion), which is what a controller's cache of slices does between syncs. Keying by
identity rather than by (UID, resourceVersion) alone keeps the cache correct across API
servers or emulators that reuse those values. One cache is shared by default, so that even
short-lived ``Reconciler`` objects (``plan_service`` makes one per call) find the slices parsed.
Callers must not modify slices in place (replace them instead), as with any informer cache.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .cached_slice import CachedSlice, ParsedBody
from .endpoints import EndpointKey, EndpointState, existing_entry
from .labels import LABEL_SERVICE_NAME
from .ports import PortKey, in_hash_order, ports_from_dicts, ports_to_dicts

__all__ = [
    "API_VERSION",
    "KIND",
    "SHARED_PARSE_CACHE",
    "Owner",
    "SliceParseCache",
    "SliceView",
    "copy_for_update",
    "generate_name_prefix",
    "new_slice",
    "placeholder_equal",
    "service_controller_key",
]

API_VERSION = "discovery.k8s.io/v1"
KIND = "EndpointSlice"

_DNS1123_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")


@dataclass(frozen=True, slots=True)
class Owner:
    """The object that owns the slices (a Service, or any object for generic use)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    deleting: bool
    annotations: Mapping[str, str]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Owner:
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        annotations = metadata.get("annotations")

        def text(value: Any, default: str = "") -> str:
            return value if isinstance(value, str) else default

        return cls(
            api_version=text(obj.get("apiVersion"), "v1"),
            kind=text(obj.get("kind"), "Service"),
            namespace=text(metadata.get("namespace")),
            name=text(metadata.get("name")),
            uid=text(metadata.get("uid")),
            deleting=metadata.get("deletionTimestamp") is not None,
            annotations=annotations if isinstance(annotations, Mapping) else {},
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def owner_reference(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def owns(self, slice_: Mapping[str, Any]) -> bool:
        """Upstream ``ownedBy``: some ownerReference names this owner's uid, kind and apiVersion."""
        metadata = slice_.get("metadata")
        refs = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
        if not isinstance(refs, list):
            return False
        for ref in refs:
            if (
                isinstance(ref, Mapping)
                and ref.get("uid") == self.uid
                and ref.get("kind") == self.kind
                and ref.get("apiVersion") == self.api_version
            ):
                return True
        return False


def service_controller_key(slice_: Mapping[str, Any] | None) -> str:
    """Upstream ``ServiceControllerKey``: ``namespace/<service-name label>`` of a slice.

    Raises ``ValueError`` when there is no slice or it lacks the service-name label.
    """
    if slice_ is None:
        raise ValueError("nil EndpointSlice passed to ServiceControllerKey()")
    metadata = slice_.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    labels = metadata.get("labels")
    service = labels.get(LABEL_SERVICE_NAME) if isinstance(labels, Mapping) else None
    if not isinstance(service, str) or not service:
        raise ValueError(f"EndpointSlice missing {LABEL_SERVICE_NAME} label")
    namespace = metadata.get("namespace")
    return f"{namespace if isinstance(namespace, str) else ''}/{service}"


def generate_name_prefix(name: str) -> str:
    """``<name>-``, or the bare name if that is not a valid DNS-subdomain prefix."""
    prefix = f"{name}-"
    valid = (
        len(prefix) <= 253
        and set(prefix) <= _DNS1123_LABEL_CHARS
        and all(label and label[0].isalnum() for label in name.split("."))
    )
    return prefix if valid else name


@dataclass(slots=True)
class SliceView:
    """An existing slice, read once: the raw object plus what the planner needs."""

    raw: Mapping[str, Any]
    name: str
    address_type: str
    ports: PortKey
    labels: Mapping[str, str] | None
    keys: tuple[EndpointKey, ...]
    """Identity of each endpoint, in order."""
    states: tuple[EndpointState, ...]
    """State of each endpoint, parallel to ``keys`` (two flat tuples keep the cache small)."""


_ParsedBody = ParsedBody


class SliceParseCache:
    """Parsed ports and endpoints of existing slices, per UID, reused for the same object.

    Bounded by the number of endpoints held (about 270 bytes each); the oldest entries are
    evicted first. Safe to share between threads and between ``Reconciler`` instances.
    """

    def __init__(self, max_endpoints: int = 500_000) -> None:
        self._entries: dict[str, tuple[Mapping[str, Any], object, _ParsedBody]] = {}
        self._endpoints = 0
        self._max_endpoints = max_endpoints
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def endpoint_count(self) -> int:
        """Endpoints currently held."""
        return self._endpoints

    def view(self, raw: Mapping[str, Any]) -> SliceView:
        metadata = raw.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        uid = metadata.get("uid")
        version = metadata.get("resourceVersion")
        body: _ParsedBody | None = None
        if type(raw) is CachedSlice:
            body = raw.parsed  # parsed when it was cached: nothing to parse or to keep here
        elif isinstance(uid, str) and uid:
            entry = self._entries.get(uid)
            if entry is not None and entry[0] is raw and entry[1] == version:
                body = entry[2]
        if body is None:
            body = _parse_body(raw)
            if isinstance(uid, str) and uid:
                self._store(uid, raw, version, body)
        name = metadata.get("name")
        address_type = raw.get("addressType")
        labels = metadata.get("labels")
        return SliceView(
            raw=raw,
            name=name if isinstance(name, str) else "",
            address_type=address_type if isinstance(address_type, str) else "",
            ports=body[0],
            labels=labels if isinstance(labels, Mapping) else None,
            keys=body[1],
            states=body[2],
        )

    def _store(self, uid: str, raw: Mapping[str, Any], version: object, body: _ParsedBody) -> None:
        with self._lock:
            old = self._entries.pop(uid, None)
            if old is not None:
                self._endpoints -= len(old[2][1])
            self._entries[uid] = (raw, version, body)
            self._endpoints += len(body[1])
            while self._endpoints > self._max_endpoints and len(self._entries) > 1:
                evicted = self._entries.pop(next(iter(self._entries)))
                self._endpoints -= len(evicted[2][1])

    def forget(self, uids: Iterable[str]) -> None:
        """Drop the entries of deleted slices (entries are also evicted oldest-first)."""
        with self._lock:
            for uid in uids:
                old = self._entries.pop(uid, None)
                if old is not None:
                    self._endpoints -= len(old[2][1])


def _parse_body(raw: Mapping[str, Any]) -> _ParsedBody:
    raw_endpoints = raw.get("endpoints")
    entries = [
        existing_entry(e)
        for e in (raw_endpoints if isinstance(raw_endpoints, list) else ())
        if isinstance(e, Mapping)
    ]
    return (
        ports_from_dicts(raw.get("ports")),
        tuple(key for key, _ in entries),
        tuple(state for _, state in entries),
    )


SHARED_PARSE_CACHE = SliceParseCache()
"""The process-wide cache ``Reconciler`` instances use unless given their own."""


def new_slice(
    owner: Owner,
    address_type: str,
    ports: PortKey,
    labels: dict[str, str],
    endpoints: list[dict[str, Any]],
) -> dict[str, Any]:
    """Upstream ``newEndpointSlice``: generateName, namespace, controller ownerReference."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "generateName": generate_name_prefix(owner.name),
            "namespace": owner.namespace,
            "labels": labels,
            "ownerReferences": [owner.owner_reference()],
        },
        "addressType": address_type,
        "ports": ports_to_dicts(ports),
        "endpoints": endpoints,
    }


_IMMUTABLE = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A deep copy of JSON data (dicts, lists and scalars), about three times faster than
    ``copy.deepcopy``. Any other mapping (a cache's read-only view such as :class:`CachedSlice`)
    becomes a plain ``dict`` and any other list-like a ``list``, so the copy can always be
    edited; anything else is handed to ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind in _IMMUTABLE:
        return value
    if isinstance(value, Mapping):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [json_copy(v) for v in value]
    return copy.deepcopy(value)


def copy_for_update(
    existing: Mapping[str, Any],
    labels: dict[str, str],
    endpoints: list[dict[str, Any]],
) -> dict[str, Any]:
    """A fresh copy of an existing slice with new labels and endpoints.

    Only the small parts are copied (metadata, ports); the endpoint list is given. The
    ``managedFields`` are left out: the API server keeps them when an update omits them.
    """
    # Keys first, values only for the fields copied: reading a CachedSlice's endpoints
    # rebuilds their JSON, which the update replaces anyway.
    result = {
        k: json_copy(existing[k]) for k in existing if k not in ("metadata", "endpoints", "ports")
    }
    metadata_raw = existing.get("metadata")
    metadata = {
        k: json_copy(v)
        for k, v in (metadata_raw.items() if isinstance(metadata_raw, Mapping) else ())
        if k not in ("managedFields", "labels")
    }
    metadata["labels"] = labels
    result["apiVersion"] = API_VERSION
    result["kind"] = KIND
    result["metadata"] = metadata
    result["ports"] = in_hash_order(json_copy(existing.get("ports") or []))
    result["endpoints"] = endpoints
    return result


def _semantic_empty(value: Any) -> Any:
    """Normalise for apimachinery semantic equality, where nil and empty are equal."""
    if value is None or value == [] or value == {}:
        return None
    return value


def placeholder_equal(existing: Mapping[str, Any], placeholder: Mapping[str, Any]) -> bool:
    """Upstream ``placeholderSliceCompare``: of the metadata only namespace, labels and
    ownerReferences count; everything else (addressType, ports, endpoints) must match, with
    nil and empty lists/maps equal."""
    em = existing.get("metadata") or {}
    pm = placeholder.get("metadata") or {}
    if (em.get("namespace") or "") != (pm.get("namespace") or ""):
        return False
    if (em.get("labels") or {}) != (pm.get("labels") or {}):
        return False
    if _semantic_empty(em.get("ownerReferences")) != _semantic_empty(pm.get("ownerReferences")):
        return False
    for field in dict.fromkeys((*existing, *placeholder)):  # in order: no hash-seed luck
        if field in ("metadata", "apiVersion", "kind"):
            continue
        if _semantic_empty(existing.get(field)) != _semantic_empty(placeholder.get(field)):
            return False
    return True
