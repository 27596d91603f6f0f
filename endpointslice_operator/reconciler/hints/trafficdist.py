"""Hints from a Service's ``spec.trafficDistribution`` (a port of upstream's ``trafficdist``).

``PreferClose`` and ``PreferSameZone`` give each ready endpoint a hint for its own zone;
``PreferSameNode`` adds a hint for its own node. Any other value (or none) means cluster-wide
routing: every hint is removed.

Slices to create or update belong to the planner and are changed in place. Unchanged slices
belong to the caller and are never changed: one whose hints are wrong is deep-copied and the
copy is appended to the updates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from endpointslice_operator.reconciler.hints.topology import endpoint_ready
from endpointslice_operator.reconciler.slices import json_copy

__all__ = [
    "PREFER_CLOSE",
    "PREFER_SAME_NODE",
    "PREFER_SAME_ZONE",
    "is_valid",
    "reconcile_hints",
    "reconcile_hints_with_unchanged",
]

PREFER_CLOSE: Final = "PreferClose"
PREFER_SAME_ZONE: Final = "PreferSameZone"
PREFER_SAME_NODE: Final = "PreferSameNode"

_CLOSE_VALUES = frozenset({PREFER_CLOSE, PREFER_SAME_ZONE, PREFER_SAME_NODE})

Slice = dict[str, Any]


def is_valid(traffic_distribution: str | None, *, prefer_same_enabled: bool) -> bool:
    """Whether the reconciler acts on this value: ``PreferClose`` always, ``PreferSameZone``
    and ``PreferSameNode`` only when the prefer-same option is on."""
    if traffic_distribution == PREFER_CLOSE:
        return True
    return prefer_same_enabled and traffic_distribution in (PREFER_SAME_ZONE, PREFER_SAME_NODE)


class _Heuristic:
    """How hints should look for one trafficDistribution value.

    ``close`` False is the default heuristic (no hints at all); True is upstream's
    "preferClose" heuristic, with node hints when ``node_hints`` is set.
    """

    __slots__ = ("close", "node_hints")

    def __init__(self, *, close: bool, node_hints: bool) -> None:
        self.close = close
        self.node_hints = node_hints

    def needs_update(self, slice_: Mapping[str, Any]) -> bool:
        """True if any endpoint's hints differ from what :meth:`update` would write."""
        endpoints = slice_.get("endpoints") or ()
        if not self.close:
            return any(endpoint.get("hints") is not None for endpoint in endpoints)
        for endpoint in endpoints:
            if not endpoint_ready(endpoint):
                continue
            hints = endpoint.get("hints")
            if hints is not None and not isinstance(hints, Mapping):
                return True  # not a hints object at all: rewrite it
            for_zones = (hints.get("forZones") or []) if hints is not None else []
            for_nodes = (hints.get("forNodes") or []) if hints is not None else []
            zone = endpoint.get("zone")
            if zone is not None:
                if not _single_name(hints, for_zones, zone):
                    return True
            elif for_zones:
                return True
            node = endpoint.get("nodeName")
            if node is not None and self.node_hints:
                if not _single_name(hints, for_nodes, node):
                    return True
            elif for_nodes:
                return True
        return False

    def update(self, slice_: Mapping[str, Any]) -> None:
        """Rewrite the hints of the slice's endpoints in place."""
        endpoints = slice_.get("endpoints") or ()
        if not self.close:
            for endpoint in endpoints:
                endpoint.pop("hints", None)
            return
        for endpoint in endpoints:
            if not endpoint_ready(endpoint):
                continue
            hints: dict[str, Any] = {}
            zone = endpoint.get("zone")
            if zone is not None:
                hints["forZones"] = [{"name": zone}]
            node = endpoint.get("nodeName")
            if node is not None and self.node_hints:
                hints["forNodes"] = [{"name": node}]
            if hints:
                endpoint["hints"] = hints
            else:
                endpoint.pop("hints", None)


def _single_name(hints: Mapping[str, Any] | None, entries: Sequence[Any], name: str) -> bool:
    return (
        hints is not None
        and len(entries) == 1
        and isinstance(entries[0], Mapping)
        and entries[0].get("name") == name
    )


def _heuristic(traffic_distribution: str | None, *, prefer_same_enabled: bool) -> _Heuristic:
    # Upstream picks the heuristic from the value alone; the reconciler only calls it for
    # valid values. Folding the option in here means a PreferSame* value with the option off
    # strips hints, which is what the reconciler does for invalid values anyway.
    if traffic_distribution in _CLOSE_VALUES and is_valid(
        traffic_distribution, prefer_same_enabled=prefer_same_enabled
    ):
        return _Heuristic(close=True, node_hints=traffic_distribution == PREFER_SAME_NODE)
    return _Heuristic(close=False, node_hints=False)


def reconcile_hints_with_unchanged(
    traffic_distribution: str | None,
    creates: list[Slice],
    updates: list[Slice],
    unchanged: Sequence[Slice],
    *,
    prefer_same_enabled: bool,
) -> tuple[list[Slice], list[Slice], list[Slice]]:
    """Like :func:`reconcile_hints`, also returning the slices that stay unchanged."""
    heuristic = _heuristic(traffic_distribution, prefer_same_enabled=prefer_same_enabled)
    still_unchanged: list[Slice] = []
    moved: list[Slice] = []
    for slice_ in unchanged:
        if heuristic.needs_update(slice_):
            moved.append(json_copy(slice_))
        else:
            still_unchanged.append(slice_)
    updates = [*updates, *moved] if moved else updates
    for slice_ in creates:
        heuristic.update(slice_)
    for slice_ in updates:
        heuristic.update(slice_)
    return creates, updates, still_unchanged


def reconcile_hints(
    traffic_distribution: str | None,
    creates: list[Slice],
    updates: list[Slice],
    unchanged: Sequence[Slice],
    *,
    prefer_same_enabled: bool,
) -> tuple[list[Slice], list[Slice]]:
    """Set the hints ``spec.trafficDistribution`` asks for on the slices being written.

    Unchanged slices whose ready endpoints carry missing or wrong hints are deep-copied into
    the updates (non-ready endpoints never trigger an update and keep their hints). Returns
    the creates and the updates.
    """
    creates, updates, _ = reconcile_hints_with_unchanged(
        traffic_distribution,
        creates,
        updates,
        unchanged,
        prefer_same_enabled=prefer_same_enabled,
    )
    return creates, updates
