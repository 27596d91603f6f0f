"""Topology Aware Hints in ``Auto`` mode: zone CPU ratios and per-zone endpoint allocation.

A port of upstream's ``topologycache`` on EndpointSlice dicts: zones' shares of allocatable CPU
(:meth:`TopologyCache.set_nodes`), then ``forZones`` hints giving each zone roughly its share,
never more than 20 % below (the overload threshold). Slices in ``to_create``/``to_update`` are
the planner's and changed in place; ``unchanged`` ones are the caller's: deep-copied into the
updates when they need new hints.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from endpointslice_operator.reconciler.plan import PlanEvent
from endpointslice_operator.reconciler.slices import json_copy

__all__ = [
    "ANNOTATION_TOPOLOGY_AWARE_HINTS",
    "ANNOTATION_TOPOLOGY_MODE",
    "INSUFFICIENT_NODE_INFO",
    "INSUFFICIENT_NUMBER_OF_ENDPOINTS",
    "LABEL_TOPOLOGY_ZONE",
    "MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD",
    "NODES_READY_IN_ONE_ZONE_ONLY",
    "NO_ALLOCATED_HINTS_FOR_ZONES",
    "NO_ZONE_SPECIFIED",
    "OVERLOAD_THRESHOLD",
    "TOPOLOGY_AWARE_HINTS_DISABLED",
    "TOPOLOGY_AWARE_HINTS_ENABLED",
    "Allocation",
    "SliceInfo",
    "TopologyCache",
    "cpu_millicores",
    "endpoint_ready",
    "format_with_address_type",
    "giving_and_receiving_zones",
    "hints_by_zone",
    "hints_enabled",
    "redistribute_hints",
    "remove_hints_from_slices",
    "service_overloaded",
]

ANNOTATION_TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
ANNOTATION_TOPOLOGY_AWARE_HINTS = "service.kubernetes.io/topology-aware-hints"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# Nodes carrying any of these labels (any value) are left out of the CPU totals.
_EXCLUDED_NODE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")

OVERLOAD_THRESHOLD = 0.2
# Go folds ``1 / (1 + overloadThreshold)`` at compile time; the float64 it yields is the same
# double Python computes here (the one nearest to 5/6), so the arithmetic below matches bit
# for bit.
_MIN_SHARE = 1 / (1 + OVERLOAD_THRESHOLD)

# Event messages, exactly as upstream words them (``add_hints`` appends the address type).
NO_ZONE_SPECIFIED = "One or more endpoints do not have a zone specified"
NO_ALLOCATED_HINTS_FOR_ZONES = "No hints allocated for zones"
TOPOLOGY_AWARE_HINTS_ENABLED = "Topology Aware Hints has been enabled"
TOPOLOGY_AWARE_HINTS_DISABLED = "Topology Aware Hints has been disabled"
INSUFFICIENT_NODE_INFO = (
    "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
)
NODES_READY_IN_ONE_ZONE_ONLY = "Nodes only ready in one zone"
INSUFFICIENT_NUMBER_OF_ENDPOINTS = "Insufficient number of endpoints"
MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD = (
    "Unable to allocate minimum required endpoints to each zone without exceeding overload "
    "threshold"
)

_REASON_DISABLED = "TopologyAwareHintsDisabled"
_REASON_ENABLED = "TopologyAwareHintsEnabled"


def hints_enabled(annotations: Mapping[str, str] | None) -> bool:
    """Whether a Service's annotations ask for ``Auto`` topology hints.

    Only the exact values ``Auto`` and ``auto`` enable them. When the deprecated
    ``topology-aware-hints`` key is present its value alone decides, whatever
    ``topology-mode`` says.
    """
    if not annotations:
        return False
    value = annotations.get(ANNOTATION_TOPOLOGY_AWARE_HINTS)
    if value is None:
        value = annotations.get(ANNOTATION_TOPOLOGY_MODE)
        if value is None:
            return False
    return value in ("Auto", "auto")


def format_with_address_type(message: str, address_type: str) -> str:
    """Append the address type to an event message, as every topology event does."""
    return f"{message}, addressType: {address_type}"


def endpoint_ready(endpoint: Mapping[str, Any]) -> bool:
    """True when the endpoint's ``conditions.ready`` is exactly ``true`` (unset counts as not)."""
    conditions = endpoint.get("conditions")
    return isinstance(conditions, Mapping) and conditions.get("ready") is True


