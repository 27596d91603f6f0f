"""Leaner EndpointSlices for long-lived caches.

``compact_slice`` rewrites a freshly decoded slice in place: repeated strings (node and zone
names, ``Pod``, the namespace) interned, equal conditions dicts shared; a pod's own strings are
left alone (an interning entry would cost what it saves). The result compares equal and
serialises the same; treat it as read-only. ``CachedSlice`` goes further (:mod:`.cached_slice`).
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from typing import Any, TypeVar

__all__ = ["compact_slice", "shared_strings"]

_CONDITION_KEYS = frozenset(("ready", "serving", "terminating"))
_REF_KEYS = ("kind", "namespace")
_ENDPOINT_STRINGS = ("nodeName", "zone")

_Slice = TypeVar("_Slice", bound=MutableMapping[str, Any])

_shared_conditions: dict[tuple[tuple[str, Any], ...], dict[str, bool]] = {}
"""Keyed by the conditions' items in their order; at most 27 x 6 entries (each condition
absent, true or false, in any key order)."""


def _conditions(value: Any) -> Any:
    """The shared dict equal to ``value`` (same key order), or ``value`` itself when it is not
    a dict of the three boolean conditions."""
    if type(value) is not dict:
        return value
    items = tuple(value.items())
    # Types first: 0 == False and 1 == True, so a lookup alone would turn {"ready": 0} into
    # the shared {"ready": false}.
    if not value.keys() <= _CONDITION_KEYS or any(type(flag) is not bool for _, flag in items):
        return value
    shared = _shared_conditions.get(items)
    if shared is None:
        shared = _shared_conditions[items] = dict(items)
    return shared


def _intern_values(mapping: dict[str, Any], keys: tuple[str, ...]) -> None:
    intern = sys.intern
    for key in keys:
        value = mapping.get(key)
        if type(value) is str:
            mapping[key] = intern(value)


def compact_slice(endpoint_slice: _Slice) -> _Slice:
    """Share the strings and condition dicts of ``endpoint_slice``'s endpoints, in place.

    For objects the caller owns and will not modify afterwards (a decoded watch event, say).
    Anything not shaped like an EndpointSlice is left as it is. Returns the same object.
    """
    endpoints = endpoint_slice.get("endpoints")
    if type(endpoints) is not list:
        return endpoint_slice
    for endpoint in endpoints:
        if type(endpoint) is not dict:
            continue
        if "conditions" in endpoint:
            endpoint["conditions"] = _conditions(endpoint["conditions"])
        _intern_values(endpoint, _ENDPOINT_STRINGS)
        ref = endpoint.get("targetRef")
        if type(ref) is dict:
            _intern_values(ref, _REF_KEYS)
    return endpoint_slice


_UNSHARED = frozenset(("resourceVersion", "creationTimestamp", "deletionTimestamp", "annotations"))
"""Keys whose values are never worth sharing: unique per object or per version (annotation
values are often long and unique, such as a trigger time)."""


def shared_strings(value: Any) -> Any:
    """A copy of a small JSON tree (an object's metadata, a Service's spec) with its keys and
    string values interned, except under ``_UNSHARED`` keys.

    A decoded object holds fresh copies of strings that thousands of cached objects repeat:
    the keys of every event, ``"IPv4"``, ``"TCP"``, ``"ClusterIP"``, label keys and values,
    owner references' kinds and API versions. Sharing them makes each cached Service or slice
    hold only its unique strings.
    """
    intern = sys.intern
    if type(value) is dict:
        return {
            intern(k) if type(k) is str else k: (v if k in _UNSHARED else shared_strings(v))
            for k, v in value.items()
        }
    if type(value) is list:
        return [shared_strings(v) for v in value]
    if type(value) is str:
        return intern(value)
    return value
