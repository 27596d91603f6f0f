"""Planner behaviour beyond the upstream tables: options, generic owners, writes' shape."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest

from endpointslice_operator.reconciler import (
    LAST_CHANGE_TRIGGER_TIME,
    PlanEvent,
    Reconciler,
    ReconcilerConfig,
    TopologyCache,
    desired_from_service_pods,
    plan_service,
)

from .harness import CONTROLLER_NAME, NODE_1, Harness, Json, new_pod, new_service_and_endpoint_meta
from .test_topology_idempotence import SERVICE as HINTED_SERVICE
from .test_topology_idempotence import node as zoned_node
from .test_topology_idempotence import pod as zoned_pod

NS = "test"
CONFIG = ReconcilerConfig(controller_name=CONTROLLER_NAME, topology_hints=False)


def _converged(
    pods: list[Json], max_per_slice: int = 100, **overrides: object
) -> tuple[Json, Harness]:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness(
        max_endpoints_per_slice=max_per_slice,
        config_overrides={"topology_hints": False, **overrides},
    )
    h.reconcile(svc, pods, [])
    return svc, h


def test_updates_carry_resource_version_and_recycled_ones_do_not() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods)
    (existing,) = h.client.list()
    pods[0]["status"]["conditions"][0]["status"] = "False"
    plan = h.reconcile(svc, pods, [existing])
    (update,) = plan.updates
    assert update["metadata"]["name"] == existing["metadata"]["name"]
    assert update["metadata"]["resourceVersion"] == existing["metadata"]["resourceVersion"]

    svc["spec"]["ports"][0]["targetPort"] = 81  # new port group: create recycled into delete
    plan = h.reconcile(svc, pods, h.client.list())
    (recycled,) = plan.updates
    assert plan.creates == [] and plan.deletes == []
    assert "resourceVersion" not in recycled["metadata"]
    assert recycled["ports"][0]["port"] == 81


def test_plans_serialise_as_json_and_name_their_kind() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    plan = plan_service(svc, pods, [NODE_1], [], CONFIG)
    (create,) = json.loads(json.dumps(plan.creates))
    assert create["apiVersion"] == "discovery.k8s.io/v1"
    assert create["kind"] == "EndpointSlice"
    assert "name" not in create["metadata"]
    assert create["metadata"]["generateName"] == "foo-"


def test_trigger_time_none_removes_the_annotation_only_from_written_slices() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(4)]
    svc, h = _converged(pods, max_per_slice=2)
    slices = h.client.list()
    assert all(LAST_CHANGE_TRIGGER_TIME in s["metadata"]["annotations"] for s in slices)
    pods[0]["status"]["conditions"][0]["status"] = "False"
    desired = desired_from_service_pods(svc, pods, [NODE_1])
    plan = h.reconciler.plan(svc, desired, slices, trigger_time=None)
    (update,) = plan.updates
    assert LAST_CHANGE_TRIGGER_TIME not in update["metadata"].get("annotations", {})
    assert all(LAST_CHANGE_TRIGGER_TIME in s["metadata"]["annotations"] for s in slices)


def test_parsed_slices_are_reused_until_their_resource_version_changes() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods)
    (stored,) = h.client.list()
    desired = desired_from_service_pods(svc, pods, [NODE_1])
    assert h.reconciler.plan(svc, desired, [stored]).is_empty
    # Someone else rewrote the slice (new resourceVersion): the planner sees the new content.
    changed = copy.deepcopy(stored)
    changed["endpoints"][0]["conditions"]["ready"] = False
    changed["metadata"]["resourceVersion"] = "999"
    assert len(h.reconciler.plan(svc, desired, [changed]).updates) == 1


def test_owner_being_deleted_gets_no_creates() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    svc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    plan = plan_service(svc, [new_pod(1, NS, True, 1, False)], [NODE_1], [], CONFIG)
    assert plan.is_empty
    assert plan.skipped_creates == 1
    assert plan.changed_slices == 1


def test_ownership_not_enforced_reuses_slices_of_another_uid() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods, ownership_enforced=False)
    recreated = copy.deepcopy(svc)
    recreated["metadata"]["uid"] = "new-uid"
    plan = h.reconcile(recreated, pods, h.client.list())
    assert plan.is_empty
    enforced = Reconciler(CONFIG).plan(
        recreated, desired_from_service_pods(recreated, pods, [NODE_1]), h.client.list()
    )
    assert (len(enforced.creates), len(enforced.deletes)) == (1, 1)


def test_without_placeholder_no_empty_slice_is_written() -> None:
    svc, h = _converged([], placeholder=False)
    assert h.client.list() == []
    pods = [new_pod(1, NS, True, 1, False)]
    h.reconcile(svc, pods, [])
    plan = h.reconcile(svc, [], h.client.list())
    assert (len(plan.creates), len(plan.updates), len(plan.deletes)) == (0, 0, 1)


def test_generic_owner_and_labels_callback() -> None:
    owner = {
        "apiVersion": "gateway.example.io/v1",
        "kind": "Backend",
        "metadata": {"name": "be", "namespace": NS, "uid": "be-uid"},
    }
    service = {
        "metadata": {"name": "be", "namespace": NS},
        "spec": {"ipFamilies": ["IPv4"], "ports": [{"port": 80}]},
    }
    desired = desired_from_service_pods(service, [new_pod(1, NS, True, 1, False)], [NODE_1])

    def labels(current: Mapping[str, str] | None, controller: str) -> tuple[dict[str, str], bool]:
        wanted = {"example.io/backend": "be", "endpointslice.kubernetes.io/managed-by": controller}
        return wanted, dict(current or {}) != wanted

    reconciler = Reconciler(CONFIG)
    plan = reconciler.plan(
        owner, desired, [], labels=labels, trigger_time=datetime(2026, 1, 1, tzinfo=UTC)
    )
    (create,) = plan.creates
    assert create["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "gateway.example.io/v1",
            "kind": "Backend",
            "name": "be",
            "uid": "be-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert create["metadata"]["labels"] == {
        "example.io/backend": "be",
        "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME,
    }
    assert create["metadata"]["annotations"] == {LAST_CHANGE_TRIGGER_TIME: "2026-01-01T00:00:00Z"}
    stored = {
        **create,
        "metadata": {**create["metadata"], "name": "be-1", "uid": "s1", "resourceVersion": "1"},
    }
    assert reconciler.plan(owner, desired, [stored], labels=labels).is_empty


def test_unsupported_address_type_slices_are_deleted_and_their_hints_forgotten() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    topology = TopologyCache()
    topology.set_hints(f"{NS}/foo", "IPv6", {"zone-a": 1})
    legacy = {
        "metadata": {
            "name": "foo-v6",
            "namespace": NS,
            "labels": {"kubernetes.io/service-name": "foo"},
        },
        "addressType": "IPv6",
        "ports": meta.ports,
        "endpoints": [],
    }
    plan = Reconciler(CONFIG.model_copy(update={"topology_hints": True}), topology).plan(
        svc, desired_from_service_pods(svc, [], [NODE_1]), [legacy]
    )
    assert plan.deletes == [legacy]
    assert [c["addressType"] for c in plan.creates] == ["IPv4"]  # never recycled into the IPv6 one
    assert topology.hints_by_address_type(f"{NS}/foo") is None


def test_parse_cache_trusts_only_the_same_object() -> None:
    """A different object with the same uid and resourceVersion (another API server, a test
    emulator) is parsed afresh, never answered from the cache."""
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods)
    (stored,) = h.client.list()
    desired = desired_from_service_pods(svc, pods, [NODE_1])
    assert h.reconciler.plan(svc, desired, [stored]).is_empty
    lookalike = copy.deepcopy(stored)
    lookalike["endpoints"].pop()
    assert len(h.reconciler.plan(svc, desired, [lookalike]).updates) == 1


def test_parse_cache_is_bounded_by_endpoints() -> None:
    from endpointslice_operator.reconciler.slices import SliceParseCache

    cache = SliceParseCache(max_endpoints=5)
    slices = [
        {
            "metadata": {"uid": f"u{i}", "resourceVersion": "1"},
            "endpoints": [{"addresses": ["10.0.0.1"]}] * 2,
        }
        for i in range(4)
    ]
    for slice_ in slices:
        cache.view(slice_)
    assert len(cache) == 2 and cache.endpoint_count == 4
    cache.forget(["u3", "unknown"])
    assert len(cache) == 1 and cache.endpoint_count == 2


def _scribble(value: object) -> None:
    """Mutate every container reachable from ``value``."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


