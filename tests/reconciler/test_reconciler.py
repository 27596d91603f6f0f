"""Upstream reconciler_test.go, ported case by case (same inputs, same expected outcomes).

Each test is named after its upstream counterpart; table cases are parametrised with the
upstream case names as ids. The fake clientset is ``harness.FakeClient``; metrics are read
from ``harness.Harness.expect_metrics``. Every ``Harness.reconcile`` also checks that no input
was mutated (upstream's cacheMutationCheck).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from endpointslice_operator.reconciler import format_trigger_time, plan_service
from endpointslice_operator.reconciler.slices import Owner, new_slice, placeholder_equal

from .harness import (
    CONTROLLER_NAME,
    NODE_1,
    Harness,
    Json,
    new_empty_endpoint_slice,
    new_pod,
    new_service_and_endpoint_meta,
    pod_to_endpoint,
    slice_lengths,
    verbs,
)

NS = "test"


def _pods(count: int, start: int = 0) -> list[Json]:
    return [new_pod(i, NS, i % 3 != 0, 1, False) for i in range(start, count)]


def test_reconcile_empty() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness()
    h.reconcile(svc, [], [])
    assert verbs(h.client.actions) == ["create"]
    slices = h.client.list()
    assert len(slices) == 1
    assert slices[0]["metadata"]["name"].startswith("foo")
    assert slices[0]["metadata"]["labels"]["kubernetes.io/service-name"] == "foo"
    assert slices[0]["ports"] == []
    assert slices[0]["endpoints"] == []
    h.expect_tracked_generation(slices[0], 1)
    h.expect_metrics(
        desired_slices=1,
        actual_slices=1,
        desired_endpoints=0,
        added_per_sync=0,
        num_created=1,
        slices_changed_per_sync=1,
    )


def _endpoint(address: str) -> Json:
    return {
        "addresses": [address],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": NS, "name": "pod1"},
        "nodeName": "node-1",
        "zone": "us-central1-a",
    }


def _reconcile_1_pod_cases() -> list[Any]:
    def svc(**spec: Any) -> Json:
        service, _ = new_service_and_endpoint_meta("foo", NS)
        service["spec"].update(spec)
        return service

    managed = {"endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME}
    named = {**managed, "kubernetes.io/service-name": "foo"}
    headless = {**named, "service.kubernetes.io/headless": ""}
    v4 = {"IPv4": [_endpoint("1.2.3.4")]}
    v6 = {"IPv6": [_endpoint("1234::5678:0:0:9abc:def0")]}
    labelled = svc()
    labelled["metadata"]["labels"] = {"foo": "bar"}
    bad_labels = svc()
    bad_labels["metadata"]["labels"] = {
        "kubernetes.io/service-name": "bad",
        "endpointslice.kubernetes.io/managed-by": "actor",
        "service.kubernetes.io/headless": "invalid",
    }
    no_family = svc(clusterIP="10.0.0.10")
    del no_family["spec"]["ipFamilies"]
    return [
        pytest.param(no_family, named, v4, id="no-family-service"),
        pytest.param(svc(), headless, v4, id="ipv4"),
        pytest.param(svc(clusterIP="1.1.1.1"), named, v4, id="ipv4-clusterip"),
        pytest.param(labelled, {**headless, "foo": "bar"}, v4, id="ipv4-labels"),
        pytest.param(bad_labels, headless, v4, id="ipv4-bad-labels"),
        pytest.param(svc(ipFamilies=["IPv6"]), headless, v6, id="ipv6"),
        pytest.param(
            svc(ipFamilies=["IPv6"], clusterIP="1234::5678:0000:0000:9abc:def1"),
            named,
            v6,
            id="ipv6-clusterip",
        ),
        pytest.param(
            svc(
                ipFamilies=["IPv4", "IPv6"],
                clusterIP="10.0.0.10",
                clusterIPs=["10.0.0.10", "2000::1"],
            ),
            named,
            {**v4, **v6},
            id="dualstack-service",
        ),
    ]


@pytest.mark.parametrize(("service", "labels", "per_type"), _reconcile_1_pod_cases())
def test_reconcile_1_pod(service: Json, labels: Json, per_type: dict[str, list[Json]]) -> None:
    pod1 = new_pod(1, NS, True, 1, False)
    pod1["status"]["podIPs"] = [{"ip": "1.2.3.4"}, {"ip": "1234::5678:0000:0000:9abc:def0"}]
    pod1["spec"]["hostname"] = "example-hostname"
    node1 = {
        "metadata": {
            "name": "node-1",
            "labels": {
                "topology.kubernetes.io/zone": "us-central1-a",
                "topology.kubernetes.io/region": "us-central1",
            },
        }
    }
    trigger_time = datetime.now(UTC)
    h = Harness(nodes=[node1])
    h.reconcile(service, [pod1], [], trigger_time)

    assert len(h.client.actions) == len(per_type)
    slices = h.client.list()
    assert len(slices) == len(per_type)
    for slice_ in slices:
        assert slice_["metadata"]["name"].startswith("foo")
        assert slice_["metadata"]["labels"] == labels
        annotations = slice_["metadata"]["annotations"]
        assert annotations["endpoints.kubernetes.io/last-change-trigger-time"] == (
            format_trigger_time(trigger_time)
        )
        assert slice_["endpoints"] == per_type[slice_["addressType"]]
        h.expect_tracked_generation(slice_, 1)
    families = service["spec"].get("ipFamilies") or ["IPv4"]
    # Upstream's metrics cache keeps only the last address type of a dual-stack Service, so
    # upstream expects 1 desired/actual slice and 1 endpoint here; we count every address
    # type (the dual-stack case thus has 2 of each).
    h.expect_metrics(
        desired_slices=len(per_type),
        actual_slices=len(per_type),
        desired_endpoints=len(per_type),
        added_per_sync=len(per_type),
        num_created=len(per_type),
        slices_changed_per_sync=len(families),
    )


def _placeholder(service: Json) -> Json:
    labels = {
        "kubernetes.io/service-name": "foo",
        "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME,
        "service.kubernetes.io/headless": "",
    }
    return new_slice(Owner.of(service), "IPv4", (), labels, [])


def _reconcile_1_endpoint_slice_cases() -> list[Any]:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    empty = new_empty_endpoint_slice(1, NS, meta, svc)
    empty["metadata"]["labels"] = {"bar": "baz"}
    same = _placeholder(svc)
    same["metadata"]["name"] = "foo-placeholder"
    common = {"desired_slices": 1, "actual_slices": 1, "desired_endpoints": 0, "added_per_sync": 0}
    return [
        pytest.param(
            None,
            True,
            {**common, "num_created": 1, "slices_changed_per_sync": 1},
            id="No existing placeholder",
        ),
        pytest.param(same, False, common, id="Existing placeholder that's the same"),
        pytest.param(
            empty,
            True,
            {**common, "num_updated": 1, "slices_changed_per_sync": 1},
            id="Existing placeholder that's different",
        ),
    ]


@pytest.mark.parametrize(
    ("existing", "want_update", "want_metrics"), _reconcile_1_endpoint_slice_cases()
)
def test_reconcile_1_endpoint_slice(
    existing: Json | None, want_update: bool, want_metrics: dict[str, Any]
) -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness()
    existing_slices = []
    if existing is not None:
        h.create_existing([existing])
        existing_slices = h.client.list()
    before = len(h.client.actions)
    h.reconcile(svc, [], existing_slices)
    assert len(h.client.actions) == before + (1 if want_update else 0)
    slices = h.client.list()
    assert len(slices) == 1
    if not want_update:
        assert slices[0]["metadata"]["name"].startswith("foo")
        assert slices[0]["metadata"]["labels"]["kubernetes.io/service-name"] == "foo"
        assert slices[0]["ports"] == []
        assert slices[0]["endpoints"] == []
    h.expect_metrics(**want_metrics)


@pytest.mark.parametrize(
    ("x", "y", "want"),
    [
        pytest.param({}, {}, True, id="Both are empty and non-nil"),
        pytest.param(
            {"metadata": {"name": "foo"}},
            {"metadata": {"name": "bar"}},
            True,
            id="Only ObjectMeta.Name has diff",
        ),
        pytest.param(
            {"metadata": {"labels": {"foo": "true"}}},
            {"metadata": {"labels": {"bar": "true"}}},
            False,
            id="Only ObjectMeta.Labels has diff",
        ),
        pytest.param(
            {"metadata": {"creationTimestamp": "1970-01-01T00:00:01Z"}},
            {"metadata": {"creationTimestamp": "1970-01-01T00:00:02Z"}},
            True,
            id="Creation time is different",
        ),
        pytest.param(
            {"addressType": "IPv4"},
            {"addressType": "IPv6"},
            False,
            id="Different except for ObjectMeta",
        ),
    ],
)
def test_place_holder_slice_compare(x: Json, y: Json, want: bool) -> None:
    # Upstream's nil-pointer cases ("Both nil", "X is nil", "Y is nil") have no JSON analogue.
    assert placeholder_equal(x, y) is want


def test_reconcile_1_endpoint_slice_publish_not_ready_addresses() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    svc["spec"]["publishNotReadyAddresses"] = True
    h = Harness()
    h.reconcile(svc, _pods(50), [])
    assert verbs(h.client.actions) == ["create"]
    slices = h.client.list()
    for slice_ in slices:
        assert all(ep["conditions"]["ready"] for ep in slice_["endpoints"])
    assert slice_lengths(slices) == [50]


def test_reconcile_many_pods() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness()
    h.reconcile(svc, _pods(250), [])
    assert verbs(h.client.actions) == ["create"] * 3
    assert slice_lengths(h.client.list()) == [50, 100, 100]
    h.expect_metrics(
        desired_slices=3,
        actual_slices=3,
        desired_endpoints=250,
        added_per_sync=250,
        num_created=3,
        slices_changed_per_sync=3,
    )


def _preexisting(svc: Json, meta: Any, pods: list[Json]) -> list[Json]:
    slice1 = new_empty_endpoint_slice(1, NS, meta, svc)
    slice1["endpoints"] = [pod_to_endpoint(pods[i], svc) for i in range(1, len(pods) - 4, 4)]
    slice2 = new_empty_endpoint_slice(2, NS, meta, svc)
    slice2["endpoints"] = [pod_to_endpoint(pods[i], svc) for i in range(3, len(pods) - 4, 4)]
    return [slice1, slice2]


def test_reconcile_endpoint_slices_some_preexisting() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(250)
    existing = _preexisting(svc, meta, pods)
    h = Harness()
    h.create_existing(existing)
    before = len(h.client.actions)
    h.reconcile(svc, pods, existing)
    assert verbs(h.client.actions[before:]) == ["create", "update"]
    assert slice_lengths(h.client.list()) == [61, 89, 100]
    h.expect_metrics(
        desired_slices=3,
        actual_slices=3,
        desired_endpoints=250,
        added_per_sync=127,
        num_created=1,
        num_updated=1,
        slices_changed_per_sync=2,
    )


def test_reconcile_endpoint_slices_some_preexisting_worse_allocation() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(300)
    existing = _preexisting(svc, meta, pods)
    h = Harness()
    h.create_existing(existing)
    before = len(h.client.actions)
    h.reconcile(svc, pods, existing)
    assert verbs(h.client.actions[before:]) == ["create", "create"]
    assert slice_lengths(h.client.list()) == [52, 74, 74, 100]
    h.expect_metrics(
        desired_slices=3,
        actual_slices=4,
        desired_endpoints=300,
        added_per_sync=152,
        num_created=2,
        slices_changed_per_sync=2,
    )


def test_reconcile_endpoint_slices_updating() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(250)
    h = Harness()
    h.reconcile(svc, pods, [])
    assert len(h.client.actions) == 3
    slices = h.client.list()
    assert slice_lengths(slices) == [50, 100, 100]

    svc["spec"]["ports"][0]["targetPort"] = 81
    h.reconcile(svc, pods, slices)
    assert verbs(h.client.actions[3:]) == ["update"] * 3
    assert slice_lengths(h.client.list()) == [50, 100, 100]


def test_reconcile_endpoint_slices_services_labels_updating() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(250)
    h = Harness()
    h.reconcile(svc, pods, [])
    slices = h.client.list()
    assert slice_lengths(slices) == [50, 100, 100]

    svc["metadata"]["labels"] = {"foo": "bar"}
    h.reconcile(svc, pods, slices)
    assert verbs(h.client.actions[3:]) == ["update"] * 3
    new_slices = h.client.list()
    assert slice_lengths(new_slices) == [50, 100, 100]
    assert all(s["metadata"]["labels"]["foo"] == "bar" for s in new_slices)


def test_reconcile_endpoint_slices_services_reserved_labels() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(250)
    h = Harness()
    h.reconcile(svc, pods, [])
    slices = h.client.list()
    svc["metadata"]["labels"] = {
        "kubernetes.io/service-name": "bad",
        "endpointslice.kubernetes.io/managed-by": "actor",
        "service.kubernetes.io/headless": "invalid",
    }
    h.reconcile(svc, pods, slices)
    assert len(h.client.actions) == 3
    assert slice_lengths(h.client.list()) == [50, 100, 100]


def test_reconcile_endpoint_slices_recycling() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(300)
    existing: list[Json] = []
    for i, pod in enumerate(pods):
        if i % 30 == 0:
            existing.append(new_empty_endpoint_slice(i // 30, NS, meta, svc))
        existing[i // 30]["endpoints"].append(pod_to_endpoint(pod, svc))
    h = Harness()
    h.create_existing(existing)
    before = len(h.client.actions)
    h.reconcile(svc, pods, existing)
    assert len(h.client.actions) == before

    svc["spec"]["ports"][0]["targetPort"] = 81
    h.reconcile(svc, pods, existing)
    assert len(h.client.actions) == before + 10
    assert slice_lengths(h.client.list()) == [100, 100, 100]
    h.expect_metrics(
        desired_slices=3,
        actual_slices=3,
        desired_endpoints=300,
        added_per_sync=300,
        num_updated=3,
        num_deleted=7,
        slices_changed_per_sync=10,
    )


def test_reconcile_endpoint_slices_update_packing() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    pods: list[Json] = []
    slice1 = new_empty_endpoint_slice(1, NS, meta, svc)
    for i in range(80):
        pod = new_pod(i, NS, True, 1, False)
        slice1["endpoints"].append(pod_to_endpoint(pod, svc))
        pods.append(pod)
    slice2 = new_empty_endpoint_slice(2, NS, meta, svc)
    for i in range(100, 120):
        pod = new_pod(i, NS, True, 1, False)
        slice2["endpoints"].append(pod_to_endpoint(pod, svc))
        pods.append(pod)
    existing = [slice1, slice2]
    h = Harness()
    h.create_existing(existing)
    for i, pod in enumerate(pods):
        if i % 10 == 0:
            pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pods.extend(new_pod(i, NS, True, 1, False) for i in range(200, 215))

    h.reconcile(svc, pods, existing)
    assert verbs(h.client.actions[-2:]) == ["update", "update"]
    h.expect_metrics(
        desired_slices=2,
        actual_slices=2,
        desired_endpoints=115,
        added_per_sync=15,
        num_updated=2,
        slices_changed_per_sync=2,
    )
    assert slice_lengths(h.client.list()) == [20, 95]


def test_reconcile_endpoint_slices_update_packing_every_updated_slice() -> None:
    """Not an upstream case, upstream's behaviour in the same form (step 3 of
    reconcileByPortMapping fills every slice to update, fullest first, before step 4 creates):
    two slices of 3 (max 3), one endpoint gone from each, 2 pods added: 2 updates, 0 creates."""
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    pods = [new_pod(i, NS, True, 1, False) for i in range(6)]
    existing = []
    for n in range(2):
        slice_ = new_empty_endpoint_slice(n, NS, meta, svc)
        slice_["endpoints"] = [pod_to_endpoint(pod, svc) for pod in pods[3 * n : 3 * n + 3]]
        existing.append(slice_)
    h = Harness(max_endpoints_per_slice=3)
    h.create_existing(existing)
    pods = [pods[1], pods[2], pods[4], pods[5]]  # pod0 and pod3 are gone
    pods.extend(new_pod(i, NS, True, 1, False) for i in range(6, 8))

    h.reconcile(svc, pods, existing)
    assert verbs(h.client.actions[-2:]) == ["update", "update"]
    h.expect_metrics(
        desired_slices=2,
        actual_slices=2,
        desired_endpoints=6,
        added_per_sync=2,
        removed_per_sync=2,
        num_updated=2,
        slices_changed_per_sync=2,
    )
    assert slice_lengths(h.client.list()) == [3, 3]


def test_reconcile_endpoint_slices_replace_deprecated() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    meta.address_type = "IP"
    plain_service: Json = {"spec": {}}
    pods: list[Json] = []
    slice1 = new_empty_endpoint_slice(1, NS, meta, svc)
    for i in range(80):
        pod = new_pod(i, NS, True, 1, False)
        slice1["endpoints"].append(pod_to_endpoint(pod, plain_service))
        pods.append(pod)
    slice2 = new_empty_endpoint_slice(2, NS, meta, svc)
    for i in range(100, 150):
        pod = new_pod(i, NS, True, 1, False)
        slice2["endpoints"].append(pod_to_endpoint(pod, plain_service))
        pods.append(pod)
    existing = [slice1, slice2]
    h = Harness()
    h.create_existing(existing)
    h.reconcile(svc, pods, existing)
    assert verbs(h.client.actions[-2:]) == ["delete", "delete"]
    slices = h.client.list()
    assert slice_lengths(slices) == [30, 100]
    assert all(s["addressType"] == "IPv4" for s in slices)


@pytest.mark.parametrize(
    ("owned_by_service", "expect_changes"),
    [
        pytest.param(True, False, id="slice owned by Service"),
        pytest.param(False, True, id="slice owned by other Service UID"),
    ],
)
def test_reconcile_endpoint_slices_recreation(owned_by_service: bool, expect_changes: bool) -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    slice_ = new_empty_endpoint_slice(1, NS, meta, svc)
    pod = new_pod(1, NS, True, 1, False)
    slice_["endpoints"].append(pod_to_endpoint(pod, {"spec": {}}))
    if not owned_by_service:
        slice_["metadata"]["ownerReferences"][0]["uid"] = "different"
    h = Harness()
    h.create_existing([slice_])
    before = len(h.client.actions)
    h.reconcile(svc, [pod], [slice_])
    if expect_changes:
        assert verbs(h.client.actions[before:]) == ["create", "delete"]
        assert len(h.client.list()) == 1
    else:
        assert len(h.client.actions) == before


def test_reconcile_endpoint_slices_named_ports() -> None:
    svc: Json = {
        "metadata": {"name": "named-port-example", "namespace": NS},
        "spec": {
            "ports": [{"targetPort": "http", "protocol": "TCP"}],
            "selector": {"foo": "bar"},
            "ipFamilies": ["IPv4"],
        },
    }
    pods = []
    for i in range(300):
        pod = new_pod(i, NS, i % 3 != 0, 1, False)
        pod["spec"]["containers"][0]["ports"] = [
            {"name": "http", "containerPort": 8080 + i % 5, "protocol": "TCP"}
        ]
        pods.append(pod)
    h = Harness()
    h.reconcile(svc, pods, [])
    assert verbs(h.client.actions) == ["create"] * 5
    h.expect_metrics(
        desired_slices=5,
        actual_slices=5,
        desired_endpoints=300,
        added_per_sync=300,
        num_created=5,
        slices_changed_per_sync=5,
    )
    slices = h.client.list()
    assert slice_lengths(slices) == [60] * 5
    assert sorted((s["addressType"], s["ports"][0]["port"]) for s in slices) == [
        ("IPv4", 8080 + i) for i in range(5)
    ]
    for s in slices:
        assert s["ports"] == [{"name": "", "port": s["ports"][0]["port"], "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("max_per_slice", "lengths"),
    [
        pytest.param(50, [50, 50, 50, 50, 50], id="maxEndpointsPerSlice: 50"),
        pytest.param(80, [80, 80, 80, 10], id="maxEndpointsPerSlice: 80"),
        pytest.param(150, [150, 100], id="maxEndpointsPerSlice: 150"),
        pytest.param(250, [250], id="maxEndpointsPerSlice: 250"),
        pytest.param(500, [250], id="maxEndpointsPerSlice: 500"),
    ],
)
def test_reconcile_max_endpoints_per_slice(max_per_slice: int, lengths: list[int]) -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    h = Harness(max_endpoints_per_slice=max_per_slice)
    h.reconcile(svc, _pods(250), [])
    assert slice_lengths(h.client.list()) == sorted(lengths)
    h.expect_metrics(
        desired_slices=len(lengths),
        actual_slices=len(lengths),
        desired_endpoints=250,
        added_per_sync=250,
        num_created=len(lengths),
        slices_changed_per_sync=len(lengths),
    )


def test_reconcile_endpoint_slices_metrics() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    pods = [new_pod(i, NS, True, 1, False) for i in range(20)]
    h = Harness()
    h.reconcile(svc, pods, [])
    assert verbs(h.client.actions) == ["create"]
    h.expect_metrics(
        desired_slices=1,
        actual_slices=1,
        desired_endpoints=20,
        added_per_sync=20,
        num_created=1,
        slices_changed_per_sync=1,
    )
    h.reconcile(svc, pods[:10], h.client.list())
    h.expect_metrics(
        desired_slices=1,
        actual_slices=1,
        desired_endpoints=10,
        added_per_sync=20,
        removed_per_sync=10,
        num_created=1,
        num_updated=1,
        slices_changed_per_sync=2,
    )


def test_reconcile_endpoint_slices_metrics_endpoints_added_per_sync_collect_and_compare() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    keep_pod = new_pod(1, NS, True, 1, False)
    new_desired_pod = new_pod(2, NS, True, 1, False)
    existing = new_empty_endpoint_slice(1, NS, meta, svc)
    existing["endpoints"] = [pod_to_endpoint(keep_pod, svc)]
    h = Harness()
    created = h.client.create(existing)
    plan = h.reconcile(svc, [keep_pod, new_desired_pod], [created])
    # One observation (one address type) of value 1.
    assert [m.added for m in plan.metrics.values()] == [1]


def test_reconcile_endpoint_slices_metrics_endpoints_removed_per_sync_collect_and_compare() -> None:
    svc, meta = new_service_and_endpoint_meta("foo", NS)
    stale_pod = new_pod(0, NS, True, 1, False)
    keep_pod = new_pod(1, NS, True, 1, False)
    existing = new_empty_endpoint_slice(1, NS, meta, svc)
    existing["endpoints"] = [pod_to_endpoint(stale_pod, svc), pod_to_endpoint(keep_pod, svc)]
    h = Harness()
    created = h.client.create(existing)
    plan = h.reconcile(svc, [keep_pod], [created])
    assert [m.removed for m in plan.metrics.values()] == [1]


def test_reconcile_endpoint_slices_metrics_gauge_updates() -> None:
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    svc["spec"]["trafficDistribution"] = "PreferClose"
    h = Harness()
    pods = [new_pod(1, NS, True, 1, False), new_pod(2, NS, True, 1, False)]
    h.reconcile(svc, pods, [], datetime(1970, 1, 1, tzinfo=UTC))
    assert h.metrics.desired_slices == 1
    assert h.metrics.desired_endpoints == 2
    assert h.metrics.actual_slices == 1
    assert h.metrics.services_by_traffic_distribution() == {"PreferClose": 1}


def test_plan_service_matches_reconcile_helper() -> None:
    """``plan_service`` is the same pipeline as the explicit desired + plan calls."""
    svc, _ = new_service_and_endpoint_meta("foo", NS)
    pods = _pods(120)
    h = Harness()
    moment = datetime(2026, 1, 2, 3, 4, 5, 123400, tzinfo=UTC)
    explicit = h.reconcile(svc, pods, [], moment)
    config = h.config.model_copy(update={"topology_hints": False})
    one_call = plan_service(svc, pods, [copy.deepcopy(NODE_1)], [], config, trigger_time=moment)
    assert one_call.creates == explicit.creates


_FINALIZE_CASES = [
    pytest.param(
        False, True, False, True, True, True, id="Attempt create and update, nil deletion timestamp"
    ),
    pytest.param(
        True, True, False, False, True, True, id="Attempt create and update, deletion timestamp set"
    ),
    pytest.param(
        False,
        True,
        True,
        False,
        True,
        True,
        id="Attempt create, update, and delete, nil deletion timestamp, recycling in action",
    ),
    pytest.param(
        True,
        True,
        True,
        False,
        True,
        True,
        id="Attempt create, update, and delete, deletion timestamp set, recycling in action",
    ),
    pytest.param(
        True, False, True, False, True, False, id="Attempt update delete, deletion timestamp set"
    ),
]


@pytest.mark.parametrize(
    (
        "deleting",
        "attempt_create",
        "attempt_delete",
        "expect_created",
        "expect_updated",
        "expect_deleted",
    ),
    _FINALIZE_CASES,
)
def test_reconciler_finalize_svc_deletion_timestamp(
    deleting: bool,
    attempt_create: bool,
    attempt_delete: bool,
    expect_created: bool,
    expect_updated: bool,
    expect_deleted: bool,
) -> None:
    from endpointslice_operator.reconciler.plan import Plan
    from endpointslice_operator.reconciler.slices import SliceParseCache

    svc, meta = new_service_and_endpoint_meta("foo", NS)
    if deleting:
        svc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    def named(name: str) -> Json:
        return {
            "metadata": {"name": name, "namespace": NS, "ownerReferences": [_owner(svc)]},
            "addressType": meta.address_type,
            "ports": copy.deepcopy(meta.ports),
        }

    h = Harness()
    to_update = h.client.create(named("to-update"))
    to_update["endpoints"] = [{"addresses": ["10.2.3.4"]}]
    to_delete = h.client.create(named("to-delete"))
    creates = [named("to-create")] if attempt_create else []
    deletes = [SliceParseCache().view(to_delete)] if attempt_delete else []

    plan = Plan(service_key=f"{NS}/foo")
    h.reconciler._finalize(
        plan, Owner.of(svc), "IPv4", creates, [copy.deepcopy(to_update)], deletes, "now"
    )
    h.apply(plan)
    names = {s["metadata"]["name"]: s for s in h.client.list()}
    assert ("to-create" in names) is expect_created
    assert ("to-update" in names) is expect_updated
    assert ("to-delete" in names) is expect_deleted
    assert len(names["to-update"]["endpoints"]) == 1


def _owner(service: Json) -> Json:
    from .harness import owner_ref

    return owner_ref(service)


def _missing_node_cases() -> list[Any]:
    both = "both"
    return [
        pytest.param(
            False,
            ["node-0"],
            None,
            {
                "desired_endpoints": 1,
                "added_per_sync": 1,
                "num_created": 1,
                "slices_changed_per_sync": 1,
            },
            True,
            id="Create and publishNotReady false",
        ),
        pytest.param(
            True,
            ["node-0"],
            None,
            {
                "desired_endpoints": 2,
                "added_per_sync": 2,
                "num_created": 1,
                "slices_changed_per_sync": 1,
            },
            False,
            id="Create and publishNotReady true",
        ),
        pytest.param(
            False,
            ["node-0"],
            both,
            {
                "desired_endpoints": 1,
                "added_per_sync": 0,
                "removed_per_sync": 1,
                "num_updated": 1,
                "slices_changed_per_sync": 1,
            },
            True,
            id="Update and publishNotReady false",
        ),
        pytest.param(
            True,
            [],
            both,
            {"desired_endpoints": 2, "added_per_sync": 0},
            False,
            id="Update and publishNotReady true and all nodes missing",
        ),
        pytest.param(
            True,
            ["node-0"],
            both,
            {"desired_endpoints": 2, "added_per_sync": 0},
            False,
            id="Update and publishNotReady true",
        ),
        pytest.param(
            False,
            [],
            both,
            {
                "desired_endpoints": 0,
                "added_per_sync": 0,
                "removed_per_sync": 2,
                "num_updated": 1,
                "slices_changed_per_sync": 1,
            },
            True,
            id="Update if publishNotReady false and no nodes are present",
        ),
    ]


@pytest.mark.parametrize(
    ("publish_not_ready", "existing_nodes", "existing_slice", "metrics", "expect_error"),
    _missing_node_cases(),
)
def test_reconciler_pod_missing_node(
    publish_not_ready: bool,
    existing_nodes: list[str],
    existing_slice: str | None,
    metrics: dict[str, Any],
    expect_error: bool,
) -> None:
    pods = [new_pod(0, NS, True, 1, False), new_pod(1, NS, True, 1, False)]
    pods[0]["spec"]["nodeName"] = "node-0"
    service, meta = new_service_and_endpoint_meta("foo", NS)
    svc = copy.deepcopy(service)
    svc["spec"]["publishNotReadyAddresses"] = publish_not_ready
    h = Harness(nodes=[{"metadata": {"name": name}} for name in existing_nodes])
    existing = []
    if existing_slice is not None:
        slice_ = new_empty_endpoint_slice(1, NS, meta, service)
        slice_["endpoints"] = [pod_to_endpoint(pods[0], service), pod_to_endpoint(pods[1], service)]
        h.create_existing([slice_])
        existing = [slice_]
    plan = h.reconcile(svc, pods, existing, expect_errors=True)
    assert bool(plan.errors) is expect_error
    if expect_error:
        assert any("Node node-1 Not Found" in e for e in plan.errors)
    assert len(h.client.list()) == 1
    h.expect_metrics(desired_slices=1, actual_slices=1, **metrics)


def _zone_node(name: str, zone: str) -> Json:
    return {
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "100m"},
        },
    }


def _topology_fixture() -> tuple[
    Json, list[Json], list[Json], dict[str, Json], dict[str, list[Json]]
]:
    svc, meta = new_service_and_endpoint_meta("foo", "testing")
    pods: list[Json] = []
    nodes: list[Json] = []
    for i, zone in enumerate(["zone-a", "zone-b", "zone-c"]):
        for j in range(10):
            node = _zone_node(f"node-{zone}-{j}", zone)
            nodes.append(node)
            pod = new_pod(i * 100 + j, "testing", True, 1, False)
            pod["spec"]["nodeName"] = node["metadata"]["name"]
            pods.append(pod)
    zone_of = {
        n["metadata"]["name"]: n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes
    }
    slice_pods = {
        "zone-a-b": [pods[7], pods[8], pods[16], pods[17], pods[18]],
        "zone-a-c": [pods[5], pods[6], pods[25], pods[26]],
        "zone-c": [pods[27], pods[28], pods[29]],
    }
    slices = {}
    for name, members in slice_pods.items():
        slices[name] = {
            "metadata": {
                "name": name,
                "namespace": "testing",
                "ownerReferences": [_owner(svc)],
                "labels": {
                    "endpointslice.kubernetes.io/managed-by": CONTROLLER_NAME,
                    "kubernetes.io/service-name": "foo",
                },
            },
            "addressType": meta.address_type,
            "ports": copy.deepcopy(meta.ports),
            "endpoints": [
                pod_to_endpoint(p, svc, zone=zone_of[p["spec"]["nodeName"]]) for p in members
            ],
        }
    return svc, pods, nodes, slices, slice_pods


_TOPOLOGY_CASES = [
    pytest.param(
        False,
        "auto",
        ["zone-c"],
        None,
        0,
        {"desired_endpoints": 3},
        1,
        id="no change, topologyCache disabled, annotation == auto",
    ),
    pytest.param(
        True,
        "auto",
        ["zone-c"],
        {"zone-a": 1, "zone-b": 1, "zone-c": 1},
        2,
        {"desired_endpoints": 3, "num_updated": 1, "slices_changed_per_sync_topology": 1},
        1,
        id="enabling topologyCache, hintsAnnotation == auto",
    ),
    pytest.param(
        True,
        "auto",
        ["zone-a-c"],
        None,
        0,
        {"desired_endpoints": 4},
        1,
        id="topology enabled,  hintsAnnotation==auto, ratio beyond threshold",
    ),
    pytest.param(
        True,
        "Auto",
        ["zone-a-c", "zone-a-b"],
        {"zone-a": 3, "zone-b": 3, "zone-c": 3},
        1,
        {"desired_endpoints": 9, "num_updated": 2, "slices_changed_per_sync_topology": 2},
        2,
        id="topology enabled, hintsAnnotation==Auto, more slices and endpoints",
    ),
    pytest.param(
        True,
        "disabled",
        ["zone-a-c", "zone-a-b"],
        None,
        0,
        {"desired_endpoints": 9},
        2,
        id="topology enabled, hintsAnnotation==disabled, more slices and endpoints",
    ),
]


@pytest.mark.parametrize(
    (
        "cache_enabled",
        "annotation",
        "slice_names",
        "expected_hints",
        "cross_zone",
        "metrics",
        "actual_slices",
    ),
    _TOPOLOGY_CASES,
)
def test_reconcile_topology(
    cache_enabled: bool,
    annotation: str,
    slice_names: list[str],
    expected_hints: dict[str, int] | None,
    cross_zone: int,
    metrics: dict[str, Any],
    actual_slices: int,
) -> None:
    from endpointslice_operator.reconciler import TopologyCache

    svc, _, nodes, slices, slice_pods = _topology_fixture()
    existing = [slices[n] for n in slice_names]
    pods = [p for n in slice_names for p in slice_pods[n]]
    topology = None
    if cache_enabled:
        topology = TopologyCache()
        topology.set_nodes(nodes)
    h = Harness(nodes=nodes, topology=topology)
    h.create_existing(existing)
    service = copy.deepcopy(svc)
    service["metadata"]["annotations"] = {"service.kubernetes.io/topology-aware-hints": annotation}
    h.reconcile(service, pods, existing)
    h.expect_metrics(
        desired_slices=1,
        actual_slices=actual_slices,
        added_per_sync=0,
        **metrics,
    )
    fetched = h.client.list()
    assert len(fetched) == actual_slices
    endpoints = [ep for s in fetched for ep in s["endpoints"]]
    if expected_hints is None:
        assert not any((ep.get("hints") or {}).get("forZones") for ep in endpoints)
        return
    got: dict[str, int] = {}
    crossing = 0
    for ep in endpoints:
        zones = ep["hints"]["forZones"]
        assert len(zones) == 1
        got[zones[0]["name"]] = got.get(zones[0]["name"], 0) + 1
        crossing += ep["zone"] != zones[0]["name"]
    assert got == expected_hints
    assert crossing == cross_zone


_TD_CASES = [
    pytest.param(
        False,
        "PreferClose",
        "Disabled",
        {"zone-a": 1, "zone-b": 3, "zone-c": 2},
        None,
        0,
        {"slices_changed_per_sync_traffic_dist": 1},
        {"PreferClose": 1},
        id="trafficDistribution=PreferClose, topologyAnnotation=Disabled",
    ),
    pytest.param(
        False,
        "PreferClose",
        "Auto",
        {"zone-a": 2, "zone-b": 2, "zone-c": 2},
        None,
        1,
        {"slices_changed_per_sync_topology": 1},
        None,
        id="trafficDistribution=PreferClose, topologyAnnotation=Auto",
    ),
    pytest.param(
        False,
        None,
        "",
        {"": 6},
        None,
        0,
        {"slices_changed_per_sync": 1},
        None,
        id="trafficDistribution=nil, topologyAnnotation=<empty>",
    ),
    pytest.param(
        True,
        "PreferSameNode",
        "Disabled",
        {"zone-a": 1, "zone-b": 3, "zone-c": 2},
        {"node-0": 1, "node-1": 3, "node-2": 2},
        0,
        {"slices_changed_per_sync_traffic_dist": 1},
        {"PreferSameNode": 1},
        id="trafficDistribution=PreferSameNode, PSTD enabled",
    ),
    pytest.param(
        False,
        "PreferSameZone",
        "Disabled",
        {"": 6},
        None,
        0,
        {"slices_changed_per_sync": 1},
        None,
        id="trafficDistribution=PreferSameZone, PSTD disabled",
    ),
]


@pytest.mark.parametrize(
    (
        "prefer_same",
        "traffic_distribution",
        "annotation",
        "by_zone",
        "by_node",
        "cross_zone",
        "metrics",
        "by_td",
    ),
    _TD_CASES,
)
def test_reconcile_traffic_distribution(
    prefer_same: bool,
    traffic_distribution: str | None,
    annotation: str,
    by_zone: dict[str, int],
    by_node: dict[str, int] | None,
    cross_zone: int,
    metrics: dict[str, Any],
    by_td: dict[str, int] | None,
) -> None:
    from endpointslice_operator.reconciler import TopologyCache

    nodes = [_zone_node(f"node-{i}", f"zone-{'abc'[i]}") for i in range(3)]
    pods = [new_pod(i, "ns1", True, 1, False) for i in range(6)]
    for pod, node in zip(pods, [0, 1, 1, 1, 2, 2], strict=True):
        pod["spec"]["nodeName"] = f"node-{node}"
    svc, _ = new_service_and_endpoint_meta("foo", "ns1")
    svc["spec"]["trafficDistribution"] = traffic_distribution
    svc["metadata"]["annotations"] = {"service.kubernetes.io/topology-aware-hints": annotation}
    topology = TopologyCache()
    topology.set_nodes(nodes)
    h = Harness(
        nodes=nodes,
        topology=topology,
        config_overrides={"prefer_same_traffic_distribution": prefer_same},
    )
    h.reconcile(svc, pods, [])
    got_zone: dict[str, int] = {}
    got_node: dict[str, int] = {}
    crossing = 0
    for slice_ in h.client.list():
        for ep in slice_["endpoints"]:
            hints = ep.get("hints") or {}
            zones = hints.get("forZones") or []
            zone_hint = zones[0]["name"] if len(zones) == 1 else ""
            got_zone[zone_hint] = got_zone.get(zone_hint, 0) + 1
            if zone_hint and ep["zone"] != zone_hint:
                crossing += 1
            for node in hints.get("forNodes") or []:
                got_node[node["name"]] = got_node.get(node["name"], 0) + 1
    assert got_zone == by_zone
    assert crossing == cross_zone
    if by_node is not None:
        assert got_node == by_node
    h.expect_metrics(
        desired_slices=1,
        actual_slices=1,
        desired_endpoints=6,
        added_per_sync=6,
        num_created=1,
        services_count_by_traffic_distribution=by_td,
        **metrics,
    )


def test_reconcile_headless_service_no_ports() -> None:
    svc: Json = {
        "metadata": {"name": "headless-no-ports", "namespace": NS, "uid": "test-uid"},
        "spec": {"clusterIP": "None", "selector": {"foo": "bar"}, "ipFamilies": ["IPv4"]},
    }
    pod = new_pod(1, NS, True, 1, False)
    h = Harness()
    h.reconcile(svc, [pod], [])
    assert verbs(h.client.actions) == ["create"]
    existing = []
    for slice_ in h.client.list():
        slice_["ports"] = None
        existing.append(slice_)
    assert len(existing) == 1
    plan = h.reconcile(svc, [pod], existing)
    assert plan.is_empty
    assert verbs(h.client.actions) == ["create"]
