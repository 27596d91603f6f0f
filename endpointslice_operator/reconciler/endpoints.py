"""The internal endpoint form: identity key, comparable state, and the JSON it becomes.

Upstream identifies an endpoint by a hash of (sorted addresses, hostname, targetRef namespace,
targetRef name) and compares two endpoints with the same identity by nodeName, zone, the three
conditions and targetRef minus resourceVersion (``EndpointsEqualBeyondHash``; hints are not
compared). Here both are flat tuples, so identity is a dict key and "equal beyond hash" is one
tuple comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "Endpoint",
    "EndpointKey",
    "EndpointState",
    "endpoint_from_dict",
    "existing_entry",
    "new_endpoint",
]

EndpointKey = tuple[tuple[str, ...], str, str, str]
"""``(sorted addresses, hostname or "", targetRef namespace, targetRef name)``."""

EndpointState = tuple[
    str | None, str | None, bool | None, bool | None, bool | None,
    str | None, str, str, str, str, str,
]  # fmt: skip
"""``(nodeName, zone, ready, serving, terminating, targetRef kind, namespace, name, uid,
apiVersion, fieldPath)``: what "equal beyond hash" reads. The targetRef kind is ``None`` when
there is no targetRef; its other absent fields are ``""`` (Go's zero value)."""

_CONDITIONS = ("ready", "serving", "terminating")
_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "fieldPath")


class Endpoint(NamedTuple):
    key: EndpointKey
    state: EndpointState
    addresses: tuple[str, ...]
    hostname: str | None

    def to_dict(self) -> dict[str, Any]:
        """A fresh ``discovery.k8s.io/v1`` endpoint (never carrying hints)."""
        node_name, zone, ready, serving, terminating, kind, ns, name, uid, api, path = self.state
        if ready is not None and serving is not None and terminating is not None:
            conditions = {"ready": ready, "serving": serving, "terminating": terminating}
        else:
            conditions = {
                field: value
                for field, value in zip(_CONDITIONS, (ready, serving, terminating), strict=True)
                if value is not None
            }
        result: dict[str, Any] = {"addresses": list(self.addresses), "conditions": conditions}
        if self.hostname is not None:
            result["hostname"] = self.hostname
        if kind is not None:
            if kind and ns and name and uid and not api and not path:
                result["targetRef"] = {"kind": kind, "namespace": ns, "name": name, "uid": uid}
            else:
                values = (kind, ns, name, uid, api, path)
                result["targetRef"] = {
                    field: value for field, value in zip(_REF_FIELDS, values, strict=True) if value
                }
        if node_name is not None:
            result["nodeName"] = node_name
        if zone is not None:
            result["zone"] = zone
        return result


_tuple_new = tuple.__new__


def new_endpoint(
    key: EndpointKey, state: EndpointState, addresses: tuple[str, ...], hostname: str | None
) -> Endpoint:
    """``Endpoint(...)`` without the keyword handling of a NamedTuple constructor (hot path)."""
    return _tuple_new(Endpoint, (key, state, addresses, hostname))


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _parse(
    raw: Mapping[str, Any],
) -> tuple[EndpointKey, EndpointState, tuple[str, ...], str | None]:
    addresses_raw = raw.get("addresses")
    addresses = (
        tuple(a for a in addresses_raw if isinstance(a, str))
        if isinstance(addresses_raw, list)
        else ()
    )
    hostname = _opt_str(raw.get("hostname"))
    conditions = raw.get("conditions")
    conditions = conditions if isinstance(conditions, Mapping) else {}
    ref = raw.get("targetRef")
    if isinstance(ref, Mapping):
        kind: str | None = _str(ref.get("kind"))
        ns, name = _str(ref.get("namespace")), _str(ref.get("name"))
        uid, api, path = (
            _str(ref.get("uid")),
            _str(ref.get("apiVersion")),
            _str(ref.get("fieldPath")),
        )
    else:
        kind, ns, name, uid, api, path = None, "", "", "", "", ""
    sorted_addresses = addresses if len(addresses) < 2 else tuple(sorted(addresses))
    key: EndpointKey = (sorted_addresses, hostname or "", ns, name)
    state: EndpointState = (
        _opt_str(raw.get("nodeName")),
        _opt_str(raw.get("zone")),
        _opt_bool(conditions.get("ready")),
        _opt_bool(conditions.get("serving")),
        _opt_bool(conditions.get("terminating")),
        kind,
        ns,
        name,
        uid,
        api,
        path,
    )
    return key, state, addresses, hostname


def endpoint_from_dict(raw: Mapping[str, Any]) -> Endpoint:
    """Parse an endpoint given as JSON (malformed fields read as absent).

    Useful to build ``DesiredEndpoints`` from endpoints computed elsewhere (KEP-4770 style).
    """
    return new_endpoint(*_parse(raw))


def existing_entry(raw: Mapping[str, Any]) -> tuple[EndpointKey, EndpointState]:
    """Identity and state of an endpoint of an existing slice: all the planner reads of it.

    The common well-formed shape (what this reconciler and upstream write) takes a fast path;
    anything else goes through the defensive parser.
    """
    try:
        addresses = raw["addresses"]
        conditions = raw["conditions"]
        ref = raw["targetRef"]
        if (
            type(addresses) is list
            and len(addresses) == 1
            and type(addresses[0]) is str
            and len(conditions) == 3
            and len(ref) == 4
            and "hostname" not in raw
        ):
            ready, serving, terminating = (
                conditions["ready"],
                conditions["serving"],
                conditions["terminating"],
            )
            kind, ns, name, uid = ref["kind"], ref["namespace"], ref["name"], ref["uid"]
            node_name, zone = raw.get("nodeName"), raw.get("zone")
            if (
                type(ready) is bool
                and type(serving) is bool
                and type(terminating) is bool
                and type(kind) is str
                and type(ns) is str
                and type(name) is str
                and type(uid) is str
                and (node_name is None or type(node_name) is str)
                and (zone is None or type(zone) is str)
            ):
                key: EndpointKey = (tuple(addresses), "", ns, name)
                state: EndpointState = (
                    node_name, zone, ready, serving, terminating, kind, ns, name, uid, "", "",
                )  # fmt: skip
                return key, state
    except (KeyError, TypeError):
        pass
    key, state, _, _ = _parse(raw)
    return key, state