def test_written_slices_share_nothing_with_the_inputs() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(5)]
    svc, h = _converged(pods, max_per_slice=2)
    existing = h.client.list()
    for slice_ in existing:
        slice_["extra"] = {"nested": ["kept"]}
        for endpoint in slice_["endpoints"]:
            endpoint["hints"] = {"forZones": [{"name": "z"}]}
    svc["metadata"]["labels"] = {"team": "a"}  # every slice is rewritten for its labels
    pods[0]["status"]["conditions"][0]["status"] = "False"
    inputs = copy.deepcopy((svc, pods, existing))
    desired = desired_from_service_pods(svc, pods, [NODE_1])
    plan = h.reconciler.plan(svc, desired, existing)
    assert len(plan.updates) == 3
    for written in (*plan.creates, *plan.updates):
        _scribble(written)
    assert (svc, pods, existing) == inputs


def test_generic_desired_endpoints_built_by_hand() -> None:
    """A non-pod controller (KEP-4770 style) feeds its own endpoints to the planner."""
    from endpointslice_operator.reconciler import DesiredEndpoints

    owner = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "ext", "namespace": NS, "uid": "e"},
    }
    desired = DesiredEndpoints.empty(["IPv4"])
    ports = [{"name": "https", "port": 443, "protocol": "TCP"}]
    for i in range(3):
        desired.add("IPv4", ports, {"addresses": [f"192.0.2.{i}"], "conditions": {"ready": True}})
    desired.add("IPv4", ports, {"addresses": ["192.0.2.0"], "conditions": {"ready": False}})
    plan = Reconciler(CONFIG).plan(owner, desired, [])
    (create,) = plan.creates
    assert create["ports"] == ports
    assert [e["conditions"]["ready"] for e in create["endpoints"]] == [False, True, True]
    with pytest.raises(ValueError, match="IPv6"):
        desired.add("IPv6", None, {"addresses": ["2001:db8::1"]})


