"""The internal endpoint form: identity key, comparable state, and the JSON it becomes.

Upstream identifies an endpoint by a hash of (sorted addresses, hostname, targetRef namespace,
targetRef name) and compares two endpoints with the same identity by nodeName, zone, the three
conditions and targetRef minus resourceVersion (``EndpointsEqualBeyondHash``; hints are not
compared). Here both are plain tuples, so identity is a dict key and "equal beyond hash" is one
tuple comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "Endpoint",
    "EndpointKey",
    "EndpointState",
    "TargetRef",
    "endpoint_from_dict",
    "new_endpoint",
]

EndpointKey = tuple[tuple[str, ...], str, str, str]
"""``(sorted addresses, hostname or "", targetRef namespace, targetRef name)``."""

TargetRef = tuple[str, str, str, str, str, str]
"""``(kind, namespace, name, uid, apiVersion, fieldPath)``; absent fields are ``""``, like Go."""

EndpointState = tuple[
    str | None, str | None, bool | None, bool | None, bool | None, TargetRef | None
]
"""``(nodeName, zone, ready, serving, terminating, targetRef)``: what "equal beyond hash" reads."""


class Endpoint(NamedTuple):
    key: EndpointKey
    state: EndpointState
    addresses: tuple[str, ...]
    hostname: str | None

    def to_dict(self) -> dict[str, Any]:
        """A fresh ``discovery.k8s.io/v1`` endpoint (never carrying hints)."""
        node_name, zone, ready, serving, terminating, target_ref = self.state
        if ready is not None and serving is not None and terminating is not None:
            conditions = {"ready": ready, "serving": serving, "terminating": terminating}
        else:
            conditions = {
                field: value
                for field, value in (
                    ("ready", ready),
                    ("serving", serving),
                    ("terminating", terminating),
                )
                if value is not None
            }
        result: dict[str, Any] = {"addresses": list(self.addresses), "conditions": conditions}
        if self.hostname is not None:
            result["hostname"] = self.hostname
        if target_ref is not None:
            kind, namespace, name, uid, api_version, field_path = target_ref
            if kind and namespace and name and uid and not api_version and not field_path:
                result["targetRef"] = {
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                    "uid": uid,
                }
            else:
                fields = (
                    ("kind", kind),
                    ("namespace", namespace),
                    ("name", name),
                    ("uid", uid),
                    ("apiVersion", api_version),
                    ("fieldPath", field_path),
                )
                result["targetRef"] = {field: value for field, value in fields if value}
        if node_name is not None:
            result["nodeName"] = node_name
        if zone is not None:
            result["zone"] = zone
        return result


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def endpoint_from_dict(raw: Mapping[str, Any]) -> Endpoint:
    """Parse an endpoint of an existing slice (malformed fields read as absent)."""
    addresses_raw = raw.get("addresses")
    addresses = (
        tuple(a for a in addresses_raw if isinstance(a, str))
        if isinstance(addresses_raw, list)
        else ()
    )
    hostname = _opt_str(raw.get("hostname"))
    conditions = raw.get("conditions")
    conditions = conditions if isinstance(conditions, Mapping) else {}
    ref_raw = raw.get("targetRef")
    target_ref: TargetRef | None = None
    if isinstance(ref_raw, Mapping):
        target_ref = (
            _str(ref_raw.get("kind")),
            _str(ref_raw.get("namespace")),
            _str(ref_raw.get("name")),
            _str(ref_raw.get("uid")),
            _str(ref_raw.get("apiVersion")),
            _str(ref_raw.get("fieldPath")),
        )
    key: EndpointKey = (
        tuple(sorted(addresses)),
        hostname or "",
        target_ref[1] if target_ref else "",
        target_ref[2] if target_ref else "",
    )
    state: EndpointState = (
        _opt_str(raw.get("nodeName")),
        _opt_str(raw.get("zone")),
        _opt_bool(conditions.get("ready")),
        _opt_bool(conditions.get("serving")),
        _opt_bool(conditions.get("terminating")),
        target_ref,
    )
    return Endpoint(key, state, addresses, hostname)


def new_endpoint(
    key: EndpointKey, state: EndpointState, addresses: tuple[str, ...], hostname: str | None
) -> Endpoint:
    """``Endpoint(...)`` without the keyword handling of a NamedTuple constructor (hot path)."""
    return _tuple_new(Endpoint, (key, state, addresses, hostname))


_tuple_new = tuple.__new__
