"""Port of upstream metrics/cache_test.go, plus the per-address-type fix."""

from __future__ import annotations

import dataclasses

import pytest

from endpointslice_operator.reconciler.tracking.metrics_cache import (
    EfficiencyInfo,
    MetricsCache,
    num_desired_slices,
)

# Port-map keys are opaque to the cache; any distinct strings will do.
KEY_80_443 = "ports:80,443"
KEY_80 = "ports:80"
PLACEHOLDER = ""

EFFICIENT = {KEY_80: EfficiencyInfo(45, 1), KEY_80_443: EfficiencyInfo(35, 1)}
INEFFICIENT = {KEY_80: EfficiencyInfo(12, 5), KEY_80_443: EfficiencyInfo(18, 8)}


def expect_num_endpoints_and_slices(
    cache: MetricsCache, desired: int, actual: int, num_endpoints: int
) -> None:
    assert (cache.desired_slices, cache.actual_slices, cache.desired_endpoints) == (
        desired,
        actual,
        num_endpoints,
    )


def test_num_endpoints_and_slices() -> None:
    cache = MetricsCache(100)

    cache.update_service("ns1/svc1", "IPv4", INEFFICIENT)
    expect_num_endpoints_and_slices(cache, 2, 13, 30)

    cache.update_service("ns1/svc2", "IPv4", EFFICIENT)
    expect_num_endpoints_and_slices(cache, 4, 15, 110)

    cache.update_service("ns1/svc3", "IPv4", INEFFICIENT)
    expect_num_endpoints_and_slices(cache, 6, 28, 140)

    cache.update_service("ns1/svc1", "IPv4", EFFICIENT)
    expect_num_endpoints_and_slices(cache, 6, 17, 190)

    cache.delete_service("ns1/svc3")
    expect_num_endpoints_and_slices(cache, 4, 4, 160)


def test_place_holder_slice() -> None:
    cache = MetricsCache(100)
    cache.update_service(
        "ns1/svc1", "IPv4", {KEY_80: EfficiencyInfo(0, 1), KEY_80_443: EfficiencyInfo(0, 1)}
    )
    expect_num_endpoints_and_slices(cache, 1, 2, 0)


def test_num_endpoints_and_slices_dual_stack() -> None:
    # Upstream's cache has one entry per Service and each address type's update replaces it,
    # so after reconciling a dual-stack Service (TestReconcile1Pod/dualstack) it reports only
    # the last family: desired = actual = 1 and 1 endpoint, although two slices exist. We
    # keep one entry per (Service, address type) and count both families.
    cache = MetricsCache(100)
    cache.update_service("ns/svc", "IPv4", {KEY_80: EfficiencyInfo(1, 1)})
    cache.update_service("ns/svc", "IPv6", {KEY_80: EfficiencyInfo(1, 1)})
    expect_num_endpoints_and_slices(cache, 2, 2, 2)

    # Each family keeps its own placeholder minimum.
    cache.update_service("ns/svc", "IPv6", {PLACEHOLDER: EfficiencyInfo(0, 1)})
    expect_num_endpoints_and_slices(cache, 2, 2, 1)

    # Re-reporting one family replaces only that family.
    cache.update_service("ns/svc", "IPv4", {KEY_80: EfficiencyInfo(250, 4)})
    expect_num_endpoints_and_slices(cache, 4, 5, 250)

    # The Service becomes single-stack.
    cache.remove_address_type("ns/svc", "IPv6")
    expect_num_endpoints_and_slices(cache, 3, 4, 250)
    cache.remove_address_type("ns/svc", "IPv6")  # idempotent
    expect_num_endpoints_and_slices(cache, 3, 4, 250)

    cache.delete_service("ns/svc")
    expect_num_endpoints_and_slices(cache, 0, 0, 0)
    cache.delete_service("ns/svc")  # idempotent
    expect_num_endpoints_and_slices(cache, 0, 0, 0)