@pytest.mark.parametrize("topology_hints", [False, True])
def test_stale_hints_are_stripped_when_neither_hints_nor_traffic_distribution_apply(
    topology_hints: bool,
) -> None:
    """A slice carrying hints (left by an earlier Auto annotation or trafficDistribution), for
    a Service with neither now: one update, without the hints (upstream's
    ``RemoveHintsFromSlices`` when trafficDistribution does not apply either)."""
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods, topology_hints=topology_hints)
    (existing,) = h.client.list()
    stale = copy.deepcopy(existing)
    for endpoint in stale["endpoints"]:
        endpoint["hints"] = {"forZones": [{"name": "zone-a"}]}
    plan = h.reconcile(svc, pods, [stale])
    (update,) = plan.updates
    assert plan.creates == [] and plan.deletes == []
    assert update["metadata"]["name"] == existing["metadata"]["name"]
    assert all("hints" not in endpoint for endpoint in update["endpoints"])
    # Written without hints, the next sync has nothing to change.
    assert h.reconcile(svc, pods, h.client.list()).updates == []


@pytest.mark.parametrize(("pods", "slices"), [(0, 1), (1, 1), (100, 1), (101, 2), (250, 3)])
def test_plan_metrics_count_the_slices_the_endpoints_need(pods: int, slices: int) -> None:
    """``plan.metrics``: at least one desired slice (the placeholder of an empty Service)."""
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    plan = plan_service(
        svc, [new_pod(i, NS, True, 1, False) for i in range(pods)], [NODE_1], [], CONFIG
    )
    metrics = plan.metrics["IPv4"]
    assert (metrics.desired_slices, metrics.desired_endpoints) == (slices, pods)
    # Nothing existed: the slices after this sync are the ones it creates (or the placeholder).
    assert metrics.actual_slices == len(plan.creates) == slices
    assert (metrics.added, metrics.removed) == (pods, 0)
    with pytest.raises(AttributeError):
        metrics.add = 1  # type: ignore[attr-defined]  # a misspelt field is refused (slots)
    with pytest.raises(AttributeError):
        plan.skiped_creates = 1  # type: ignore[attr-defined]


