"""EndpointSlices as a long-lived cache holds them: the endpoints in parsed form only.

Holding the decoded endpoint JSON beside the planner's parse keeps every endpoint twice (about
450 bytes beside 250). ``CachedSlice`` keeps the parse alone for endpoints of the shape this
reconciler and kube-controller-manager write, rebuilding equal JSON on read; any other endpoint
keeps its JSON (compacted), so nothing is lost. Repeated strings are interned, a pod's own taken
from its ``PodRecord``; ``managedFields`` is dropped. A read-only ``Mapping``; ``dict(cached)``
is a plain copy (docs/reconciler.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .compact import compact_slice, shared_strings
from .endpoints import EndpointKey, EndpointState, existing_entry
from .ports import PortKey, ports_from_dicts
from .records import PodRecord

__all__ = ["CachedSlice", "ParsedBody", "PodLookup"]

ParsedBody = tuple[PortKey, tuple[EndpointKey, ...], tuple[EndpointState, ...]]
"""The planner's parse of a slice: its port key and each endpoint's identity and state."""

PodLookup = Callable[[str, str], PodRecord | None]
"""``(namespace, name) -> the pod's record``, or None when it is not known."""

_ENDPOINTS = "endpoints"
_ABSENT = object()
_REBUILT = object()
"""``CachedSlice._endpoints`` when the endpoint JSON is rebuilt from the parse."""


_Columns = tuple[
    tuple[str, str],
    tuple[str, ...],
    tuple[str | None, ...],
    tuple[str | None, ...],
    bytes,
    tuple[str, ...],
    tuple[str, ...],
]
"""``((kind, namespace), addresses, nodes, zones, condition bits, names, uids)``."""


def _columns(endpoints: list[Any], pods: PodLookup | None) -> _Columns | None:
    """The endpoints column by column, if ``_endpoint_json`` rebuilds every one exactly and
    all targetRefs have one kind and namespace (a Service's pods do); else None.

    Strings repeated across endpoints (node, zone, kind, namespace) are interned; the pod's own
    (name, uid, address) are taken from its record when ``pods`` knows it (same uid)."""
    intern = sys.intern
    addresses: list[str] = []
    nodes: list[str | None] = []
    zones: list[str | None] = []
    bits: list[int] = []
    names: list[str] = []
    uids: list[str] = []
    ref_kind = ref_ns = ""  # the targetRefs' one kind and namespace, from the first endpoint
    for endpoint in endpoints:
        if type(endpoint) is not dict:
            return None
        given = endpoint.get("addresses")
        conditions = endpoint.get("conditions")
        ref = endpoint.get("targetRef")
        node_name = endpoint.get("nodeName", _ABSENT)
        zone = endpoint.get("zone", _ABSENT)
        if (
            len(endpoint) != 3 + (node_name is not _ABSENT) + (zone is not _ABSENT)
            or type(given) is not list
            or len(given) != 1
            or type(given[0]) is not str
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
        kind, ns = ref.get("kind"), ref.get("namespace")
        name, uid = ref.get("name"), ref.get("uid")
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
        if not addresses:
            ref_kind, ref_ns = intern(kind), intern(ns)
        elif kind != ref_kind or ns != ref_ns:
            return None
        address = given[0]
        record = pods(ns, name) if pods is not None else None
        if record is not None and record.uid == uid:
            # The pod's own strings, held once for the record and the slice.
            name, uid = record.name, record.uid
            for known in record.pod_ips:
                if known == address:
                    address = known
                    break
        addresses.append(address)
        nodes.append(intern(node_name) if type(node_name) is str else None)
        zones.append(intern(zone) if type(zone) is str else None)
        bits.append(ready | serving << 1 | terminating << 2)
        names.append(name)
        uids.append(uid)
    return (
        (ref_kind, ref_ns),
        tuple(addresses),
        tuple(nodes),
        tuple(zones),
        bytes(bits),
        tuple(names),
        tuple(uids),
    )


def _plain_key(address: str, state: EndpointState) -> EndpointKey:
    """The identity ``existing_entry`` gives an endpoint held in columns."""
    return ((address,), "", state[6], state[7])


def _endpoint_json(address: str, state: EndpointState) -> dict[str, Any]:
    """An endpoint held in columns, as the API server serialises it."""
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

    __slots__ = (
        "_addresses",
        "_endpoints",
        "_fields",
        "_flags",
        "_keys",
        "_names",
        "_nodes",
        "_ports",
        "_ref",
        "_states",
        "_uids",
        "_zones",
    )

    def __init__(self, endpoint_slice: Mapping[str, Any], pods: PodLookup | None = None) -> None:
        fields = {k: v for k, v in endpoint_slice.items() if k != _ENDPOINTS}
        metadata = fields.get("metadata")
        if type(metadata) is dict and "managedFields" in metadata:
            fields["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
        self._fields: dict[str, Any] = shared_strings(fields)
        self._ports: PortKey = ports_from_dicts(fields.get("ports"))
        raw = endpoint_slice.get(_ENDPOINTS, _ABSENT)
        columns = _columns(raw, pods) if type(raw) is list else None
        if columns is not None:
            # Every endpoint is rebuilt from its columns (a tuple per field, the conditions as
            # bits: about 45 bytes per endpoint, against about 150 as state tuples).
            self._endpoints: Any = _REBUILT
            self._hold(columns)
            return
        self._endpoints = raw
        pairs = []
        if type(raw) is list:
            compact_slice({_ENDPOINTS: raw})
            pairs = [existing_entry(e) for e in raw if isinstance(e, Mapping)]
        self._keys: tuple[EndpointKey, ...] = tuple(k for k, _ in pairs)
        self._states: tuple[EndpointState, ...] = tuple(s for _, s in pairs)

    def _hold(self, columns: _Columns) -> None:
        (
            self._ref,
            self._addresses,
            self._nodes,
            self._zones,
            self._flags,
            self._names,
            self._uids,
        ) = columns

    def _column_states(self) -> tuple[EndpointState, ...]:
        kind, ns = self._ref
        columns = zip(self._nodes, self._zones, self._flags, self._names, self._uids, strict=True)
        return tuple(
            (node, zone, bool(b & 1), bool(b & 2), bool(b & 4), kind, ns, name, uid, "", "")
            for node, zone, b, name, uid in columns
        )  # fmt: skip

    def share_pod_strings(self, pods: PodLookup) -> None:
        """Take the pods' own strings from their records now (for slices cached before their
        pods were)."""
        if self._endpoints is not _REBUILT:
            return
        ns = self._ref[1]
        records = [pods(ns, name) for name in self._names]
        if all(
            record is not None and record.name is name and record.uid is uid
            for record, name, uid in zip(records, self._names, self._uids, strict=True)
        ):
            return  # shared already (or nothing to share): no new tuples
        columns = _columns(self._endpoint_list(), pods)
        if columns is not None:
            self._hold(columns)

    @property
    def parsed(self) -> ParsedBody:
        """What ``SliceParseCache.view`` would compute for the same slice."""
        if self._endpoints is _REBUILT:
            states = self._column_states()
            return self._ports, tuple(map(_plain_key, self._addresses, states)), states
        return self._ports, self._keys, self._states

    @property
    def endpoints_rebuilt(self) -> bool:
        """True when the endpoint JSON is not held but rebuilt from the parse on each read."""
        return self._endpoints is _REBUILT

    def _endpoint_list(self) -> Any:
        if self._endpoints is _REBUILT:
            return list(map(_endpoint_json, self._addresses, self._column_states()))
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