# --- Kubernetes resource quantities -------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([a-zA-Z]*|[eE][+-]?[0-9]+)$")
_SUFFIX_SCALE: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def _parse_quantity(value: object) -> Fraction:
    """A Kubernetes quantity (``"2"``, ``"1500m"``, ``"0.5"``, ``"1e3"``, ``"2Ki"``) as an
    exact number; anything malformed is zero.

    Our own because no dependency has one the reconciler may use: kubernetes-asyncio ships no
    quantity parser (the synchronous client's ``kubernetes.utils.parse_quantity`` is not a
    dependency, and raises on bad input where a Node's bad allocatable must count as 0), and the
    reconciler imports no client library at all (the import contract in pyproject.toml)."""
    if isinstance(value, bool):
        return Fraction(0)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return Fraction(0)
        value = repr(value)
    if not isinstance(value, str):
        return Fraction(0)
    match = _QUANTITY.match(value.strip())
    if match is None:
        return Fraction(0)
    number, suffix = match.groups()
    amount = Fraction(Decimal(number))  # the pattern admits only finite decimal literals
    if suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():
        exponent = int(suffix[1:])
        if abs(exponent) > 64:
            return Fraction(0)
        return amount * Fraction(10) ** exponent
    scale = _SUFFIX_SCALE.get(suffix)
    return Fraction(0) if scale is None else amount * scale


def _milli(amount: Fraction) -> int:
    # Quantity.MilliValue rounds up to the next whole millicore.
    return math.ceil(amount * 1000)


def cpu_millicores(quantity: object) -> int:
    """A CPU quantity in millicores, rounded up like ``Quantity.MilliValue``; malformed is 0."""
    return _milli(_parse_quantity(quantity))


# --- Slices --------------------------------------------------------------------------------


@dataclass
class SliceInfo:
    """The slices of one (Service, address type) pair in the middle of a reconcile."""

    service_key: str
    address_type: str
    to_create: list[dict[str, Any]] = field(default_factory=list)
    to_update: list[dict[str, Any]] = field(default_factory=list)
    unchanged: list[dict[str, Any]] = field(default_factory=list)
    # The unchanged slices that ``allocated_hints_by_zone`` copied into ``to_update``, by the
    # id of their copy (see ``restore_unrewritten``).
    _copied_from: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def total_ready_endpoints(self) -> int:
        """Ready endpoints across creates, updates and unchanged slices."""
        return sum(
            _num_ready(slice_)
            for slices in (self.to_create, self.to_update, self.unchanged)
            for slice_ in slices
        )

    def allocated_hints_by_zone(self, allocations: Mapping[str, Allocation]) -> dict[str, int]:
        """Sum the hints unchanged slices already hold, per zone.

        Unchanged slices whose hints no longer fit the allocations (an endpoint without hints,
        a hint for a zone that gets nothing, a zone pushed over its maximum) are deep-copied
        into ``to_update`` so that ``add_hints`` rewrites them.
        """
        allocated: dict[str, int] = {}
        still_unchanged: list[dict[str, Any]] = []
        for slice_ in self.unchanged:
            by_zone = hints_by_zone(slice_, allocated, allocations)
            if by_zone is None:
                copy = json_copy(slice_)
                self._copied_from[id(copy)] = (copy, slice_)
                self.to_update.append(copy)
                continue
            still_unchanged.append(slice_)
            for zone, count in by_zone.items():
                allocated[zone] = allocated.get(zone, 0) + count
        self.unchanged = still_unchanged
        return allocated

    def restore_unrewritten(self) -> None:
        """Move back to ``unchanged`` the copies ``allocated_hints_by_zone`` made that came out
        of ``add_hints`` exactly as they went in.

        Deliberate difference from upstream, which writes such a slice anyway (a no-op PUT).
        That happens whenever a slice's hints fail the check but hinting it again gives the
        same result: a ready endpoint without a zone (hints are given up, and the slice had
        none), or a hint for the endpoint's own zone when that zone has no allocation (no
        Ready node with CPU there). Upstream then rewrites the same slices on every sync, and
        a controller restarted against slices that are already right writes them all again.
        """
        if not self._copied_from:
            return
        kept: list[dict[str, Any]] = []
        for slice_ in self.to_update:
            copied = self._copied_from.get(id(slice_))
            if copied is not None and copied[0] is slice_ and slice_ == copied[1]:
                self.unchanged.append(copied[1])
            else:
                kept.append(slice_)
        self.to_update = kept
        self._copied_from.clear()