def test_a_full_slice_worth_of_new_endpoints_is_created_not_poured_into_an_empty_one() -> None:
    """Upstream fills an unchanged slice only with fewer endpoints than a whole slice
    (``numRemaining < maxEndpointsPerSlice``): exactly a slice's worth gets a new slice, even
    beside an empty slice of the same ports that could take them."""
    pods = [new_pod(i, NS, True, 1, False) for i in range(2)]
    svc, h = _converged(pods[:1], max_per_slice=2)
    (existing,) = h.client.list()
    empty = copy.deepcopy(existing)
    empty["endpoints"] = []
    plan = h.reconcile(svc, pods, [empty])
    assert [len(s["endpoints"]) for s in plan.creates] == [2]
    assert plan.updates == [] and plan.deletes == []


def test_traffic_distribution_set_on_a_converged_service_hints_its_unchanged_slices() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    zoned = {"metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "z-a"}}}
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness(nodes=[zoned], config_overrides={"topology_hints": False})
    h.reconcile(svc, pods, [])
    (existing,) = h.client.list()
    svc["spec"]["trafficDistribution"] = "PreferClose"
    plan = h.reconcile(svc, pods, [existing])
    (update,) = plan.updates
    assert update["metadata"]["name"] == existing["metadata"]["name"]
    assert all(endpoint.get("hints", {}).get("forZones") for endpoint in update["endpoints"])
    assert h.reconcile(svc, pods, h.client.list()).updates == []


def test_an_update_with_room_for_exactly_one_more_takes_it() -> None:
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods[:2], max_per_slice=3)
    (existing,) = h.client.list()
    pods[0]["status"]["conditions"][0]["status"] = "False"  # the slice is updated anyway
    plan = h.reconcile(svc, pods, [existing])
    assert plan.creates == []
    (update,) = plan.updates
    assert len(update["endpoints"]) == 3


def test_new_endpoints_fill_every_updated_slice_with_room_before_a_new_slice() -> None:
    """Upstream's step 3 fills the updated slices, fullest first, until the new endpoints run
    out: 6 pods in two slices of 3, one gone from each, 2 new ones: both go into the two
    updates (one each), no slice is created."""
    pods = [new_pod(i, NS, True, 1, False) for i in range(6)]
    svc, h = _converged(pods, max_per_slice=3)
    slices = h.client.list()
    assert sorted(len(s["endpoints"]) for s in slices) == [3, 3]
    gone = {s["endpoints"][0]["targetRef"]["name"] for s in slices}
    kept = [pod for pod in pods if pod["metadata"]["name"] not in gone]
    added = [new_pod(i, NS, True, 1, False) for i in range(6, 8)]
    plan = h.reconcile(svc, kept + added, slices)
    assert plan.creates == [] and plan.deletes == []
    assert sorted(u["metadata"]["name"] for u in plan.updates) == sorted(
        s["metadata"]["name"] for s in slices
    )
    assert [len(u["endpoints"]) for u in plan.updates] == [3, 3]
    names = {e["targetRef"]["name"] for u in plan.updates for e in u["endpoints"]}
    assert names == {pod["metadata"]["name"] for pod in kept + added}


