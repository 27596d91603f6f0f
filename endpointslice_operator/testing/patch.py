"""The three PATCH flavours kube-apiserver accepts for built-in types.

* JSON merge patch (RFC 7386), ``application/merge-patch+json``;
* JSON patch (RFC 6902), ``application/json-patch+json``;
* strategic merge patch, ``application/strategic-merge-patch+json``: like a merge patch, but
  lists that Kubernetes declares with a merge strategy are merged element by element using their
  merge key (conditions by ``type``, containers by ``name``, ...), and the ``$patch``,
  ``$setElementOrder/<list>``, ``$deleteFromPrimitiveList/<list>`` and ``$retainKeys``
  directives are honoured.

The emulator has no OpenAPI schema: the merge keys of the resources it serves are listed in
:data:`MERGE_KEYS`. Lists not listed there are atomic (replaced), as for EndpointSlice
``endpoints`` and ``ports``.
"""

from __future__ import annotations

import copy
from typing import Any

from endpointslice_operator.testing.errors import ApiError

JSON = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)

# A list of primitives merged as a set (patchStrategy "merge" without a merge key).
PRIMITIVE = ""

# Field paths (list fields named from the object root, list indices left out) -> merge key.
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "ownerReferences"): "uid",
    ("metadata", "finalizers"): PRIMITIVE,
    ("status", "conditions"): "type",
    ("status", "addresses"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("spec", "podCIDRs"): PRIMITIVE,
    ("spec", "ports"): "port",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "topologySpreadConstraints"): "topologyKey",
    ("spec", "resourceClaims"): "name",
}
for _containers in ("containers", "initContainers", "ephemeralContainers"):
    MERGE_KEYS[("spec", _containers)] = "name"
    MERGE_KEYS[("spec", _containers, "ports")] = "containerPort"
    MERGE_KEYS[("spec", _containers, "env")] = "name"
    MERGE_KEYS[("spec", _containers, "volumeMounts")] = "mountPath"
    MERGE_KEYS[("spec", _containers, "volumeDevices")] = "devicePath"

_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def _invalid_patch(message: str) -> ApiError:
    return ApiError(422, message, reason="Invalid")


# ---------------------------------------------------------------------------------------------
# JSON merge patch


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``null`` deletes, objects merge recursively, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------------------------------------
# JSON patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"invalid JSON pointer: {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (token.startswith("0") and token != "0"):
        raise _invalid_patch(f"invalid array index: {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise _invalid_patch(f"array index out of bounds: {index}")
    return index


def _resolve(doc: Any, tokens: list[str], path: str) -> Any:
    for token in tokens:
        if isinstance(doc, dict):
            if token not in doc:
                raise _invalid_patch(f"doc is missing path: {path!r}")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, allow_end=False)]
        else:
            raise _invalid_patch(f"doc is missing path: {path!r}")
    return doc


