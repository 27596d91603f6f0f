"""EndpointSlices as a long-lived cache holds them: the endpoints in parsed form only.

A controller caches every slice it manages, and the planner parses each one's endpoints into
identity and state tuples (``existing_entry``). Holding the decoded endpoint JSON as well keeps
every endpoint twice: a dict, its address list and its ``targetRef`` dict (about 450 bytes)
beside the parse (about 250). ``CachedSlice`` keeps the parse alone for endpoints of the shape
this reconciler and kube-controller-manager write (one address, the three conditions, a Pod
``targetRef``, optional ``nodeName`` and ``zone``, nothing else) and gives the JSON back on
demand: ``cached["endpoints"]`` builds a fresh list that compares equal to the one decoded.
A slice with any other endpoint (hints, a hostname, several addresses, a field this module
does not know) keeps its endpoint JSON as given, compacted (``compact_slice``), so nothing is
ever lost.

The planner takes the parse straight from a ``CachedSlice`` (``SliceParseCache.view``), without
parsing or caching anything. The other fields are held with their repeated strings shared
(``shared_strings``). ``metadata.managedFields`` is dropped (updates leave it out and the
API server keeps it). A ``CachedSlice`` is a read-only ``Mapping``, not a dict: ``dict(cached)``
gives a plain copy (with the endpoint JSON rebuilt).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

from .compact import compact_slice, shared_strings
from .endpoints import EndpointKey, EndpointState, existing_entry
from .ports import PortKey, ports_from_dicts

__all__ = ["CachedSlice", "ParsedBody"]

ParsedBody = tuple[PortKey, tuple[EndpointKey, ...], tuple[EndpointState, ...]]
"""The planner's parse of a slice: its port key and each endpoint's identity and state."""

_ENDPOINTS = "endpoints"
_ABSENT = object()
_REBUILT = object()
"""``CachedSlice._endpoints`` when the endpoint JSON is rebuilt from the parse."""


def _plain_entry(endpoint: Any) -> tuple[str, EndpointState] | None:
    """Address and state of an endpoint that ``_endpoint_json`` rebuilds exactly, else None.

    Strings are interned (shared with the pod records and between slices)."""
    if type(endpoint) is not dict:
        return None
    addresses = endpoint.get("addresses")
    conditions = endpoint.get("conditions")
    ref = endpoint.get("targetRef")
    node_name = endpoint.get("nodeName", _ABSENT)
    zone = endpoint.get("zone", _ABSENT)
    if (
        len(endpoint) != 3 + (node_name is not _ABSENT) + (zone is not _ABSENT)
        or type(addresses) is not list
        or len(addresses) != 1
        or type(addresses[0]) is not str
        or type(conditions) is not dict
        or len(conditions) != 3
        or type(ref) is not dict
        or len(ref) != 4
        or (node_name is not _ABSENT and type(node_name) is not str)
        or (zone is not _ABSENT and type(zone) is not str)
    ):
        return None
    ready = conditions.get("ready")
    serving = conditions.get("serving")
    terminating = conditions.get("terminating")
    kind, ns, name, uid = ref.get("kind"), ref.get("namespace"), ref.get("name"), ref.get("uid")
    if (
        type(ready) is not bool
        or type(serving) is not bool
        or type(terminating) is not bool
        or type(kind) is not str
        or type(ns) is not str
        or type(name) is not str
        or type(uid) is not str
    ):
        return None
    intern = sys.intern
    ns, name = intern(ns), intern(name)
    state: EndpointState = (
        intern(node_name) if type(node_name) is str else None,
        intern(zone) if type(zone) is str else None,
        ready,
        serving,
        terminating,
        intern(kind),
        ns,
        name,
        intern(uid),
        "",
        "",
    )
    return intern(addresses[0]), state


def _plain_key(address: str, state: EndpointState) -> EndpointKey:
    """The identity ``existing_entry`` gives the endpoint ``_plain_entry`` parsed."""
    return ((address,), "", state[6], state[7])


def _endpoint_json(address: str, state: EndpointState) -> dict[str, Any]:
    """The endpoint ``_plain_entry`` parsed, as the API server serialises it."""
    node_name, zone, ready, serving, terminating, kind, ns, name, uid, _, _ = state
    endpoint: dict[str, Any] = {
        "addresses": [address],
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {"kind": kind, "namespace": ns, "name": name, "uid": uid},
    }
    if node_name is not None:
        endpoint["nodeName"] = node_name
    if zone is not None:
        endpoint["zone"] = zone
    return endpoint


class CachedSlice(Mapping[str, Any]):
    """A decoded EndpointSlice for a long-lived cache (see the module docstring).

    ``parsed`` is what ``SliceParseCache.view`` would compute for the same slice.
    """

    __slots__ = ("_addresses", "_endpoints", "_fields", "_keys", "_ports", "_states")

    def __init__(self, endpoint_slice: Mapping[str, Any]) -> None:
        fields = {k: v for k, v in endpoint_slice.items() if k != _ENDPOINTS}
        metadata = fields.get("metadata")
        if type(metadata) is dict and "managedFields" in metadata:
            fields["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
        self._fields: dict[str, Any] = shared_strings(fields)
        self._ports: PortKey = ports_from_dicts(fields.get("ports"))
        raw = endpoint_slice.get(_ENDPOINTS, _ABSENT)
        entries = [_plain_entry(e) for e in raw] if type(raw) is list else None
        if entries is not None and None not in entries:
            # Every endpoint is rebuilt from its address and state: hold those alone (the
            # identity keys are built when the planner asks, a few tenths of a microsecond each).
            self._endpoints: Any = _REBUILT
            self._addresses: tuple[str, ...] = tuple(e[0] for e in entries if e is not None)
            self._states: tuple[EndpointState, ...] = tuple(e[1] for e in entries if e is not None)
            self._keys: tuple[EndpointKey, ...] | None = None
            return
        self._endpoints = raw
        self._addresses = ()
        pairs = []
        if type(raw) is list:
            compact_slice({_ENDPOINTS: raw})
            pairs = [existing_entry(e) for e in raw if isinstance(e, Mapping)]
        self._keys = tuple(k for k, _ in pairs)
        self._states = tuple(s for _, s in pairs)

    @property
    def parsed(self) -> ParsedBody:
        """What ``SliceParseCache.view`` would compute for the same slice."""
        keys = self._keys
        if keys is None:
            keys = tuple(map(_plain_key, self._addresses, self._states))
        return self._ports, keys, self._states

    @property
    def endpoints_rebuilt(self) -> bool:
        """True when the endpoint JSON is not held but rebuilt from the parse on each read."""
        return self._endpoints is _REBUILT

    def _endpoint_list(self) -> Any:
        if self._endpoints is _REBUILT:
            return list(map(_endpoint_json, self._addresses, self._states))
        return self._endpoints

    def __getitem__(self, key: str) -> Any:
        if key == _ENDPOINTS:
            if self._endpoints is _ABSENT:
                raise KeyError(key)
            return self._endpoint_list()
        return self._fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        if key == _ENDPOINTS:
            return default if self._endpoints is _ABSENT else self._endpoint_list()
        return self._fields.get(key, default)

    def __contains__(self, key: object) -> bool:
        if key == _ENDPOINTS:
            return self._endpoints is not _ABSENT
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        yield from self._fields
        if self._endpoints is not _ABSENT:
            yield _ENDPOINTS

    def __len__(self) -> int:
        return len(self._fields) + (self._endpoints is not _ABSENT)

    def __repr__(self) -> str:
        return f"CachedSlice({dict(self)!r})"