def test_port_groups_no_longer_desired_are_dropped() -> None:
    cache = MetricsCache(10)
    cache.update_service(
        "ns/svc", "IPv4", {KEY_80: EfficiencyInfo(25, 3), KEY_80_443: EfficiencyInfo(5, 1)}
    )
    expect_num_endpoints_and_slices(cache, 4, 4, 30)
    cache.update_service("ns/svc", "IPv4", {KEY_80: EfficiencyInfo(25, 3)})
    expect_num_endpoints_and_slices(cache, 3, 3, 25)


def test_cache_services_by_traffic_distribution() -> None:
    cache = MetricsCache(100)
    service1, service2, service3, service4 = (
        "ns1/service1",
        "ns1/service2",
        "ns2/service3",
        "ns3/service4",
    )

    def must_have(want: dict[str, set[str]]) -> None:
        assert cache.traffic_distribution_members() == {k: frozenset(v) for k, v in want.items()}
        assert cache.services_by_traffic_distribution() == {k: len(v) for k, v in want.items()}

    # service1 starts using trafficDistribution=PreferClose
    cache.update_traffic_distribution(service1, "PreferClose")
    must_have({"PreferClose": {service1}})

    # service1 starts using trafficDistribution=PreferClose, retries of similar mutation
    # should be idempotent
    cache.update_traffic_distribution(service1, "PreferClose")
    must_have({"PreferClose": {service1}})

    # service2 starts using trafficDistribution=PreferClose
    cache.update_traffic_distribution(service2, "PreferClose")
    must_have({"PreferClose": {service1, service2}})

    # service3 starts using trafficDistribution=FutureValue
    cache.update_traffic_distribution(service3, "FutureValue")
    must_have({"PreferClose": {service1, service2}, "FutureValue": {service3}})

    # service4 starts using trafficDistribution=nil
    cache.update_traffic_distribution(service4, None)
    must_have({"PreferClose": {service1, service2}, "FutureValue": {service3}})

    # service2 transitions trafficDistribution: PreferClose -> AnotherFutureValue
    cache.update_traffic_distribution(service2, "AnotherFutureValue")
    must_have(
        {"PreferClose": {service1}, "FutureValue": {service3}, "AnotherFutureValue": {service2}}
    )

    # service3 gets deleted
    cache.delete_service(service3)
    must_have({"PreferClose": {service1}, "FutureValue": set(), "AnotherFutureValue": {service2}})

    # service1 transitions trafficDistribution: PreferClose -> nil
    cache.update_traffic_distribution(service1, None)
    must_have({"PreferClose": set(), "FutureValue": set(), "AnotherFutureValue": {service2}})

    # service2 transitions trafficDistribution: AnotherFutureValue -> nil
    cache.update_traffic_distribution(service2, None)
    must_have({"PreferClose": set(), "FutureValue": set(), "AnotherFutureValue": set()})


@pytest.mark.parametrize(
    ("endpoints", "maximum", "expected"),
    [(0, 100, 0), (1, 100, 1), (100, 100, 1), (101, 100, 2), (250, 100, 3), (7, 1, 7)],
)
def test_num_desired_slices(endpoints: int, maximum: int, expected: int) -> None:
    assert num_desired_slices(endpoints, maximum) == expected


@pytest.mark.parametrize("maximum", [0, -1])
def test_max_endpoints_per_slice_must_be_positive(maximum: int) -> None:
    with pytest.raises(ValueError, match="max_endpoints_per_slice"):
        MetricsCache(maximum)


def test_one_endpoint_per_slice_is_a_valid_maximum() -> None:
    cache = MetricsCache(1)
    assert cache.max_endpoints_per_slice == 1
    cache.update_service("ns/svc", "IPv4", {KEY_80: EfficiencyInfo(3, 3)})
    expect_num_endpoints_and_slices(cache, 3, 3, 3)


def test_efficiency_info_is_an_immutable_hashable_value() -> None:
    info = EfficiencyInfo(endpoints=3, slices=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.slices = 2  # type: ignore[misc]
    assert {info: "ports:80"}[EfficiencyInfo(3, 1)] == "ports:80"
    assert not hasattr(info, "__dict__")  # slotted: one per port group per sync
