"""``events.k8s.io/v1`` Events as a view of the core Events, as kube-apiserver serves them.

Both APIs read and write the same objects; only field names differ. These are the conversions
between the two shapes (the events.k8s.io/v1 conversion functions of Kubernetes).
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

CORE_API_VERSION = "v1"
EVENTS_API_VERSION = "events.k8s.io/v1"
# (events.k8s.io/v1 field, core/v1 field)
RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
)
_CORE_ONLY = {core for _, core in RENAMES}
_V1_ONLY = {v1 for v1, _ in RENAMES}
# Field selectors on events.k8s.io/v1 may name the regarding object the new way.
FIELD_LABELS = {"regarding.": "involvedObject.", "reportingController": "reportingComponent"}


def to_core(obj: JSON) -> JSON:
    """An events.k8s.io/v1 Event in the core/v1 shape (fields of the other shape dropped)."""
    out = {k: v for k, v in obj.items() if k not in _CORE_ONLY}
    for new, old in RENAMES:
        if new in out:
            out[old] = out.pop(new)
    out["apiVersion"] = CORE_API_VERSION
    return out


def from_core(obj: JSON) -> JSON:
    """A core/v1 Event in the events.k8s.io/v1 shape."""
    out = {k: v for k, v in obj.items() if k not in _V1_ONLY}
    for new, old in RENAMES:
        if old in out:
            out[new] = out.pop(old)
    out["apiVersion"] = EVENTS_API_VERSION
    return out


def core_field_selector(selector: str | None) -> str | None:
    """Rewrite events.k8s.io field labels (``regarding.name=x``) into the core ones."""
    if not selector:
        return selector
    parts = []
    for part in selector.split(","):
        for new, old in FIELD_LABELS.items():
            if part.startswith(new):
                part = old + part[len(new) :]
                break
        parts.append(part)
    return ",".join(parts)
