"""``reconciler/tracking/metrics_cache.py``: the address types counted for a Service, as
they come and go."""

from __future__ import annotations

from endpointslice_operator.reconciler.tracking.metrics_cache import EfficiencyInfo, MetricsCache


def test_the_address_types_of_a_service_are_those_counted_until_removed() -> None:
    cache = MetricsCache(100)
    assert cache.address_types("ns/web") == frozenset()
    cache.update_service("ns/web", "IPv4", {"": EfficiencyInfo(endpoints=3, slices=1)})
    cache.update_service("ns/web", "IPv6", {"": EfficiencyInfo(endpoints=2, slices=1)})
    assert cache.address_types("ns/web") == {"IPv4", "IPv6"}
    assert cache.address_types("ns/other") == frozenset()
    cache.remove_address_type("ns/web", "IPv4")
    assert cache.address_types("ns/web") == {"IPv6"}
    assert cache.desired_endpoints == 2
    cache.remove_address_type("ns/web", "IPv6")
    assert cache.address_types("ns/web") == frozenset()
    assert (cache.desired_endpoints, cache.desired_slices, cache.actual_slices) == (0, 0, 0)
