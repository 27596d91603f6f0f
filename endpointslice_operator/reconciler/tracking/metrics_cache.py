"""Cluster-wide totals behind the desired/actual EndpointSlice gauges (upstream ``metrics.Cache``).

One :class:`EfficiencyInfo` per Service, address type and port group (the placeholder is a port
group with 0 endpoints and 1 slice) feeds the running totals of desired endpoints, actual slices,
desired slices (``ceil(endpoints / max)`` per group, at least one per Service and family) and
Services per ``trafficDistribution``. Unlike upstream, entries are per (Service, address type),
so a dual-stack Service counts both families (:meth:`MetricsCache.remove_address_type` drops one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["EfficiencyInfo", "MetricsCache", "num_desired_slices"]


@dataclass(frozen=True, slots=True)
class EfficiencyInfo:
    """Endpoints and slices of one port group of one Service and address type."""

    endpoints: int
    slices: int


def num_desired_slices(endpoints: int, max_endpoints_per_slice: int) -> int:
    """Slices needed to hold ``endpoints`` with perfect packing (0 for no endpoints)."""
    if endpoints <= 0:
        return 0
    return -(-endpoints // max_endpoints_per_slice)


@dataclass(frozen=True, slots=True)
class _Totals:
    endpoints: int
    actual_slices: int
    desired_slices: int


class MetricsCache:
    """Running totals over every Service reconciled, updated in O(port groups) per call.

    Not thread-safe: the operator uses it from a single asyncio loop.
    """

    def __init__(self, max_endpoints_per_slice: int) -> None:
        if max_endpoints_per_slice < 1:
            raise ValueError(f"max_endpoints_per_slice must be >= 1, not {max_endpoints_per_slice}")
        self._max = max_endpoints_per_slice
        self._totals_by_entry: dict[tuple[str, str], _Totals] = {}
        self._address_types: dict[str, set[str]] = {}
        self._endpoints = 0
        self._actual_slices = 0
        self._desired_slices = 0
        self._services_by_traffic_distribution: dict[str, set[str]] = {}

    @property
    def max_endpoints_per_slice(self) -> int:
        return self._max

    @property
    def desired_endpoints(self) -> int:
        """Endpoints desired over all Services."""
        return self._endpoints

    @property
    def actual_slices(self) -> int:
        """EndpointSlices over all Services, as reported after each sync's writes."""
        return self._actual_slices

    @property
    def desired_slices(self) -> int:
        """EndpointSlices that would exist with perfect endpoint packing."""
        return self._desired_slices

    def _totals(self, port_cache: Mapping[str, EfficiencyInfo]) -> _Totals:
        endpoints = actual = desired = 0
        for info in port_cache.values():
            endpoints += info.endpoints
            actual += info.slices
            desired += num_desired_slices(info.endpoints, self._max)
        # There is always at least the placeholder slice. Upstream applies this minimum per
        # cache entry, i.e. per address type reconciled; so do we (one entry per family).
        return _Totals(endpoints=endpoints, actual_slices=actual, desired_slices=max(desired, 1))

    def _apply(self, old: _Totals | None, new: _Totals | None) -> None:
        for sign, totals in ((-1, old), (1, new)):
            if totals is not None:
                self._endpoints += sign * totals.endpoints
                self._actual_slices += sign * totals.actual_slices
                self._desired_slices += sign * totals.desired_slices

    def update_service(
        self, service_key: str, address_type: str, port_cache: Mapping[str, EfficiencyInfo]
    ) -> None:
        """Replace what is known about one Service's address type.

        ``port_cache`` maps each desired port group's key to its endpoints and slices; the
        placeholder is an entry for the empty-ports key with 0 endpoints and 1 slice.
        """
        entry = (service_key, address_type)
        new = self._totals(port_cache)
        self._apply(self._totals_by_entry.get(entry), new)
        self._totals_by_entry[entry] = new
        self._address_types.setdefault(service_key, set()).add(address_type)

    def address_types(self, service_key: str) -> frozenset[str]:
        """The address types currently counted for a Service."""
        return frozenset(self._address_types.get(service_key, ()))

    def remove_address_type(self, service_key: str, address_type: str) -> None:
        """Forget one address type of a Service (it no longer supports that family)."""
        old = self._totals_by_entry.pop((service_key, address_type), None)
        if old is None:
            return
        self._apply(old, None)
        address_types = self._address_types[service_key]
        address_types.discard(address_type)
        if not address_types:
            del self._address_types[service_key]

    def update_traffic_distribution(self, service_key: str, value: str | None) -> None:
        """Count the Service under ``value`` (and under no other); None counts it nowhere.

        Values stay known, with a count of 0, after their last Service leaves them.
        """
        for services in self._services_by_traffic_distribution.values():
            services.discard(service_key)
        if value is not None:
            self._services_by_traffic_distribution.setdefault(value, set()).add(service_key)

    def delete_service(self, service_key: str) -> None:
        """Forget a deleted Service: subtract its totals and drop it from every value."""
        for services in self._services_by_traffic_distribution.values():
            services.discard(service_key)
        for address_type in sorted(self._address_types.get(service_key, ())):
            self.remove_address_type(service_key, address_type)

    def services_by_traffic_distribution(self) -> dict[str, int]:
        """Number of Services per ``trafficDistribution`` value ever seen (0 once emptied)."""
        return {
            value: len(services)
            for value, services in self._services_by_traffic_distribution.items()
        }

    def traffic_distribution_members(self) -> dict[str, frozenset[str]]:
        """The Service keys counted under each value (a snapshot)."""
        return {
            value: frozenset(services)
            for value, services in self._services_by_traffic_distribution.items()
        }