def test_a_delete_that_cannot_be_recycled_does_not_hide_the_next_one_that_can() -> None:
    """Upstream ``finalize`` walks every delete: a slice of another owner is deleted, never
    recycled, and the owned one after it still takes the create."""
    pods = [new_pod(i, NS, True, 1, False) for i in range(3)]
    svc, h = _converged(pods)
    (owned,) = h.client.list()
    foreign = copy.deepcopy(owned)
    foreign["metadata"]["name"] = "foo-foreign"
    foreign["metadata"]["ownerReferences"][0]["uid"] = "another-uid"
    foreign = h.client.create(foreign)
    svc["spec"]["ports"][0]["targetPort"] = 81  # the owned slice's port group goes away
    plan = h.reconcile(svc, pods, [foreign, owned])
    (recycled,) = plan.updates
    assert recycled["metadata"]["name"] == owned["metadata"]["name"]
    assert recycled["ports"][0]["port"] == 81
    assert plan.creates == []
    assert [s["metadata"]["name"] for s in plan.deletes] == ["foo-foreign"]


def test_a_plan_event_is_an_immutable_hashable_value() -> None:
    """Callers de-duplicate and record events; nothing may change one after planning."""
    event = PlanEvent(type="Warning", reason="TopologyAwareHintsDisabled", message="why")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.message = "other"  # type: ignore[misc]
    assert {event, PlanEvent("Warning", "TopologyAwareHintsDisabled", "why")} == {event}
    assert not hasattr(event, "__dict__")


def test_plan_service_hints_with_a_cache_of_its_own_or_the_one_it_is_given() -> None:
    """Without ``topology`` (and with hints on) a cache is built from ``nodes`` for the call;
    a given cache is the one used, so its hint state lives on between syncs."""
    nodes = [zoned_node("n-a", "zone-a", "2"), zoned_node("n-b", "zone-b", "2")]
    pods = [zoned_pod(i, "n-a" if i % 2 else "n-b", ready=True) for i in range(4)]
    config = ReconcilerConfig(controller_name=CONTROLLER_NAME)

    (created,) = plan_service(HINTED_SERVICE, pods, nodes, [], config).creates
    assert all(e.get("hints", {}).get("forZones") for e in created["endpoints"])

    shared = TopologyCache()
    shared.set_nodes(nodes)
    plan = plan_service(HINTED_SERVICE, pods, nodes, [], config, topology=shared)
    assert plan.creates == [created]
    assert shared.has_populated_hints("ns/web")

    off = ReconcilerConfig(controller_name=CONTROLLER_NAME, topology_hints=False)
    (plain,) = plan_service(
        HINTED_SERVICE, pods, {n["metadata"]["name"]: n for n in nodes}, [], off
    ).creates
    assert not any("hints" in e for e in plain["endpoints"])


def test_hints_switched_off_for_a_service_with_populated_hints_warn_once() -> None:
    """Upstream's Warning ``TopologyAwareHintsDisabled`` ("Topology Aware Hints has been
    disabled, addressType: IPv4") when a Service whose slices carried hints has them turned
    off; the cache forgets them, so the next sync warns no more."""
    nodes = [zoned_node("n-a", "zone-a", "2"), zoned_node("n-b", "zone-b", "2")]
    pods = [zoned_pod(i, "n-a" if i % 2 else "n-b", ready=True) for i in range(4)]
    config = ReconcilerConfig(controller_name=CONTROLLER_NAME)
    topology = TopologyCache()
    topology.set_nodes(nodes)
    plan = plan_service(HINTED_SERVICE, pods, nodes, [], config, topology=topology)
    assert topology.has_populated_hints("ns/web")
    assert [event.reason for event in plan.events] == ["TopologyAwareHintsEnabled"]
    (created,) = plan.creates
    created["metadata"]["name"] = "web-1"

    off = copy.deepcopy(HINTED_SERVICE)
    del off["metadata"]["annotations"]["service.kubernetes.io/topology-mode"]
    plan = plan_service(off, pods, nodes, [created], config, topology=topology)
    assert plan.events == [
        PlanEvent(
            type="Warning",
            reason="TopologyAwareHintsDisabled",
            message="Topology Aware Hints has been disabled, addressType: IPv4",
        )
    ]
    (update,) = plan.updates
    assert not any("hints" in e for e in update["endpoints"])
    assert not topology.has_populated_hints("ns/web")
    assert plan_service(off, pods, nodes, [update], config, topology=topology).events == []
