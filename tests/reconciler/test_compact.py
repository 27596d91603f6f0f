"""compact_slice: the same JSON, shared strings and condition dicts, odd shapes left alone."""

from __future__ import annotations

import copy
import json
from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig, compact_slice, plan_service


def _decoded(value: Any) -> Any:
    """A fresh decode, as a watch event gives it (no string shared with anything)."""
    return json.loads(json.dumps(value))


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "ns", "uid": "svc-uid"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80}],
            "ipFamilies": ["IPv4"],
        },
    }


def _pod(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"web-{i}", "namespace": "ns", "uid": f"pod-uid-{i}"},
        "spec": {"nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "podIP": f"10.0.0.{i}",
            "podIPs": [{"ip": f"10.0.0.{i}"}],
            "conditions": [{"type": "Ready", "status": "True" if i % 2 else "False"}],
        },
    }


_NODES = [{"metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "z"}}}]


def _planned_slice() -> dict[str, Any]:
    config = ReconcilerConfig(controller_name="test")
    pods = [_pod(i) for i in range(1, 7)]
    (created,) = plan_service(_service(), pods, _NODES, [], config).creates
    created["metadata"].update(name="web-abc", uid="slice-uid", resourceVersion="5")
    decoded: dict[str, Any] = _decoded(created)
    return decoded


def test_the_result_is_the_same_json() -> None:
    endpoint_slice = _planned_slice()
    before = copy.deepcopy(endpoint_slice)
    assert compact_slice(endpoint_slice) is endpoint_slice
    assert endpoint_slice == before
    assert json.dumps(endpoint_slice) == json.dumps(before)


def test_equal_conditions_share_one_dict_and_repeated_strings_are_interned() -> None:
    endpoints = compact_slice(_planned_slice())["endpoints"]
    conditions = {id(e["conditions"]) for e in endpoints}
    assert len(conditions) == 2  # ready and not ready
    other = compact_slice(_planned_slice())["endpoints"]
    for mine, theirs in zip(endpoints, other, strict=True):
        assert mine["conditions"] is theirs["conditions"]
        assert mine["nodeName"] is theirs["nodeName"]
        for key in ("kind", "namespace"):
            assert mine["targetRef"][key] is theirs["targetRef"][key]
        # A pod's own strings: one endpoint holds each, interning them would only cost.
        assert mine["addresses"][0] is not theirs["addresses"][0]
        for key in ("name", "uid"):
            assert mine["targetRef"][key] is not theirs["targetRef"][key]


def test_planning_against_compacted_slices_writes_nothing() -> None:
    config = ReconcilerConfig(controller_name="test")
    pods = [_pod(i) for i in range(1, 7)]
    existing = compact_slice(_planned_slice())
    snapshot = copy.deepcopy(existing)
    plan = plan_service(_service(), pods, _NODES, [existing], config)
    assert plan.is_empty
    assert existing == snapshot


def test_odd_shapes_are_left_alone() -> None:
    odd: list[Any] = [
        {"addresses": "10.0.0.1", "conditions": {"ready": "yes"}},
        {"conditions": {"ready": True, "extra": True}},
        {"conditions": None, "targetRef": ["Pod"], "nodeName": 7},
        "not an endpoint",
    ]
    endpoint_slice = {"endpoints": copy.deepcopy(odd)}
    compact_slice(endpoint_slice)
    assert endpoint_slice == {"endpoints": odd}
    shared = compact_slice({"endpoints": [{"conditions": {"ready": True}}]})
    assert endpoint_slice["endpoints"][0]["conditions"] is not shared["endpoints"][0]["conditions"]
    assert compact_slice({"endpoints": None}) == {"endpoints": None}
    assert compact_slice({}) == {}


def test_a_number_is_not_taken_for_a_flag() -> None:
    """0 == False in Python: a shared {"ready": false} must not replace {"ready": 0}."""
    compact_slice({"endpoints": [{"conditions": {"ready": False}}]})
    odd = compact_slice({"endpoints": [{"conditions": {"ready": 0}}]})
    assert json.dumps(odd) == '{"endpoints": [{"conditions": {"ready": 0}}]}'


def test_shared_strings_copies_and_shares_repeated_strings() -> None:
    from endpointslice_operator.reconciler.compact import shared_strings

    tree = _decoded(
        {
            "metadata": {
                "name": "web",
                "resourceVersion": "123",
                "annotations": {"a": "some long value"},
                "labels": {"app": "web"},
            },
            "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
        }
    )
    other = _decoded(tree)
    shared, theirs = shared_strings(tree), shared_strings(other)
    assert shared == tree and shared is not tree and shared["ports"] is not tree["ports"]
    assert shared["ports"][0]["protocol"] is theirs["ports"][0]["protocol"]
    assert shared["metadata"]["labels"]["app"] is theirs["metadata"]["labels"]["app"]
    assert next(iter(shared["metadata"])) is next(iter(theirs["metadata"]))  # keys too
    # Unique per version, or long and unique: left as they are (no interning table entry).
    assert shared["metadata"]["resourceVersion"] is tree["metadata"]["resourceVersion"]
    assert shared["metadata"]["annotations"] is tree["metadata"]["annotations"]


def test_endpoints_after_one_that_is_not_an_object_are_compacted_too() -> None:
    endpoints = compact_slice(_planned_slice())["endpoints"]
    mixed = _planned_slice()
    mixed["endpoints"].insert(0, "not an endpoint")
    compacted = compact_slice(mixed)["endpoints"][1:]
    for mine, theirs in zip(endpoints, compacted, strict=True):
        assert mine["conditions"] is theirs["conditions"]
        assert mine["nodeName"] is theirs["nodeName"]
