"""CachedSlice: equal to the slice it holds, the planner's parse without parsing, and the same
plans as the plain JSON; endpoint JSON dropped only where it is rebuilt exactly."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from endpointslice_operator.reconciler import (
    CachedSlice,
    ReconcilerConfig,
    plan_service,
    pod_record,
)
from endpointslice_operator.reconciler.records import PodRecord
from endpointslice_operator.reconciler.slices import SliceParseCache, _parse_body

from .test_compact import _NODES, _planned_slice, _pod, _service


def _decoded(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_a_planned_slice_is_held_parsed_and_reads_back_equal() -> None:
    endpoint_slice = _planned_slice()
    cached = CachedSlice(copy.deepcopy(endpoint_slice))
    assert cached.endpoints_rebuilt
    assert cached == endpoint_slice and endpoint_slice == cached
    assert dict(cached) == endpoint_slice
    assert json.dumps(dict(cached), sort_keys=True) == json.dumps(endpoint_slice, sort_keys=True)
    assert cached.parsed == _parse_body(endpoint_slice)
    # Each read builds fresh JSON: changing it changes nothing held.
    cached["endpoints"][0]["conditions"]["ready"] = "changed"
    assert cached == endpoint_slice


def test_mapping_behaviour() -> None:
    endpoint_slice = _planned_slice()
    cached = CachedSlice(endpoint_slice)
    assert len(cached) == len(endpoint_slice)
    assert set(cached) == set(endpoint_slice)
    assert "endpoints" in cached and "nope" not in cached
    assert cached.get("nope", 1) == 1 and cached.get("addressType") == "IPv4"
    without = {k: v for k, v in endpoint_slice.items() if k != "endpoints"}
    bare = CachedSlice(without)
    assert "endpoints" not in bare and bare.get("endpoints") is None
    assert len(bare) == len(without) and bare == without
    with pytest.raises(KeyError):
        bare["endpoints"]
    nulled = CachedSlice({**without, "endpoints": None})
    assert nulled["endpoints"] is None and nulled.parsed[1] == ()
    assert repr(bare).startswith("CachedSlice(")


def test_managed_fields_are_not_held() -> None:
    endpoint_slice = _planned_slice()
    endpoint_slice["metadata"]["managedFields"] = [{"manager": "x", "operation": "Update"}]
    cached = CachedSlice(endpoint_slice)
    assert "managedFields" not in cached["metadata"]
    assert "managedFields" in endpoint_slice["metadata"]  # the input is not changed


def test_the_parse_cache_takes_the_parse_from_the_slice() -> None:
    cache = SliceParseCache()
    cached = CachedSlice(_planned_slice())
    view = cache.view(cached)
    assert (view.ports, view.keys, view.states) == cached.parsed
    assert len(cache) == 0


def test_planning_against_a_cached_slice_is_planning_against_its_json() -> None:
    config = ReconcilerConfig(controller_name="test")
    pods = [_pod(i) for i in range(1, 7)]
    existing = _planned_slice()
    assert plan_service(_service(), pods, _NODES, [CachedSlice(existing)], config).is_empty
    pods = [_pod(i) for i in range(1, 7)]  # new objects: cached ones are never changed
    pods[1]["status"]["conditions"][0]["status"] = "True"  # web-2 was not ready
    plain = plan_service(_service(), pods, _NODES, [existing], config)
    cached = plan_service(_service(), pods, _NODES, [CachedSlice(existing)], config)
    assert [type(s) for s in cached.updates] == [dict]
    assert cached.updates == plain.updates and len(plain.updates) == 1
    json.dumps(cached.updates)  # a plain, serialisable body


_STRINGS = st.sampled_from(["10.0.0.1", "10.0.0.2", "web-1", "node-1", "zone-a", "Pod", "ns"])
_VALUES = st.one_of(_STRINGS, st.booleans(), st.none(), st.integers(0, 3))


def _maybe(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), values.map(lambda v: {key: v}))


_CONDITIONS = st.fixed_dictionaries(
    {}, optional={k: st.one_of(st.booleans(), _VALUES) for k in ("ready", "serving", "terminating")}
)
_REF = st.fixed_dictionaries(
    {}, optional=dict.fromkeys(("kind", "namespace", "name", "uid", "fieldPath"), _VALUES)
)
_ENDPOINT = st.builds(
    lambda *parts: {k: v for part in parts for k, v in part.items()},
    _maybe("addresses", st.lists(_STRINGS, max_size=2)),
    _maybe("conditions", _CONDITIONS),
    _maybe("hostname", _STRINGS),
    _maybe("targetRef", _REF),
    _maybe("nodeName", _VALUES),
    _maybe("zone", _VALUES),
    _maybe("hints", st.just({"forZones": [{"name": "zone-a"}]})),
)


@settings(max_examples=300, deadline=None)
@given(endpoints=st.lists(st.one_of(_ENDPOINT, _VALUES), max_size=4))
def test_any_endpoints_read_back_equal_with_the_planners_parse(endpoints: list[Any]) -> None:
    endpoint_slice = _planned_slice()
    endpoint_slice["endpoints"] = endpoints
    expected = _decoded(endpoint_slice)
    cached = CachedSlice(_decoded(endpoint_slice))
    assert cached == expected
    assert cached.parsed == _parse_body(expected)
    plain = [e for e in endpoints if isinstance(e, dict)]
    rebuilt_shape = all(
        set(e) <= {"addresses", "conditions", "targetRef", "nodeName", "zone"} for e in plain
    )
    if not rebuilt_shape or len(plain) != len(endpoints):
        assert not cached.endpoints_rebuilt


def test_endpoints_of_pods_in_other_namespaces_keep_their_json() -> None:
    endpoint_slice = _planned_slice()
    endpoint_slice["endpoints"][0]["targetRef"]["namespace"] = "elsewhere"
    cached = CachedSlice(_decoded(endpoint_slice))
    assert not cached.endpoints_rebuilt
    assert cached == endpoint_slice and cached.parsed == _parse_body(endpoint_slice)


def test_json_copy_is_a_deep_copy() -> None:
    from endpointslice_operator.reconciler.slices import json_copy

    value: dict[str, Any] = {"a": [{"b": 1, "c": None, "d": 1.5, "e": True}], "f": "g"}
    copied = json_copy(value)
    assert copied == value and copied is not value
    assert copied["a"] is not value["a"] and copied["a"][0] is not value["a"][0]
    odd = {"t": (1, [2])}  # not JSON: copy.deepcopy's business
    assert json_copy(odd)["t"][1] is not odd["t"][1]


@pytest.mark.parametrize("distribution", ["PreferClose", "PreferSameZone", "PreferSameNode"])
def test_hints_are_added_to_and_removed_from_unchanged_cached_slices(distribution: str) -> None:
    """Setting ``spec.trafficDistribution`` while the endpoints stay the same moves an unchanged
    cached slice into the updates; so does removing it again. Found on kube-apiserver v1.36:
    every such sync failed (``'CachedSlice' object has no attribute 'setdefault'``)."""
    config = ReconcilerConfig(controller_name="test")
    pods = [_pod(i) for i in range(1, 7)]
    existing = _planned_slice()
    service = _service()
    service["spec"]["trafficDistribution"] = distribution
    plain = plan_service(service, pods, _NODES, [existing], config)
    cached = plan_service(service, pods, _NODES, [CachedSlice(existing)], config)
    assert len(cached.updates) == 1 and type(cached.updates[0]) is dict
    assert cached.updates == plain.updates
    hinted = _decoded(cached.updates[0])
    ready = [e for e in hinted["endpoints"] if e["conditions"]["ready"]]
    assert ready and all("hints" in e for e in ready)
    # Back to no distribution: the hints are stripped from the cached, hinted slice.
    unhinted = plan_service(_service(), pods, _NODES, [CachedSlice(hinted)], config)
    assert len(unhinted.updates) == 1 and type(unhinted.updates[0]) is dict
    assert all("hints" not in e for e in unhinted.updates[0]["endpoints"])


def _endpoint(i: int, conditions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "addresses": [f"10.0.0.{i}"],
        "conditions": conditions,
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": f"web-{i}", "uid": f"pod-uid-{i}"},
        **extra,
    }


def _with_endpoints(endpoints: list[Any]) -> dict[str, Any]:
    endpoint_slice = _planned_slice()
    endpoint_slice["endpoints"] = endpoints
    return endpoint_slice


def test_every_condition_combination_with_or_without_node_and_zone_is_rebuilt_exactly() -> None:
    endpoints = []
    for i, (ready, serving, terminating) in enumerate(itertools.product((False, True), repeat=3)):
        located = {"nodeName": f"node-{i}"} if i % 2 else {}
        if i % 4 < 2:
            located["zone"] = f"zone-{i}"
        conditions = {"ready": ready, "serving": serving, "terminating": terminating}
        endpoints.append(_endpoint(i, conditions, **located))
    endpoint_slice = _with_endpoints(endpoints)
    cached = CachedSlice(_decoded(endpoint_slice))
    assert cached.endpoints_rebuilt
    assert cached == endpoint_slice
    assert cached.parsed == _parse_body(endpoint_slice)


@pytest.mark.parametrize("ready", [None, "true", 1])
def test_conditions_that_are_not_all_booleans_keep_their_json(ready: object) -> None:
    conditions = {"ready": ready, "serving": True, "terminating": False}
    endpoint_slice = _with_endpoints([_endpoint(1, conditions)])
    cached = CachedSlice(_decoded(endpoint_slice))
    assert not cached.endpoints_rebuilt
    assert cached == endpoint_slice and cached.parsed == _parse_body(endpoint_slice)


def test_targets_of_another_kind_are_rebuilt_with_their_kind() -> None:
    conditions = {"ready": True, "serving": True, "terminating": False}
    endpoints = [_endpoint(i, conditions) for i in range(2)]
    for endpoint in endpoints:
        endpoint["targetRef"]["kind"] = "VirtualMachineInstance"
    endpoint_slice = _with_endpoints(endpoints)
    cached = CachedSlice(_decoded(endpoint_slice))
    assert cached.endpoints_rebuilt
    assert cached == endpoint_slice


@pytest.mark.parametrize("metadata", [{}, {"metadata": None}], ids=["none", "null"])
def test_a_slice_without_metadata_is_held(metadata: dict[str, Any]) -> None:
    endpoint_slice = {"addressType": "IPv4", **metadata, "endpoints": []}
    assert CachedSlice(endpoint_slice) == endpoint_slice


def test_sharing_pod_strings_with_unknown_pods_changes_nothing() -> None:
    endpoint_slice = _planned_slice()
    cached = CachedSlice(_decoded(endpoint_slice))
    cached.share_pod_strings(lambda namespace, name: None)
    assert cached.endpoints_rebuilt
    assert cached == endpoint_slice and cached.parsed == _parse_body(endpoint_slice)


def test_sharing_pod_strings_again_builds_nothing_new() -> None:
    """Sharing is offered to every held slice whenever the pods are listed: a slice that holds
    its pods' strings already keeps its columns as they are (no new tuples)."""
    records = {pod["metadata"]["name"]: pod_record(_decoded(pod)) for pod in map(_pod, range(7))}

    def pods(namespace: str, name: str) -> PodRecord | None:
        return records.get(name)

    cached = CachedSlice(_decoded(_planned_slice()))
    cached.share_pod_strings(pods)
    states = cached.parsed[2]
    assert all(state[7] is records[state[7]].name for state in states)
    assert all(state[8] is records[state[7]].uid for state in states)
    columns = (cached._names, cached._uids)
    cached.share_pod_strings(pods)
    assert (cached._names, cached._uids) == columns
    assert cached._names is columns[0] and cached._uids is columns[1]
