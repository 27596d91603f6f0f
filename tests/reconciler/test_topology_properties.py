"""Properties of Auto topology hints (and trafficDistribution hints) on random inputs."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from endpointslice_operator.reconciler.hints.topology import (
    SliceInfo,
    TopologyCache,
    endpoint_ready,
)
from endpointslice_operator.reconciler.hints.trafficdist import (
    PREFER_CLOSE,
    PREFER_SAME_NODE,
    PREFER_SAME_ZONE,
    reconcile_hints_with_unchanged,
)

ZONES = ["zone-a", "zone-b", "zone-c", "zone-d"]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[str], list[dict[str, Any]]]:
    zones = draw(st.lists(st.sampled_from(ZONES), min_size=2, max_size=4, unique=True))
    nodes = [
        {
            "metadata": {"name": f"{zone}-{i}", "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "allocatable": {"cpu": f"{draw(st.integers(1, 8000))}m"},
            },
        }
        for zone in zones
        for i in range(draw(st.integers(1, 3)))
    ]
    return zones, nodes


def endpoints(zones: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    def build(address: int, zone: str, ready: bool | None, hint: str | None) -> dict[str, Any]:
        endpoint: dict[str, Any] = {
            "addresses": [f"10.0.{address // 256}.{address % 256}"],
            "zone": zone,
            "conditions": {} if ready is None else {"ready": ready},
        }
        if hint is not None:
            endpoint["hints"] = {"forZones": [{"name": hint}]}
        return endpoint

    return st.builds(
        build,
        st.integers(0, 65535),
        st.sampled_from(zones),
        st.sampled_from([True, True, True, False, None]),
        st.none() | st.sampled_from([*zones, "zone-gone"]),
    )


def slices(zones: list[str], name_prefix: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(st.lists(endpoints(zones), max_size=12), max_size=4).map(
        lambda groups: [
            {
                "metadata": {"name": f"{name_prefix}-{i}", "namespace": "ns"},
                "addressType": "IPv4",
                "endpoints": group,
            }
            for i, group in enumerate(groups)
        ]
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[dict[str, Any]], SliceInfo]:
    zones, nodes = draw(clusters())
    si = SliceInfo(
        "ns/svc",
        "IPv4",
        to_create=draw(slices(zones, "create")),
        to_update=draw(slices(zones, "update")),
        unchanged=draw(slices(zones, "unchanged")),
    )
    return nodes, si


def ready_endpoints(slices_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for s in slices_ for e in s["endpoints"] if endpoint_ready(e)]


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_add_hints_properties(scenario: tuple[list[dict[str, Any]], SliceInfo]) -> None:
    nodes, si = scenario
    cache = TopologyCache()
    cache.set_nodes(nodes)
    ratios = cache.cpu_ratios_by_zone
    assert ratios is not None
    originals = list(si.unchanged)
    unchanged_before = copy.deepcopy(originals)
    total_ready = si.total_ready_endpoints()

    creates, updates, events = cache.add_hints(si)

    # Caller-owned slices are never modified: those still unchanged are the very same
    # objects, and those needing new hints were copied into the updates.
    assert originals == unchanged_before
    assert all(any(s is o for o in originals) for s in si.unchanged)
    assert not any(s is o for s in updates for o in originals)
    written = [*creates, *updates]
    result = [*written, *si.unchanged]

    if any(event.type == "Warning" for event in events):
        # Allocation failed: no hints anywhere in what is written or kept.
        assert not cache.has_populated_hints("ns/svc")
        assert all("hints" not in e for s in written for e in s["endpoints"])
        assert all("hints" not in e for s in si.unchanged for e in s["endpoints"])
        return

    # Allocation succeeded: every ready endpoint carries exactly one hint, for a zone of
    # the allocation, and the stored allocation counts exactly those hints.
    ready = ready_endpoints(result)
    assert len(ready) == total_ready
    hinted: Counter[str] = Counter()
    for endpoint in ready:
        for_zones = endpoint["hints"]["forZones"]
        assert len(for_zones) == 1
        assert for_zones[0]["name"] in ratios
        hinted[for_zones[0]["name"]] += 1
    stored = cache.hints_by_address_type("ns/svc")
    assert stored is not None
    assert Counter(stored["IPv4"]) == hinted
    assert sum(hinted.values()) == total_ready
    assert cache.has_populated_hints("ns/svc")


@settings(max_examples=200, deadline=None)
@given(
    scenarios(),
    st.sampled_from([PREFER_CLOSE, PREFER_SAME_ZONE, PREFER_SAME_NODE, None, "Unknown"]),
)
def test_reconcile_hints_is_stable(
    scenario: tuple[list[dict[str, Any]], SliceInfo], traffic_distribution: str | None
) -> None:
    _, si = scenario
    unchanged_before = copy.deepcopy(si.unchanged)

    creates, updates, unchanged = reconcile_hints_with_unchanged(
        traffic_distribution, si.to_create, si.to_update, si.unchanged, prefer_same_enabled=True
    )

    assert si.unchanged == unchanged_before
    # Once written, nothing needs another update: a second pass over the result as
    # "unchanged" slices moves none of them.
    everything = [*creates, *updates, *unchanged]
    _, again, still = reconcile_hints_with_unchanged(
        traffic_distribution, [], [], everything, prefer_same_enabled=True
    )
    assert again == []
    assert len(still) == len(everything)
