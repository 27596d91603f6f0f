"""The planner: desired endpoint groups + existing slices → the writes (upstream B.1, B.3-B.6).

``Reconciler.plan`` is upstream's ``Reconcile`` without the API calls: every create, update and
delete, the hints, the trigger-time annotation and the metrics numbers; applying them is the
caller's. Existing slices are exactly what upstream lists (the owner's service-name,
``managed-by == controller_name``, no deletionTimestamp); never pass anyone else's. Unlike
upstream's Go map iteration, input order is kept, so plans are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .config import ReconcilerConfig
from .desired import DesiredEndpoints, EndpointGroup
from .endpoints import Endpoint, EndpointKey
from .hints import trafficdist
from .hints.topology import SliceInfo, TopologyCache, hints_enabled, remove_hints_from_slices
from .labels import LAST_CHANGE_TRIGGER_TIME, LabelsFunc, format_trigger_time
from .labels import labels_from_service as _labels_from_service
from .plan import AddressTypeMetrics, Plan, PlanEvent
from .ports import PortKey, port_key_text
from .slices import (
    SHARED_PARSE_CACHE,
    Owner,
    SliceParseCache,
    SliceView,
    copy_for_update,
    json_copy,
    new_slice,
    placeholder_equal,
    service_controller_key,
)
from .tracking.metrics_cache import EfficiencyInfo

__all__ = ["Reconciler"]

_HINTS_DISABLED_REASON = "TopologyAwareHintsDisabled"
_HINTS_DISABLED_MESSAGE = "Topology Aware Hints has been disabled, addressType: {}"


class _Work:
    """A slice being written: an existing one (``view``) or a new one (``view is None``)."""

    __slots__ = ("endpoints", "kept_raw", "labels", "view")

    def __init__(
        self,
        view: SliceView | None,
        labels: dict[str, str],
        endpoints: list[Endpoint],
        kept_raw: list[Any] | None = None,
    ) -> None:
        self.view = view
        self.labels = labels
        self.endpoints = endpoints
        # Endpoints kept verbatim from the existing slice (copied, hints included), as upstream
        # does for slices rewritten only for their labels or topped up from "unchanged".
        self.kept_raw: list[Any] = kept_raw if kept_raw is not None else []

    def __len__(self) -> int:
        return len(self.endpoints) + len(self.kept_raw)

    def build(self, owner: Owner, address_type: str, ports: PortKey) -> dict[str, Any]:
        endpoints = [json_copy(raw) for raw in self.kept_raw]
        endpoints.extend(ep.to_dict() for ep in self.endpoints)
        if self.view is None:
            return new_slice(owner, address_type, ports, self.labels, endpoints)
        return copy_for_update(self.view.raw, self.labels, endpoints)


def _raw_endpoints(view: SliceView) -> list[Any]:
    raw = view.raw.get("endpoints")
    return [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []


class Reconciler:
    """Plans EndpointSlice writes for one controller.

    ``topology`` is the shared ``TopologyCache`` (node zones and per-Service hint state); with
    ``None``, or with ``config.topology_hints`` off, the topology annotation is ignored as in a
    controller without a topology cache. Existing slices are parsed through ``parse_cache``
    (by default the process-wide ``SHARED_PARSE_CACHE``), keyed by UID and resourceVersion.
    """

    def __init__(
        self,
        config: ReconcilerConfig,
        topology: TopologyCache | None = None,
        *,
        parse_cache: SliceParseCache | None = None,
    ) -> None:
        self.config = config
        self.topology = topology if config.topology_hints else None
        self._parsed = parse_cache if parse_cache is not None else SHARED_PARSE_CACHE

    def plan(
        self,
        owner: Mapping[str, Any],
        desired: DesiredEndpoints,
        existing_slices: Iterable[Mapping[str, Any]],
        *,
        traffic_distribution: str | None = None,
        labels: LabelsFunc | None = None,
        trigger_time: datetime | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Plan:
        """Plan the writes for ``owner`` (default labels: ``labels_from_service(owner)``).

        ``trigger_time`` is written as the last-change-trigger-time annotation on every slice
        created or updated; ``None`` removes it from them. ``annotations`` (the mirroring
        controller's copied annotations), when given, are exactly the other annotations of every
        slice written, and an existing slice whose annotations differ is rewritten; ``None``
        (the slice controller) keeps whatever annotations a slice has.
        """
        own = Owner.of(owner)
        labels_fn = labels if labels is not None else _labels_from_service(owner)
        hints_on = hints_enabled(own.annotations)
        use_td = (
            trafficdist.is_valid(
                traffic_distribution,
                prefer_same_enabled=self.config.prefer_same_traffic_distribution,
            )
            and not hints_on
        )
        plan = Plan(
            service_key=own.key, errors=list(desired.errors), left_out=list(desired.left_out)
        )
        plan.topology_label = "Auto" if self.topology is not None and hints_on else "Disabled"
        plan.traffic_distribution_label = (
            traffic_distribution if use_td and traffic_distribution else ""
        )
        stamp = format_trigger_time(trigger_time) if trigger_time is not None else None

        supported = set(desired.address_types)
        by_type: dict[str, list[SliceView]] = {t: [] for t in desired.address_types}
        unsupported: list[Mapping[str, Any]] = []
        for raw in existing_slices:
            address_type = raw.get("addressType")
            if address_type not in supported:
                if self.topology is not None:
                    self._forget_hints_of(raw, address_type)
                unsupported.append(raw)
                continue
            by_type[address_type].append(self._parsed.view(raw))

        for address_type in desired.address_types:
            self._plan_address_type(
                plan,
                own,
                address_type,
                desired.groups.get(address_type, {}),
                by_type[address_type],
                labels_fn,
                hints_on=hints_on,
                use_td=use_td,
                traffic_distribution=traffic_distribution,
                stamp=stamp,
                annotations=annotations,
            )
        # Upstream deletes these after reconciling the supported types, and never recycles them.
        plan.deletes.extend(unsupported)
        return plan

    def forget_slices(self, uids: Iterable[str]) -> None:
        """Drop cached parses of deleted slices (optional: the cache is bounded and evicts its
        oldest entries on its own)."""
        self._parsed.forget(uids)

    def _forget_hints_of(self, raw: Mapping[str, Any], address_type: Any) -> None:
        assert self.topology is not None
        try:
            key = service_controller_key(raw)
        except ValueError:
            return  # upstream logs and carries on
        if isinstance(address_type, str):
            self.topology.remove_hints(key, address_type)

    def _owned(self, own: Owner, raw: Mapping[str, Any]) -> bool:
        return not self.config.ownership_enforced or own.owns(raw)

    def _plan_address_type(
        self,
        plan: Plan,
        own: Owner,
        address_type: str,
        groups: Mapping[PortKey, EndpointGroup],
        existing: list[SliceView],
        labels_fn: LabelsFunc,
        *,
        hints_on: bool,
        use_td: bool,
        traffic_distribution: str | None,
        stamp: str | None,
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        max_per_slice = self.config.max_endpoints_per_slice
        controller = self.config.controller_name
        deletes: list[SliceView] = []
        existing_by_ports: dict[PortKey, list[SliceView]] = {}
        for view in existing:
            if self._owned(own, view.raw):
                existing_by_ports.setdefault(view.ports, []).append(view)
            else:
                deletes.append(view)

        creates: list[tuple[_Work, PortKey]] = []
        updates: list[tuple[_Work, PortKey]] = []
        metrics = AddressTypeMetrics()
        for ports, group in groups.items():
            group_existing = existing_by_ports.get(ports, [])
            group_creates, group_updates, group_deletes = self._plan_port_group(
                own,
                group,
                group_existing,
                labels_fn,
                controller,
                max_per_slice,
                metrics,
                annotations,
            )
            metrics.port_cache[port_key_text(ports)] = EfficiencyInfo(
                endpoints=len(group.endpoints),
                slices=len(group_existing) + len(group_creates) - len(group_deletes),
            )
            creates.extend((work, ports) for work in group_creates)
            updates.extend((work, ports) for work in group_updates)
            deletes.extend(group_deletes)
        for ports, views in existing_by_ports.items():
            if ports not in groups:
                # Endpoints of groups no longer desired are not counted as removed (upstream).
                deletes.extend(views)

        create_dicts = [work.build(own, address_type, ports) for work, ports in creates]
        update_dicts = [work.build(own, address_type, ports) for work, ports in updates]

        if self.config.placeholder and len(existing) == len(deletes) and not create_dicts:
            placeholder = new_slice(own, address_type, (), labels_fn(None, controller)[0], [])
            if len(deletes) == 1 and placeholder_equal(deletes[0].raw, placeholder):
                deletes.clear()
            else:
                create_dicts.append(placeholder)
            metrics.port_cache[port_key_text(())] = EfficiencyInfo(endpoints=0, slices=1)

        for info in metrics.port_cache.values():
            metrics.desired_endpoints += info.endpoints
            metrics.actual_slices += info.slices
            if info.endpoints:
                metrics.desired_slices += math.ceil(info.endpoints / max_per_slice)
        metrics.desired_slices = max(metrics.desired_slices, 1)
        plan.metrics[address_type] = metrics

        changed = {w.view.name for w, _ in updates if w.view is not None}
        changed.update(v.name for v in deletes)
        unchanged = [v.raw for v in existing if v.name not in changed]
        create_dicts, update_dicts = self._hints(
            plan,
            own,
            address_type,
            create_dicts,
            update_dicts,
            unchanged,  # type: ignore[arg-type]
            hints_on=hints_on,
            use_td=use_td,
            traffic_distribution=traffic_distribution,
        )
        self._finalize(
            plan, own, address_type, create_dicts, update_dicts, deletes, stamp, annotations
        )

    def _plan_port_group(
        self,
        own: Owner,
        group: EndpointGroup,
        existing: list[SliceView],
        labels_fn: LabelsFunc,
        controller: str,
        max_per_slice: int,
        metrics: AddressTypeMetrics,
        annotations: Mapping[str, str] | None = None,
    ) -> tuple[list[_Work], list[_Work], list[SliceView]]:
        """Upstream ``reconcileByPortMapping``: keep, top up, then fill (B.5)."""
        wanted: dict[EndpointKey, Endpoint] = dict(group.endpoints)
        updates: list[_Work] = []
        unchanged: list[SliceView] = []
        deletes: list[SliceView] = []
        removed = 0
        for view in existing:
            kept: list[Endpoint] = []
            changed = False
            for key, state in zip(view.keys, view.states, strict=True):
                want = wanted.pop(key, None)
                if want is not None:
                    kept.append(want)
                    if want.state != state:
                        changed = True
            slice_labels, labels_changed = labels_fn(view.labels, controller)
            if annotations is not None and not labels_changed:
                labels_changed = _annotations_of(view.raw) != annotations
            if changed or len(kept) != len(view.keys):
                removed += len(view.keys) - len(kept)
                if kept:
                    updates.append(_Work(view, slice_labels, kept))
                else:
                    deletes.append(view)
            elif labels_changed:
                updates.append(_Work(view, slice_labels, [], _raw_endpoints(view)))
            else:
                unchanged.append(view)

        metrics.added += len(wanted)
        metrics.removed += removed
        remaining = list(wanted.values())
        taken = 0

        if remaining and updates:
            for work in sorted(updates, key=len, reverse=True):
                room = max_per_slice - len(work)
                if room > 0:
                    work.endpoints.extend(remaining[taken : taken + room])
                    taken += min(room, len(remaining) - taken)
                if taken >= len(remaining):
                    break

        creates: list[_Work] = []
        new_labels: dict[str, str] | None = None
        while taken < len(remaining):
            left = len(remaining) - taken
            target: _Work | None = None
            if left < max_per_slice and unchanged:
                fill = _slice_to_fill(unchanged, left, max_per_slice)
                if fill is not None:
                    unchanged.remove(fill)
                    target = _Work(fill, dict(fill.labels or {}), [], _raw_endpoints(fill))
                    updates.append(target)
            if target is None:
                if new_labels is None:
                    new_labels = labels_fn(None, controller)[0]
                target = _Work(None, dict(new_labels), [])
                creates.append(target)
            room = max_per_slice - len(target)
            target.endpoints.extend(remaining[taken : taken + room])
            taken += min(room, left)
        return creates, updates, deletes

    def _hints(
        self,
        plan: Plan,
        own: Owner,
        address_type: str,
        creates: list[dict[str, Any]],
        updates: list[dict[str, Any]],
        unchanged: list[dict[str, Any]],
        *,
        hints_on: bool,
        use_td: bool,
        traffic_distribution: str | None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Upstream step 7 of ``reconcileByAddressType``: Auto hints or trafficDistribution."""
        info = SliceInfo(own.key, address_type, creates, updates, unchanged)
        if self.topology is not None and hints_on:
            creates, updates, events = self.topology.add_hints(info)
            plan.events.extend(events)
        else:
            if self.topology is not None:
                if self.topology.has_populated_hints(own.key):
                    plan.events.append(
                        PlanEvent(
                            type="Warning",
                            reason=_HINTS_DISABLED_REASON,
                            message=_HINTS_DISABLED_MESSAGE.format(address_type),
                        )
                    )
                self.topology.remove_hints(own.key, address_type)
            if not use_td:
                creates, updates = remove_hints_from_slices(info)
        if use_td:
            written = {_name(s) for s in updates}
            still_unchanged = [s for s in unchanged if _name(s) not in written]
            creates, updates = trafficdist.reconcile_hints(
                traffic_distribution,
                creates,
                updates,
                still_unchanged,
                prefer_same_enabled=self.config.prefer_same_traffic_distribution,
            )
        return creates, updates

    def _finalize(
        self,
        plan: Plan,
        own: Owner,
        address_type: str,
        creates: list[dict[str, Any]],
        updates: list[dict[str, Any]],
        deletes: list[SliceView],
        stamp: str | None,
        wanted_annotations: Mapping[str, str] | None = None,
    ) -> None:
        """Upstream ``finalize`` minus the API calls: recycle creates into deletes, stamp."""
        index = 0
        while index < len(deletes) and creates:
            candidate = deletes[index]
            if candidate.address_type == address_type and self._owned(own, candidate.raw):
                recycled = creates.pop()
                recycled["metadata"]["name"] = candidate.name
                updates.append(recycled)
                del deletes[index]
            else:
                index += 1
        if own.deleting:
            plan.skipped_creates += len(creates)
            creates = []
        for slice_ in (*creates, *updates):
            metadata = slice_.setdefault("metadata", {})
            annotations = metadata.get("annotations")
            if wanted_annotations is not None:
                annotations = metadata["annotations"] = dict(wanted_annotations)
            elif not isinstance(annotations, dict):
                annotations = metadata["annotations"] = {}
            if stamp is not None:
                annotations[LAST_CHANGE_TRIGGER_TIME] = stamp
            else:
                annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
            if not annotations:
                # Upstream leaves an empty map; on a create or a full PUT, none is the same.
                del metadata["annotations"]
        plan.creates.extend(creates)
        plan.updates.extend(updates)
        plan.deletes.extend(view.raw for view in deletes)


def _annotations_of(slice_: Mapping[str, Any]) -> dict[str, Any]:
    metadata = slice_.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return dict(annotations) if isinstance(annotations, Mapping) else {}


def _name(slice_: Mapping[str, Any]) -> str:
    metadata = slice_.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""


def _slice_to_fill(unchanged: list[SliceView], count: int, max_per_slice: int) -> SliceView | None:
    """Upstream ``getSliceToFill``: the unchanged slice closest to full after taking ``count``."""
    closest_diff = max_per_slice
    closest: SliceView | None = None
    for view in unchanged:
        diff = max_per_slice - (count + len(view.keys))
        if 0 <= diff < closest_diff:
            closest_diff = diff
            closest = view
            if diff == 0:
                break
    return closest
