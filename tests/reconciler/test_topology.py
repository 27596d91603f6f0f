"""Port of upstream topologycache/topologycache_test.go, plus the controller-level checks
(hintsEnabled from utils_test.go, overloaded services from the KCM controller test)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from endpointslice_operator.reconciler.hints.topology import (
    ANNOTATION_TOPOLOGY_AWARE_HINTS as HINTS,
)
from endpointslice_operator.reconciler.hints.topology import (
    ANNOTATION_TOPOLOGY_MODE as MODE,
)
from endpointslice_operator.reconciler.hints.topology import (
    SliceInfo,
    TopologyCache,
    cpu_millicores,
    hints_enabled,
)
from endpointslice_operator.reconciler.plan import PlanEvent

SVC = "ns/svc"


def ep(
    address: str,
    zone: str | None = None,
    *,
    ready: bool | None = True,
    hint: str | None = None,
) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"addresses": [address]}
    if zone is not None:
        endpoint["zone"] = zone
    endpoint["conditions"] = {} if ready is None else {"ready": ready}
    if hint is not None:
        endpoint["hints"] = {"forZones": [{"name": hint}]}
    return endpoint


def eps(*endpoints: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    slice_: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"namespace": "ns", "labels": {"kubernetes.io/service-name": "svc"}},
        "addressType": "IPv4",
        "endpoints": list(endpoints),
    }
    if name is not None:
        slice_["metadata"]["name"] = name
    return slice_


def node(
    zone: str | None,
    cpu: Any,
    *,
    ready: str = "True",
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    all_labels = dict(labels or {})
    if zone:
        all_labels["topology.kubernetes.io/zone"] = zone
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": ready}]}
    if cpu is not None:
        status["allocatable"] = {"cpu": cpu}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"labels": all_labels},
        "status": status,
    }


def cache_with_ratios(milli_by_zone: Mapping[str, int] | None) -> TopologyCache:
    """A cache whose zone ratios come from one node per zone with these millicores."""
    cache = TopologyCache()
    cache.set_nodes([node(zone, f"{milli}m") for zone, milli in (milli_by_zone or {}).items()])
    return cache


def warning(message: str) -> PlanEvent:
    return PlanEvent(type="Warning", reason="TopologyAwareHintsDisabled", message=message)


ENABLED = PlanEvent(
    type="Normal",
    reason="TopologyAwareHintsEnabled",
    message="Topology Aware Hints has been enabled, addressType: IPv4",
)
INSUFFICIENT = warning(
    "Insufficient Node information: allocatable CPU or zone not specified on one or more "
    "nodes, addressType: IPv4"
)


@dataclass
class AddHintsCase:
    milli_by_zone: dict[str, int] | None
    expected_ratios: dict[str, float] | None
    to_create: list[dict[str, Any]] = field(default_factory=list)
    to_update: list[dict[str, Any]] = field(default_factory=list)
    expected_by_address_type: dict[str, dict[str, int]] | None = None
    expected_create: list[dict[str, Any]] = field(default_factory=list)
    expected_update: list[dict[str, Any]] = field(default_factory=list)
    expected_events: list[PlanEvent] = field(default_factory=list)


ADD_HINTS_CASES = {
    "empty": AddHintsCase(
        milli_by_zone=None,
        expected_ratios=None,
        expected_events=[INSUFFICIENT],
    ),
    "slice to create, no zone ratios": AddHintsCase(
        milli_by_zone=None,
        expected_ratios=None,
        to_create=[eps(ep("10.1.2.3", "zone-a"))],
        expected_create=[eps(ep("10.1.2.3", "zone-a"))],
        expected_events=[INSUFFICIENT],
    ),
    "slice to create with 2 endpoints, zone ratios require 3": AddHintsCase(
        milli_by_zone={"zone-a": 300, "zone-b": 400, "zone-c": 300},
        expected_ratios={"zone-a": 0.3, "zone-b": 0.4, "zone-c": 0.3},
        to_create=[eps(ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"))],
        expected_create=[eps(ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"))],
        expected_events=[
            warning("Insufficient number of endpoints (2 endpoints, 3 zones), addressType: IPv4")
        ],
    ),
    "slice to create with 2 endpoints, zone ratios only require 2": AddHintsCase(
        milli_by_zone={"zone-a": 450, "zone-b": 550},
        expected_ratios={"zone-a": 0.45, "zone-b": 0.55},
        to_create=[eps(ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b"))],
        expected_by_address_type={"IPv4": {"zone-a": 1, "zone-b": 1}},
        expected_create=[
            eps(ep("10.1.2.3", "zone-a", hint="zone-a"), ep("10.1.2.4", "zone-b", hint="zone-b"))
        ],
        expected_events=[ENABLED],
    ),
    "slice to create with 2 ready, 1 unready, 1 unknown endpoints, zone ratios only require 2": (
        AddHintsCase(
            milli_by_zone={"zone-a": 450, "zone-b": 550},
            expected_ratios={"zone-a": 0.45, "zone-b": 0.55},
            to_create=[
                eps(
                    ep("10.1.2.3", "zone-a"),
                    ep("10.1.2.4", "zone-b"),
                    ep("10.1.2.5", "zone-b", ready=False),
                    ep("10.1.2.6", "zone-b", ready=None),
                )
            ],
            expected_by_address_type={"IPv4": {"zone-a": 1, "zone-b": 1}},
            expected_create=[
                eps(
                    ep("10.1.2.3", "zone-a", hint="zone-a"),
                    ep("10.1.2.4", "zone-b", hint="zone-b"),
                    ep("10.1.2.5", "zone-b", ready=False),
                    ep("10.1.2.6", "zone-b", ready=None),
                )
            ],
            expected_events=[ENABLED],
        )
    ),
    "slices to create and update within 3 zone threshold": AddHintsCase(
        milli_by_zone={"zone-a": 350, "zone-b": 350, "zone-c": 300},
        expected_ratios={"zone-a": 0.35, "zone-b": 0.35, "zone-c": 0.30},
        to_create=[
            eps(ep("10.1.2.3", "zone-a"), ep("10.1.2.4", "zone-b")),
            eps(ep("10.1.3.3", "zone-c"), ep("10.1.3.4", "zone-c"), ep("10.1.3.4", "zone-a")),
        ],
        to_update=[
            eps(ep("10.2.2.3", "zone-a"), ep("10.2.2.4", "zone-a")),
            eps(ep("10.2.3.3", "zone-b"), ep("10.2.3.4", "zone-c"), ep("10.2.3.4", "zone-a")),
        ],
        expected_by_address_type={"IPv4": {"zone-a": 4, "zone-b": 3, "zone-c": 3}},
        expected_create=[
            eps(ep("10.1.2.3", "zone-a", hint="zone-b"), ep("10.1.2.4", "zone-b", hint="zone-b")),
            eps(
                ep("10.1.3.3", "zone-c", hint="zone-c"),
                ep("10.1.3.4", "zone-c", hint="zone-c"),
                ep("10.1.3.4", "zone-a", hint="zone-a"),
            ),
        ],
        expected_update=[
            eps(ep("10.2.2.3", "zone-a", hint="zone-a"), ep("10.2.2.4", "zone-a", hint="zone-a")),
            eps(
                ep("10.2.3.3", "zone-b", hint="zone-b"),
                ep("10.2.3.4", "zone-c", hint="zone-c"),
                ep("10.2.3.4", "zone-a", hint="zone-a"),
            ),
        ],
        expected_events=[ENABLED],
    ),
}


@pytest.mark.parametrize("case", ADD_HINTS_CASES.values(), ids=ADD_HINTS_CASES.keys())
def test_add_hints(case: AddHintsCase) -> None:
    cache = cache_with_ratios(case.milli_by_zone)
    assert cache.cpu_ratios_by_zone == case.expected_ratios
    si = SliceInfo(SVC, "IPv4", to_create=case.to_create, to_update=case.to_update)

    to_create, to_update, events = cache.add_hints(si)

    assert to_create == case.expected_create
    assert to_update == case.expected_update
    assert events == case.expected_events
    assert cache.hints_by_address_type(SVC) == case.expected_by_address_type
    assert cache.has_populated_hints(SVC) == (case.expected_by_address_type is not None)


def test_add_hints_keeps_fitting_unchanged_slices_and_copies_the_others() -> None:
    cache = cache_with_ratios({"zone-a": 500, "zone-b": 500})
    fitting = eps(ep("10.0.0.1", "zone-a", hint="zone-a"), ep("10.0.0.2", "zone-b", hint="zone-b"))
    stale = eps(ep("10.0.0.3", "zone-a", hint="zone-gone"), ep("10.0.0.4", "zone-b"), name="s2")
    unchanged = [fitting, stale]
    before = copy.deepcopy(unchanged)
    si = SliceInfo(SVC, "IPv4", unchanged=list(unchanged))

    to_create, to_update, events = cache.add_hints(si)

    assert unchanged == before, "unchanged slices are the caller's and must not be mutated"
    assert to_create == []
    assert to_update == [
        eps(
            ep("10.0.0.3", "zone-a", hint="zone-a"),
            ep("10.0.0.4", "zone-b", hint="zone-b"),
            name="s2",
        )
    ]
    assert si.unchanged == [fitting]
    assert events == [ENABLED]
    assert cache.hints_by_address_type(SVC) == {"IPv4": {"zone-a": 2, "zone-b": 2}}


def test_add_hints_enabled_event_only_once() -> None:
    cache = cache_with_ratios({"zone-a": 500, "zone-b": 500})

    def sync() -> list[PlanEvent]:
        si = SliceInfo(
            SVC, "IPv4", to_create=[eps(ep("10.0.0.1", "zone-a"), ep("10.0.0.2", "zone-b"))]
        )
        return cache.add_hints(si)[2]

    assert sync() == [ENABLED]
    assert sync() == []


def test_add_hints_endpoint_without_zone_removes_hints() -> None:
    cache = cache_with_ratios({"zone-a": 500, "zone-b": 500})
    cache.set_hints(SVC, "IPv4", {"zone-a": 1, "zone-b": 1})
    with_hints = eps(
        ep("10.0.0.1", "zone-a", hint="zone-a"), ep("10.0.0.2", "zone-b", hint="zone-b")
    )
    before = copy.deepcopy(with_hints)
    si = SliceInfo(
        SVC,
        "IPv4",
        to_create=[eps(ep("10.0.0.3"), ep("10.0.0.4", "zone-a", hint="zone-b"))],
        unchanged=[with_hints],
    )

    to_create, to_update, events = cache.add_hints(si)

    assert with_hints == before
    assert to_create == [eps(ep("10.0.0.3"), ep("10.0.0.4", "zone-a"))]
    assert to_update == [eps(ep("10.0.0.1", "zone-a"), ep("10.0.0.2", "zone-b"))]
    assert events == [
        warning("One or more endpoints do not have a zone specified, addressType: IPv4")
    ]
    assert not cache.has_populated_hints(SVC)
    assert cache.hints_by_address_type(SVC) is None


@pytest.mark.parametrize("zone", ["", 7], ids=["empty zone", "zone not a string"])
def test_add_hints_endpoint_with_an_empty_or_malformed_zone_counts_as_without(zone: object) -> None:
    """Upstream gives up when ``Zone`` is nil or ``""``; a zone that is not a string at all
    (malformed JSON) is no zone either."""
    cache = cache_with_ratios({"zone-a": 500, "zone-b": 500})
    odd = ep("10.0.0.1", hint="zone-a")
    odd["zone"] = zone
    si = SliceInfo(SVC, "IPv4", to_create=[eps(odd, ep("10.0.0.2", "zone-b"))])

    to_create, _, events = cache.add_hints(si)

    assert [e.get("hints") for e in to_create[0]["endpoints"]] == [None, None]
    assert events == [
        warning("One or more endpoints do not have a zone specified, addressType: IPv4")
    ]
    assert cache.hints_by_address_type(SVC) is None


def test_add_hints_minimum_exceeds_overload_threshold() -> None:
    # 3 endpoints over zones weighted 1:1:8 need minimums of at least 1 + 1 + 2 = 4 > 3.
    cache = cache_with_ratios({"zone-a": 100, "zone-b": 100, "zone-c": 800})
    si = SliceInfo(SVC, "IPv6", to_create=[eps(*(ep(f"10.0.0.{i}", "zone-c") for i in range(3)))])

    _, _, events = cache.add_hints(si)

    assert events == [
        warning(
            "Unable to allocate minimum required endpoints to each zone without exceeding "
            "overload threshold (3 endpoints, 3 zones), addressType: IPv6"
        )
    ]


def test_add_hints_nodes_in_one_zone_only() -> None:
    # A fresh cache has empty (not missing) ratios, which upstream reports as one zone.
    _, _, events = TopologyCache().add_hints(SliceInfo(SVC, "IPv4"))
    assert events == [warning("Nodes only ready in one zone, addressType: IPv4")]


@dataclass
class SetNodesCase:
    nodes: list[dict[str, Any]]
    expect_sufficient_node_info: bool
    expected_cpu_by_zone: dict[str, int] | None
    expected_ratios: dict[str, float] | None


CONTROL_PLANE = {"node-role.kubernetes.io/control-plane": ""}
SET_NODES_CASES = {
    "empty": SetNodesCase([], False, None, None),
    "single node": SetNodesCase([node("zone-a", "1000m")], False, None, None),
    "single zone": SetNodesCase(
        [node("zone-a", "1000m"), node("zone-a", "1000m")], False, None, None
    ),
    "2 zones": SetNodesCase(
        [node("zone-a", "1000m"), node("zone-b", "1000m")],
        True,
        {"zone-a": 1000, "zone-b": 1000},
        {"zone-a": 0.5, "zone-b": 0.5},
    ),
    "2 zones, unready node in 1, ready node in 1": SetNodesCase(
        [node("zone-a", "1000m", ready="False"), node("zone-b", "1000m")], False, None, None
    ),
    "2 zones, control plane node in 1, ready node in 1": SetNodesCase(
        [node("zone-a", "1000m"), node("zone-b", "1000m", labels=CONTROL_PLANE)],
        False,
        None,
        None,
    ),
    "2 zones, unready node in 1, ready node in 2": SetNodesCase(
        [node("zone-a", "1000m"), node("zone-b", "1000m"), node("zone-b", "1000m", ready="False")],
        True,
        {"zone-a": 1000, "zone-b": 1000},
        {"zone-a": 0.5, "zone-b": 0.5},
    ),
    "2 zones, control plane node in 1, ready node in 2": SetNodesCase(
        [
            node("zone-a", "1000m"),
            node("zone-b", "1000m"),
            node("zone-b", "1000m", labels=CONTROL_PLANE),
        ],
        True,
        {"zone-a": 1000, "zone-b": 1000},
        {"zone-a": 0.5, "zone-b": 0.5},
    ),
    "3 zones, 4 nodes in 1, 2 nodes in 1, 1 node in 1": SetNodesCase(
        [
            node("zone-a", "1000m"),
            node("zone-a", "1000m"),
            node("zone-a", "1000m"),
            node("zone-a", "2000m"),
            node("zone-b", "3000m"),
            node("zone-b", "1500m"),
            node("zone-c", "500m"),
        ],
        True,
        {"zone-a": 5000, "zone-b": 4500, "zone-c": 500},
        {"zone-a": 0.5, "zone-b": 0.45, "zone-c": 0.05},
    ),
    # Beyond upstream's table: the global bail-out and quantity spellings.
    "node without zone disables everything": SetNodesCase(
        [node("zone-a", "1"), node("zone-b", "1"), node(None, "1")], False, None, None
    ),
    "node without allocatable cpu disables everything": SetNodesCase(
        [node("zone-a", "1"), node("zone-b", "1"), node("zone-b", None)], False, None, None
    ),
    "malformed cpu counts as zero": SetNodesCase(
        [node("zone-a", "1"), node("zone-b", "lots")], False, None, None
    ),
    "master label excluded even with a zone": SetNodesCase(
        [
            node("zone-a", "2"),
            node("zone-b", 2),
            node("zone-c", "64", labels={"node-role.kubernetes.io/master": "true"}),
        ],
        True,
        {"zone-a": 2000, "zone-b": 2000},
        {"zone-a": 0.5, "zone-b": 0.5},
    ),
    "decimal and milli quantities": SetNodesCase(
        [node("zone-a", "0.5"), node("zone-b", "1500m")],
        True,
        {"zone-a": 500, "zone-b": 1500},
        {"zone-a": 0.25, "zone-b": 0.75},
    ),
    "node without Ready condition is ignored": SetNodesCase(
        [
            node("zone-a", "1"),
            node("zone-b", "1"),
            {"metadata": {"labels": {}}, "status": {"allocatable": {"cpu": "1"}}},
        ],
        True,
        {"zone-a": 1000, "zone-b": 1000},
        {"zone-a": 0.5, "zone-b": 0.5},
    ),
    "nodes after an ignored one still count": SetNodesCase(
        [
            node("zone-c", "8", ready="False"),
            node("zone-a", "1"),
            node("zone-c", "8", labels=CONTROL_PLANE),
            node("zone-b", "3"),
        ],
        True,
        {"zone-a": 1000, "zone-b": 3000},
        {"zone-a": 0.25, "zone-b": 0.75},
    ),
}


@pytest.mark.parametrize("case", SET_NODES_CASES.values(), ids=SET_NODES_CASES.keys())
def test_set_nodes(case: SetNodesCase) -> None:
    before = copy.deepcopy(case.nodes)
    cache = TopologyCache()

    cache.set_nodes(case.nodes)

    assert case.nodes == before
    assert cache.sufficient_node_info is case.expect_sufficient_node_info
    assert cache.cpu_by_zone == case.expected_cpu_by_zone
    assert cache.cpu_ratios_by_zone == case.expected_ratios


def test_a_new_cache_has_no_sufficient_node_info() -> None:
    assert not TopologyCache().sufficient_node_info


def test_set_nodes_replaces_previous_ratios() -> None:
    cache = cache_with_ratios({"zone-a": 1000, "zone-b": 1000})
    cache.set_nodes([node("zone-a", "1")])
    assert cache.cpu_ratios_by_zone is None
    assert not cache.sufficient_node_info


@pytest.mark.parametrize(
    ("quantity", "millicores"),
    [
        ("2", 2000),
        ("1500m", 1500),
        ("0.5", 500),
        (".25", 250),
        ("1.", 1000),
        ("+3", 3000),
        ("1k", 1_000_000),
        ("1Ki", 1_024_000),
        ("2e3", 2_000_000),
        ("1E-3", 1),
        ("100u", 1),  # MilliValue rounds up
        ("250000000n", 250),
        ("1500000u", 1500),
        ("3M", 3 * 10**9),
        ("3G", 3 * 10**12),
        ("3T", 3 * 10**15),
        ("3P", 3 * 10**18),
        ("3E", 3 * 10**21),  # the exa suffix, not an exponent
        ("3Mi", 3 * 2**20 * 1000),
        ("3Gi", 3 * 2**30 * 1000),
        ("3Ti", 3 * 2**40 * 1000),
        ("3Pi", 3 * 2**50 * 1000),
        ("3Ei", 3 * 2**60 * 1000),
        ("3e64", 3 * 10**67),  # the largest exponent taken
        ("3e65", 0),
        ("3e-64", 1),
        ("3e-65", 0),
        (4, 4000),
        (0.75, 750),
        ("", 0),
        (None, 0),
        ("abc", 0),
        ("1.2.3", 0),
        ("5 cores", 0),
        ("1X", 0),
        ("1e999", 0),
        (True, 0),
        (float("nan"), 0),
        ({"cpu": 1}, 0),
    ],
)
def test_cpu_millicores(quantity: object, millicores: int) -> None:
    assert cpu_millicores(quantity) == millicores


HINTS_ENABLED_CASES = {
    "empty annotations": (None, False),
    "different annotations": ({"topology-hints": "enabled"}, False),
    "hints annotation == enabled": ({HINTS: "enabled"}, False),
    "hints annotation == aUto": ({HINTS: "aUto"}, False),
    "hints annotation == auto": ({HINTS: "auto"}, True),
    "hints annotation == Auto": ({HINTS: "Auto"}, True),
    "hints annotation == disabled": ({HINTS: "disabled"}, False),
    "mode annotation == enabled": ({MODE: "enabled"}, False),
    "mode annotation == aUto": ({MODE: "aUto"}, False),
    "mode annotation == auto": ({MODE: "auto"}, True),
    "mode annotation == Auto": ({MODE: "Auto"}, True),
    "mode annotation == disabled": ({MODE: "disabled"}, False),
    "mode annotation == disabled, hints annotation == auto": (
        {MODE: "disabled", HINTS: "auto"},
        True,
    ),
    "mode annotation == auto, hints annotation == disabled": (
        {MODE: "auto", HINTS: "disabled"},
        False,
    ),
    "mode annotation == auto, hints annotation empty": ({MODE: "auto", HINTS: ""}, False),
}


@pytest.mark.parametrize(
    ("annotations", "expect_enabled"), HINTS_ENABLED_CASES.values(), ids=HINTS_ENABLED_CASES.keys()
)
def test_hints_enabled(annotations: dict[str, str] | None, expect_enabled: bool) -> None:
    assert hints_enabled(annotations) is expect_enabled


# Test_checkNodeTopologyDistribution (KCM controller test): node CPU per zone against the
# hints stored for one Service; the Service is reported overloaded when a zone falls under
# its minimum share.
OVERLOAD_CASES = {
    "lopsided, balanced hints": (
        {"zone-a": "100m", "zone-b": "1000m", "zone-c": "2000m"},
        {"zone-a": 1, "zone-b": 2, "zone-c": 3},
        1,
    ),
    "even zones, 5/4 hints": (
        {"zone-a": "1000m", "zone-b": "1000m"},
        {"zone-a": 5, "zone-b": 4},
        0,
    ),
    "even zones, 6/4 hints": (
        {"zone-a": "1000m", "zone-b": "1000m"},
        {"zone-a": 6, "zone-b": 4},
        1,
    ),
    "lopsided, 20/10/1 hints": (
        {"zone-a": "2000m", "zone-b": "1000m", "zone-c": "100m"},
        {"zone-a": 20, "zone-b": 10, "zone-c": 1},
        0,
    ),
    "lopsided, zone c without hints": (
        {"zone-a": "2000m", "zone-b": "1000m", "zone-c": "100m"},
        {"zone-a": 20, "zone-b": 10, "zone-c": 0},
        1,
    ),
    "zone missing from hints": (
        {"zone-a": "1000m", "zone-b": "1000m", "zone-c": "1000m"},
        {"zone-a": 5, "zone-b": 5},
        1,
    ),
}


@pytest.mark.parametrize(
    ("cpu_by_zone", "hints", "expected"), OVERLOAD_CASES.values(), ids=OVERLOAD_CASES.keys()
)
def test_get_overloaded_services(
    cpu_by_zone: dict[str, str], hints: dict[str, int], expected: int
) -> None:
    cache = TopologyCache()
    cache.set_nodes([node(zone, cpu) for zone, cpu in cpu_by_zone.items()])
    cache.set_hints(SVC, "IPv4", hints)
    assert len(cache.get_overloaded_services()) == expected


@pytest.mark.parametrize(
    "nodes",
    [
        pytest.param([node("zone-a", "1"), node(None, "1")], id="node missing its zone"),
        pytest.param([node("zone-a", "1"), node("zone-b", None)], id="node missing its cpu"),
    ],
)
def test_get_overloaded_services_without_ratios(nodes: list[dict[str, Any]]) -> None:
    cache = TopologyCache()
    cache.set_hints(SVC, "IPv4", {"zone-a": 1, "zone-b": 1})
    cache.set_hints("ns/no-hints", "IPv4", {})
    cache.set_nodes(nodes)
    assert cache.get_overloaded_services() == [SVC]


def test_remove_hints_per_address_type() -> None:
    cache = TopologyCache()
    cache.set_hints(SVC, "IPv4", {"zone-a": 1})
    cache.set_hints(SVC, "IPv6", {"zone-a": 2})
    cache.remove_hints(SVC, "IPv4")
    # Upstream drops the "populated" mark as soon as any address type loses its hints.
    assert not cache.has_populated_hints(SVC)
    assert cache.hints_by_address_type(SVC) == {"IPv6": {"zone-a": 2}}
    cache.remove_hints(SVC, "IPv6")
    assert cache.hints_by_address_type(SVC) is None
    cache.remove_hints(SVC, "IPv6")  # idempotent


def test_delete_service() -> None:
    cache = TopologyCache()
    cache.set_hints(SVC, "IPv4", {"zone-a": 1})
    cache.set_hints("ns/other", "IPv4", {"zone-a": 1})
    cache.delete_service(SVC)
    assert not cache.has_populated_hints(SVC)
    assert cache.hints_by_address_type(SVC) is None
    assert cache.has_populated_hints("ns/other")


def test_set_hints_copies_its_input() -> None:
    cache = TopologyCache()
    allocated = {"zone-a": 1}
    cache.set_hints(SVC, "IPv4", allocated)
    allocated["zone-a"] = 7
    assert cache.hints_by_address_type(SVC) == {"IPv4": {"zone-a": 1}}


def test_update_node() -> None:
    # TestUpdateNode (KCM controller test): two Ready nodes without a zone give insufficient
    # node information; once both carry a zone, hints are enabled.
    cache = TopologyCache()
    cache.set_nodes([node(None, "1"), node(None, "1")])
    si = SliceInfo(SVC, "IPv4", to_create=[eps(ep("10.0.0.1", "zone-a"), ep("10.0.0.2", "zone-b"))])
    assert cache.add_hints(si)[2] == [INSUFFICIENT]

    cache.set_nodes([node("zone-a", "1"), node("zone-b", "1")])
    si = SliceInfo(SVC, "IPv4", to_create=[eps(ep("10.0.0.1", "zone-a"), ep("10.0.0.2", "zone-b"))])
    assert cache.add_hints(si)[2] == [ENABLED]


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param({"addresses": ["10.0.0.1"], "conditions": ["ready"]}, id="conditions a list"),
        pytest.param(
            {
                "addresses": ["10.0.0.1"],
                "zone": "zone-a",
                "conditions": {"ready": True},
                "hints": 5,
            },
            id="hints not an object",
        ),
    ],
)
def test_malformed_endpoints_do_not_crash(endpoint: dict[str, Any]) -> None:
    cache = cache_with_ratios({"zone-a": 500, "zone-b": 500})
    unchanged = eps(endpoint, ep("10.0.0.2", "zone-b", hint="zone-b"))
    _, to_update, _ = cache.add_hints(SliceInfo(SVC, "IPv4", unchanged=[unchanged]))
    # Either way the slice is rewritten, and what is written carries well-formed hints only.
    assert len(to_update) == 1
    assert all(isinstance(e.get("hints", {}), dict) for e in to_update[0]["endpoints"])