def _endpoints(slice_: Mapping[str, Any]) -> list[Any]:
    endpoints = slice_.get("endpoints")
    return endpoints if isinstance(endpoints, list) else []


def _num_ready(slice_: Mapping[str, Any]) -> int:
    return sum(1 for endpoint in _endpoints(slice_) if endpoint_ready(endpoint))


def _zone_of(endpoint: Mapping[str, Any]) -> str | None:
    zone = endpoint.get("zone")
    return zone if isinstance(zone, str) and zone else None


def _zone_hints(endpoint: Mapping[str, Any]) -> list[Any] | None:
    """``hints.forZones``, or None when the endpoint has no hints at all."""
    hints = endpoint.get("hints")
    if hints is None:
        return None
    if not isinstance(hints, Mapping):
        return []
    for_zones = hints.get("forZones")
    return for_zones if isinstance(for_zones, list) else []


def _zone_hint(zone: str) -> dict[str, Any]:
    return {"forZones": [{"name": zone}]}


def remove_hints_from_slices(si: SliceInfo) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Strip hints from every slice being written, and from unchanged slices that carry any.

    Unchanged slices with hints are deep-copied and moved to ``si.to_update``; the others stay
    in ``si.unchanged``. Returns the (possibly grown) creates and updates.
    """
    for slice_ in (*si.to_create, *si.to_update):
        for endpoint in _endpoints(slice_):
            endpoint.pop("hints", None)

    still_unchanged: list[dict[str, Any]] = []
    for slice_ in si.unchanged:
        if any(endpoint.get("hints") is not None for endpoint in _endpoints(slice_)):
            copy = json_copy(slice_)
            for endpoint in _endpoints(copy):
                endpoint.pop("hints", None)
            si.to_update.append(copy)
        else:
            still_unchanged.append(slice_)
    si.unchanged = still_unchanged
    return si.to_create, si.to_update


# --- Allocation arithmetic ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Allocation:
    """How many endpoints a zone should get: at least ``minimum``, at most ``maximum``,
    ideally ``desired`` (its CPU share of the ready endpoints)."""

    minimum: int = 0
    maximum: int = 0
    desired: float = 0.0

    @property
    def kept_up_to(self) -> int:
        """The most hints for this zone that existing slices may keep without a rewrite.

        Upstream checks existing hints against ``maximum`` alone, but its own balancing can
        leave a zone above ``maximum`` when ``desired`` is higher (small zones rounded up to a
        minimum of one squeeze the maximum below the desired share), since it stops once no
        zone is a whole endpoint above its ``desired``. The next sync then finds the slices it
        just wrote over the maximum and rewrites one, not always to the same hints. We
        deliberately accept up to ``desired`` rounded up as well. The balancing never leaves a
        zone above both bounds: above ``maximum`` means another zone is below its minimum, a
        whole endpoint short, and above ``desired`` rounded up means a whole endpoint to give,
        so it goes on. Planning again over the slices just written therefore changes nothing.
        """
        return max(self.maximum, math.ceil(self.desired))


def hints_by_zone(
    slice_: Mapping[str, Any],
    allocated_hints_by_zone: Mapping[str, int],
    allocations: Mapping[str, Allocation],
) -> dict[str, int] | None:
    """Hints per zone held by the ready endpoints of one slice, or None when the slice's
    hints are no longer acceptable and it must be rewritten."""
    by_zone: dict[str, int] = {}
    for endpoint in _endpoints(slice_):
        if not endpoint_ready(endpoint):
            continue
        for_zones = _zone_hints(endpoint)
        if not for_zones:
            return None
        for hint in for_zones:
            zone = hint.get("name") if isinstance(hint, Mapping) else None
            if not isinstance(zone, str) or zone not in allocations:
                return None
            by_zone[zone] = by_zone.get(zone, 0) + 1

    for zone, count in by_zone.items():
        if count + allocated_hints_by_zone.get(zone, 0) > allocations[zone].kept_up_to:
            return None
    return by_zone


def _most(amounts: Mapping[str, float]) -> tuple[str, float]:
    """The zone with the largest positive amount (the first one on ties), or ``("", 0.0)``."""
    best_zone, best = "", 0.0
    for zone, amount in amounts.items():
        if amount > best:
            best_zone, best = zone, amount
    return best_zone, best


def giving_and_receiving_zones(
    allocations: Mapping[str, Allocation], allocated_hints_by_zone: Mapping[str, int]
) -> tuple[dict[str, int], dict[str, int]]:
    """How many endpoints each zone should give away, and how many each should receive."""
    surplus: dict[str, float] = {}
    deficit: dict[str, float] = {}
    for zone, allocation in allocations.items():
        allocated = float(allocated_hints_by_zone.get(zone, 0))
        if allocated > allocation.desired:
            surplus[zone] = allocated - allocation.desired
        elif allocated < allocation.desired:
            deficit[zone] = allocation.desired - allocated

    giving: dict[str, int] = {}
    receiving: dict[str, int] = {}
    while True:
        giving_zone, to_give = _most(surplus)
        receiving_zone, to_receive = _most(deficit)
        # Stop when either side is empty, when both have less than one whole endpoint left,
        # or when either has less than half of one.
        if (
            not giving_zone
            or not receiving_zone
            or (to_give < 1.0 and to_receive < 1.0)
            or to_give < 0.5
            or to_receive < 0.5
        ):
            break
        giving[giving_zone] = giving.get(giving_zone, 0) + 1
        surplus[giving_zone] -= 1
        receiving[receiving_zone] = receiving.get(receiving_zone, 0) + 1
        deficit[receiving_zone] -= 1
    return giving, receiving


def redistribute_hints(
    slices: Sequence[dict[str, Any]],
    giving_zones: MutableMapping[str, int],
    receiving_zones: MutableMapping[str, int],
) -> dict[str, int]:
    """Point ready endpoints of giving zones at receiving zones; return the change per zone.

    Consumes ``giving_zones`` and ``receiving_zones`` as it goes.
    """
    redistributions: dict[str, int] = {}
    for slice_ in slices:
        for endpoint in _endpoints(slice_):
            if not endpoint_ready(endpoint):
                continue
            if not giving_zones or not receiving_zones:
                return redistributions
            zone = _zone_of(endpoint)
            if zone is None:
                continue  # add_hints has already bailed out on these
            if giving_zones.get(zone, 0) <= 0:
                continue
            for receiving_zone, to_receive in receiving_zones.items():
                if to_receive <= 0:
                    continue
                endpoint["hints"] = _zone_hint(receiving_zone)
                _take_one(giving_zones, zone)
                _take_one(receiving_zones, receiving_zone)
                redistributions[receiving_zone] = redistributions.get(receiving_zone, 0) + 1
                redistributions[zone] = redistributions.get(zone, 0) - 1
                break
    return redistributions


def _take_one(counts: MutableMapping[str, int], zone: str) -> None:
    if counts[zone] == 1:
        del counts[zone]
    else:
        counts[zone] -= 1


def service_overloaded(
    endpoints_by_zone: Mapping[str, int], zone_ratios: Mapping[str, float] | None
) -> bool:
    """True when a stored allocation leaves some zone below its minimum share (or misses it)."""
    if not endpoints_by_zone:
        return False
    if not zone_ratios:
        return True
    total = float(sum(endpoints_by_zone.values()))
    for zone, ratio in zone_ratios.items():
        count = endpoints_by_zone.get(zone)
        if count is None:
            return True
        if count < math.ceil(total * ratio * _MIN_SHARE):
            return True
    return False


# --- Nodes ---------------------------------------------------------------------------------


def _node_ready(node: Mapping[str, Any]) -> bool:
    status = node.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _node_excluded(labels: Mapping[str, str]) -> bool:
    return any(label in labels for label in _EXCLUDED_NODE_LABELS)


# --- The cache ------------------------------------------------------------------------------


class TopologyCache:
    """Zone CPU ratios from the Nodes, and the hint allocation stored per Service.

    One instance is shared by all syncs of an operator; it is not thread-safe (the operator
    runs on one asyncio loop), and it never keeps references to the slices it is given.
    """

    def __init__(self) -> None:
        self._sufficient_node_info = False
        self._cpu_by_zone: dict[str, int] | None = {}
        self._cpu_ratios_by_zone: dict[str, float] | None = {}
        self._endpoints_by_service: dict[str, dict[str, dict[str, int]]] = {}
        self._hints_populated: set[str] = set()

    # -- nodes --

    def set_nodes(self, nodes: Iterable[Mapping[str, Any]]) -> None:
        """Recompute the CPU share of each zone from Node objects.

        Nodes that are not Ready or carry a control-plane/master role label are ignored. If
        any other node has no zone label or no allocatable CPU, node information is declared
        insufficient and every ratio is dropped, as are clusters with fewer than two zones.
        """
        cpu_by_zone: dict[str, Fraction] = {}
        total = Fraction(0)
        sufficient = True
        for node in nodes:
            metadata = node.get("metadata") or {}
            labels: Mapping[str, str] = metadata.get("labels") or {}
            if _node_excluded(labels) or not _node_ready(node):
                continue
            allocatable = (node.get("status") or {}).get("allocatable") or {}
            cpu = _parse_quantity(allocatable.get("cpu"))
            zone = labels.get(LABEL_TOPOLOGY_ZONE)
            if not zone or cpu == 0:
                cpu_by_zone = {}
                sufficient = False
                break
            total += cpu
            cpu_by_zone[zone] = cpu_by_zone.get(zone, Fraction(0)) + cpu

        if total == 0 or not sufficient or len(cpu_by_zone) < 2:
            self._sufficient_node_info = False
            self._cpu_by_zone = None
            self._cpu_ratios_by_zone = None
            return
        total_milli = _milli(total)
        self._sufficient_node_info = True
        self._cpu_by_zone = {zone: _milli(cpu) for zone, cpu in cpu_by_zone.items()}
        self._cpu_ratios_by_zone = {
            zone: float(milli) / float(total_milli) for zone, milli in self._cpu_by_zone.items()
        }

    @property
    def sufficient_node_info(self) -> bool:
        """Whether the last :meth:`set_nodes` found usable zone and CPU data in 2+ zones."""
        return self._sufficient_node_info

    @property
    def cpu_by_zone(self) -> dict[str, int] | None:
        """Allocatable millicores per zone (a copy), or None when node info is insufficient."""
        return None if self._cpu_by_zone is None else dict(self._cpu_by_zone)

    @property
    def cpu_ratios_by_zone(self) -> dict[str, float] | None:
        """Each zone's share of the allocatable CPU (a copy), or None when insufficient."""
        return None if self._cpu_ratios_by_zone is None else dict(self._cpu_ratios_by_zone)

    # -- stored hints --

    def has_populated_hints(self, service_key: str) -> bool:
        """Whether hints are currently in place for the Service (``namespace/name``)."""
        return service_key in self._hints_populated

    def set_hints(
        self, service_key: str, address_type: str, allocated_hints_by_zone: Mapping[str, int]
    ) -> None:
        """Record the endpoints hinted to each zone for one Service and address type."""
        by_type = self._endpoints_by_service.setdefault(service_key, {})
        by_type[address_type] = dict(allocated_hints_by_zone)
        self._hints_populated.add(service_key)

    def remove_hints(self, service_key: str, address_type: str) -> None:
        """Forget the hints of one Service and address type (the Service stops counting as
        populated, whatever other address types it has)."""
        by_type = self._endpoints_by_service.get(service_key)
        if by_type is not None:
            by_type.pop(address_type, None)
            if not by_type:
                del self._endpoints_by_service[service_key]
        self._hints_populated.discard(service_key)

    def delete_service(self, service_key: str) -> None:
        """Forget everything about a deleted Service."""
        self._endpoints_by_service.pop(service_key, None)
        self._hints_populated.discard(service_key)

    def hints_by_address_type(self, service_key: str) -> dict[str, dict[str, int]] | None:
        """The stored allocation per address type and zone (a copy), or None if there is none."""
        by_type = self._endpoints_by_service.get(service_key)
        if by_type is None:
            return None
        return {address_type: dict(zones) for address_type, zones in by_type.items()}

    def get_overloaded_services(self) -> list[str]:
        """Services whose stored allocation puts some zone under its minimum for the current
        ratios (or lacks a zone); with no ratios at all, every Service holding hints."""
        return [
            service_key
            for service_key, by_type in self._endpoints_by_service.items()
            if any(
                service_overloaded(zones, self._cpu_ratios_by_zone) for zones in by_type.values()
            )
        ]

    # -- allocation --

    def get_allocations(
        self, num_endpoints: int
    ) -> tuple[dict[str, Allocation] | None, PlanEvent | None]:
        """Per-zone minimum/desired/maximum for ``num_endpoints`` ready endpoints, or the
        Warning event (message without address type) explaining why there are none."""
        ratios = self._cpu_ratios_by_zone
        if ratios is None:
            return None, _disabled(INSUFFICIENT_NODE_INFO)
        if len(ratios) < 2:
            return None, _disabled(NODES_READY_IN_ONE_ZONE_ONLY)
        counts = f"({num_endpoints} endpoints, {len(ratios)} zones)"
        if len(ratios) > num_endpoints:
            return None, _disabled(f"{INSUFFICIENT_NUMBER_OF_ENDPOINTS} {counts}")

        remaining = num_endpoints
        min_total = 0
        partial: dict[str, tuple[int, float]] = {}
        for zone, ratio in ratios.items():
            desired = ratio * float(num_endpoints)
            minimum = math.ceil(desired * _MIN_SHARE)
            partial[zone] = (minimum, max(desired, float(minimum)))
            min_total += minimum
            remaining -= minimum
            if remaining < 0:
                return None, _disabled(f"{MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD} {counts}")

        return {
            zone: Allocation(
                minimum=minimum, maximum=minimum + num_endpoints - min_total, desired=d
            )
            for zone, (minimum, d) in partial.items()
        }, None

    def add_hints(
        self, si: SliceInfo
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[PlanEvent]]:
        """Give every ready endpoint a zone hint, balancing zones by CPU share.

        Returns the creates, the updates (which may have grown with unchanged slices whose
        hints had to change) and the events to record on the Service. When hints cannot be
        allocated, they are removed from the slices instead and a Warning explains why.
        """
        allocations, problem = self.get_allocations(si.total_ready_endpoints())
        if allocations is None:
            assert problem is not None
            return self._give_up(si, problem.message, [])

        allocated = si.allocated_hints_by_zone(allocations)
        allocatable = [*si.to_create, *si.to_update]
        events: list[PlanEvent] = []

        # Step 1: every ready endpoint starts with a hint for its own zone. Non-ready endpoints
        # are left exactly as they are (upstream's attempt to clear their hints writes to a
        # loop copy; endpoints fresh from the desired state carry none anyway).
        for slice_ in allocatable:
            for endpoint in _endpoints(slice_):
                if not endpoint_ready(endpoint):
                    continue
                zone = _zone_of(endpoint)
                if zone is None:
                    return self._give_up(si, NO_ZONE_SPECIFIED, events)
                allocated[zone] = allocated.get(zone, 0) + 1
                endpoint["hints"] = _zone_hint(zone)

        # Step 2: which zones have endpoints to spare and which need more.
        giving, receiving = giving_and_receiving_zones(allocations, allocated)

        # Step 3: move hints from the former to the latter.
        for zone, change in redistribute_hints(allocatable, giving, receiving).items():
            allocated[zone] = allocated.get(zone, 0) + change

        if not allocated:
            return self._give_up(si, NO_ALLOCATED_HINTS_FOR_ZONES, events)

        si.restore_unrewritten()
        was_populated = self.has_populated_hints(si.service_key)
        self.set_hints(si.service_key, si.address_type, allocated)
        if not was_populated:
            events.append(
                PlanEvent(
                    type="Normal",
                    reason=_REASON_ENABLED,
                    message=format_with_address_type(TOPOLOGY_AWARE_HINTS_ENABLED, si.address_type),
                )
            )
        return si.to_create, si.to_update, events

    def _give_up(
        self, si: SliceInfo, message: str, events: list[PlanEvent]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[PlanEvent]]:
        events.append(_disabled(format_with_address_type(message, si.address_type)))
        self.remove_hints(si.service_key, si.address_type)
        remove_hints_from_slices(si)
        si.restore_unrewritten()
        return si.to_create, si.to_update, events


def _disabled(message: str) -> PlanEvent:
    return PlanEvent(type="Warning", reason=_REASON_DISABLED, message=message)
