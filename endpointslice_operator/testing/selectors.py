"""Label and field selectors with kube-apiserver's syntax and matching rules.

Label selectors support equality (``a=b``, ``a==b``, ``a!=b``), sets (``a in (x,y)``,
``a notin (x)``), existence (``a``, ``!a``) and the numeric ``a>1`` / ``a<1`` comparisons.
Field selectors support ``=``, ``==`` and ``!=`` on the fields each resource type indexes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.names import label_key_errors, label_value_errors

JSON = dict[str, Any]

_OPERATORS = ("==", "!=", "=", ">", "<")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        match self.operator:
            case "=" | "in":
                return present and value in self.values
            case "!=" | "notin":
                return not present or value not in self.values
            case "exists":
                return present
            case "!":
                return not present
            case ">" | "<":
                if value is None:
                    return False
                try:
                    have, want = int(value), int(self.values[0])
                except ValueError:
                    return False
                return have > want if self.operator == ">" else have < want
        return False  # pragma: no cover - operators are closed


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


_SET_RE = re.compile(r"^\s*(?P<key>[^\s!=<>()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``text`` or raise a 400 ``ApiError`` with the parser's complaint."""
    if not text or not text.strip():
        return LabelSelector()
    requirements: list[Requirement] = []
    for raw in _split_top_level(text):
        part = raw.strip()
        if not part:
            raise ApiError(
                400, f"unable to parse requirement: found '', expected: identifier in {text!r}"
            )
        requirement = _parse_requirement(part)
        for msg in label_key_errors(requirement.key):
            raise ApiError(
                400, f"unable to parse requirement: key: Invalid value: {requirement.key!r}: {msg}"
            )
        if requirement.operator in {">", "<"}:
            try:
                int(requirement.values[0])
            except ValueError:
                raise _unparsable(
                    "for 'Gt', 'Lt' operators, the value must be an integer: "
                    f"{requirement.values[0]!r}"
                )
        else:
            for value in requirement.values:
                for msg in label_value_errors(value):
                    raise _unparsable(
                        f"values[0][{requirement.key}]: Invalid value: {value!r}: {msg}"
                    )
        requirements.append(requirement)
    return LabelSelector(tuple(requirements))


def _unparsable(detail: str) -> ApiError:
    return ApiError(400, f"unable to parse requirement: {detail}")


def _parse_requirement(part: str) -> Requirement:
    if part.startswith("!"):
        return Requirement(part[1:].strip(), "!")
    set_match = _SET_RE.match(part)
    if set_match:
        values = tuple(v.strip() for v in set_match["values"].split(","))
        if set_match["op"] == "in" and values == ("",):
            raise _unparsable(f"for 'in', 'notin' operators, values set can't be empty: {part!r}")
        return Requirement(set_match["key"], set_match["op"], values)
    if "(" in part or ")" in part:
        raise ApiError(400, f"unable to parse requirement: unexpected parenthesis in {part!r}")
    for op in _OPERATORS:
        key, found, value = part.partition(op)
        if found:
            normalized = "=" if op == "==" else op
            return Requirement(key.strip(), normalized, (value.strip(),))
    if " " in part:
        raise ApiError(
            400,
            f"unable to parse requirement: found {part!r}, expected: in, notin, =, ==, !=, gt, lt",
        )
    return Requirement(part, "exists")


def selector_from_match_labels(match: Mapping[str, Any] | None) -> LabelSelector:
    """A LabelSelector equivalent to a metav1.LabelSelector ``{matchLabels, matchExpressions}``."""
    if not match:
        return LabelSelector()
    requirements = [
        Requirement(k, "=", (str(v),)) for k, v in (match.get("matchLabels") or {}).items()
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    requirements.extend(
        Requirement(e["key"], ops[e["operator"]], tuple(e.get("values") or ()))
        for e in match.get("matchExpressions") or []
    )
    return LabelSelector(tuple(requirements))


# ---------------------------------------------------------------------------------------------
# Field selectors


def _path_getter(path: str) -> Callable[[JSON], str]:
    parts = path.split(".")
    if len(parts) == 2:
        return _two_part_getter(*parts)

    def get(obj: JSON) -> str:
        value: Any = obj
        for part in parts:
            if not isinstance(value, dict):
                return ""
            value = value.get(part)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


def _two_part_getter(outer: str, inner: str) -> Callable[[JSON], str]:
    """The getter of ``outer.inner`` (every indexed field but one): the same answers as the
    general one, without its loop; the store works these out on every write."""

    def get(obj: JSON) -> str:
        parent = obj.get(outer)
        if not isinstance(parent, dict):
            return ""
        value = parent.get(inner)
        if value.__class__ is str:
            return value
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "services": ("spec.clusterIP", "spec.type"),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
}
# events.k8s.io/v1 shares the core event's field labels, spelled the core way.
_GETTERS: dict[str, Callable[[JSON], str]] = {
    "source": _path_getter("source.component"),
}


_INDEXED: dict[str, tuple[tuple[str, Callable[[JSON], str]], ...]] = {
    plural: tuple((field, _GETTERS.get(field) or _path_getter(field)) for field in fields)
    for plural, fields in _EXTRA_FIELDS.items()
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str  # "=" or "!="
    value: str
    getter: Callable[[JSON], str]

    def matches(self, obj: JSON) -> bool:
        have = self.getter(obj)
        return have == self.value if self.operator == "=" else have != self.value


@dataclass(frozen=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: JSON) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def matches_indexed(self, name: str, namespace: str, fields: Mapping[str, str]) -> bool:
        """Match a stored object by its name, namespace and :func:`indexed_fields`."""
        for r in self.requirements:
            if r.field == "metadata.name":
                have = name
            elif r.field == "metadata.namespace":
                have = namespace
            else:
                have = fields.get(r.field, "")
            if (have == r.value) != (r.operator == "="):
                return False
        return True

    def exact(self, field: str) -> str | None:
        """The value required by ``field=value``, if the selector has one (for indexing)."""
        for r in self.requirements:
            if r.field == field and r.operator == "=":
                return r.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def indexed_fields(plural: str, obj: JSON) -> dict[str, str]:
    """The non-empty values of the selectable fields of ``obj`` besides name and namespace."""
    values = {}
    for field, getter in _INDEXED.get(plural, ()):
        value = getter(obj)
        if value:
            values[field] = value
    return values


def parse_field_selector(text: str | None, plural: str) -> FieldSelector:
    """Parse a field selector for resources named ``plural``; unknown fields are a 400."""
    if not text or not text.strip():
        return FieldSelector()
    supported = set(_COMMON_FIELDS) | set(_EXTRA_FIELDS.get(plural, ()))
    requirements = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op in ("!=", "==", "="):
            index = _find_unescaped(part, op)
            if index >= 0:
                field, value = part[:index].strip(), _unescape(part[index + len(op) :])
                break
        else:
            raise ApiError(400, f"invalid selector: '{text}'; can't understand '{part}'")
        if field not in supported:
            raise ApiError(400, f"field label not supported: {field}")
        getter = _GETTERS.get(field) or _path_getter(field)
        requirements.append(FieldRequirement(field, "!=" if op == "!=" else "=", value, getter))
    return FieldSelector(tuple(requirements))


def _find_unescaped(text: str, needle: str) -> int:
    index = 0
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text.startswith(needle, index):
            return index
        index += 1
    return -1