def _add(doc: Any, tokens: list[str], value: Any, path: str) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise _invalid_patch(f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, tokens: list[str], path: str) -> tuple[Any, Any]:
    if not tokens:
        raise _invalid_patch("unable to remove the whole document")
    parent = _resolve(doc, tokens[:-1], path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f"unable to remove nonexistent key: {last}: missing value")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise _invalid_patch(f"doc is missing path: {path!r}")


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 on a deep copy of ``doc``; a failed ``test`` or bad path is a 422."""
    if not isinstance(operations, list):
        raise ApiError(400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result = copy.deepcopy(doc)
    for operation in operations:
        if not isinstance(operation, dict) or "op" not in operation:
            raise _invalid_patch(f"invalid JSON patch operation: {operation!r}")
        op, path = operation["op"], operation.get("path", "")
        tokens = _pointer(path)
        if op == "add":
            result = _add(result, tokens, copy.deepcopy(operation.get("value")), path)
        elif op == "remove":
            result, _ = _remove(result, tokens, path)
        elif op == "replace":
            _resolve(result, tokens, path)
            if tokens:
                result, _ = _remove(result, tokens, path)
            result = _add(result, tokens, copy.deepcopy(operation.get("value")), path)
        elif op in ("move", "copy"):
            source = operation.get("from", "")
            from_tokens = _pointer(source)
            if op == "move":
                result, value = _remove(result, from_tokens, source)
            else:
                value = copy.deepcopy(_resolve(result, from_tokens, source))
            result = _add(result, tokens, value, path)
        elif op == "test":
            if _resolve(result, tokens, path) != operation.get("value"):
                raise _invalid_patch(f"testing value {path} failed: test failed")
        else:
            raise _invalid_patch(f"Unexpected kind: {op}")
    return result


# ---------------------------------------------------------------------------------------------
# Strategic merge patch


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not k.startswith("$") and v is not None
        }
    if isinstance(value, list):
        return [_strip_directives(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def strategic_merge_patch(original: Any, patch: Any) -> Any:
    """Apply a strategic merge patch to ``original`` (a full object) and return a new object."""
    if not isinstance(patch, dict):
        raise ApiError(400, "strategic merge patch must be a JSON object")
    merged = _merge_map(original if isinstance(original, dict) else {}, patch, ())
    return merged if merged is not None else {}


def _merge_map(original: JSON, patch: JSON, path: tuple[str, ...]) -> JSON | None:
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip_directives(patch)  # type: ignore[no-any-return]
    if directive == "delete":
        return None
    if directive is not None:
        raise _invalid_patch(f"Unknown patch type: {directive}, patch: {patch!r}")

    result = copy.deepcopy(original)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(_SET_ORDER):
            orders[key[len(_SET_ORDER) :]] = value or []
        elif key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            if isinstance(result.get(field), list):
                result[field] = [item for item in result[field] if item not in (value or [])]

    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        child = (*path, key)
        current = result.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged = _merge_map(current, value, child)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and child in MERGE_KEYS:
            result[key] = _merge_list(
                current if isinstance(current, list) else [], value, MERGE_KEYS[child], child
            )
        elif isinstance(value, dict):
            merged = _merge_map({}, value, child)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = _strip_directives(value)

    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _apply_order(result[field], order, MERGE_KEYS.get((*path, field)))

    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(
    original: list[Any], patch: list[Any], key: str, path: tuple[str, ...]
) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            _strip_directives(item)
            for item in patch
            if not (isinstance(item, dict) and "$patch" in item)
        ]
    if key == PRIMITIVE:
        result = list(original)
        for item in patch:
            if item not in result:
                result.append(item)
        return result

    result = copy.deepcopy(original)
    for item in patch:
        if not isinstance(item, dict):
            raise _invalid_patch(f"merging an object in json but data type is not map, {item!r}")
        if key not in item:
            raise _invalid_patch(f"map: {item!r} does not contain declared merge key: {key}")
        position = next(
            (i for i, existing in enumerate(result) if existing.get(key) == item[key]), None
        )
        if item.get("$patch") == "delete":
            if position is not None:
                del result[position]
            continue
        if position is None:
            result.append(_strip_directives(item))
        else:
            merged = _merge_map(result[position], item, path)
            if merged is None:
                del result[position]
            else:
                result[position] = merged
    return result


def _apply_order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """$setElementOrder: items named in ``order`` take that order; the rest keep theirs after."""

    def identity(item: Any) -> Any:
        if key and isinstance(item, dict):
            return item.get(key)
        return item

    wanted = [identity(o) for o in order]
    ranked = sorted(
        (item for item in items if identity(item) in wanted),
        key=lambda item: wanted.index(identity(item)),
    )
    rest = [item for item in items if identity(item) not in wanted]
    return ranked + rest


def apply_patch(original: JSON, patch: Any, content_type: str) -> JSON:
    """Dispatch on the request's Content-Type (media-type parameters ignored)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == MERGE_PATCH:
        result = merge_patch(original, patch)
    elif media == JSON_PATCH:
        result = json_patch(original, patch)
    elif media == STRATEGIC_MERGE_PATCH:
        result = strategic_merge_patch(original, patch)
    elif media == APPLY_PATCH:
        raise ApiError(
            415, "server-side apply is not supported by the emulator; use client-side apply"
        )
    else:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(PATCH_TYPES)}",
        )
    if not isinstance(result, dict):
        raise ApiError(422, "the patch did not produce an object")
    return result
