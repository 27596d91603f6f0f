"""Mirroring: ports of upstream's ``pkg/controller/endpointslicemirroring`` ``reconciler_test.go``
(``TestReconcile``) and ``utils_test.go`` (``TestNewEndpointSlice``, ``TestAddressToEndpoint``),
through the same planner the operator uses."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_SKIP_MIRROR,
    LAST_CHANGE_TRIGGER_TIME,
    MIRRORING_CONTROLLER_NAME,
    ReconcilerConfig,
    desired_from_endpoints,
    mirrored_annotations,
    plan_mirroring,
    should_mirror,
)
from endpointslice_operator.reconciler.desired import DesiredEndpoints
from endpointslice_operator.reconciler.mirroring import MirroredEndpoints

CONFIG = ReconcilerConfig(controller_name=MIRRORING_CONTROLLER_NAME, max_endpoints_per_slice=1000)
NS = "default"


def endpoints(
    subsets: list[dict[str, Any]],
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "test-ep", "namespace": NS, "uid": "ep-uid"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata, "subsets": subsets}


def address(ip: str, hostname: str, node: str) -> dict[str, Any]:
    return {"ip": ip, "hostname": hostname, "nodeName": node}


HTTP_HTTPS = [
    {"name": "http", "port": 80, "protocol": "TCP"},
    {"name": "https", "port": 443, "protocol": "UDP"},
]
HTTP_HTTPS_3000 = [
    {"name": "http", "port": 3000, "protocol": "TCP"},
    {"name": "https", "port": 3001, "protocol": "UDP"},
]
TWO_SUBSETS = [
    {
        "ports": HTTP_HTTPS,
        "addresses": [
            address("10.0.0.1", "pod-1", "node-1"),
            address("10.0.0.2", "pod-2", "node-2"),
        ],
    },
    {
        "ports": HTTP_HTTPS_3000,
        "addresses": [
            address("10.0.1.1", "pod-11", "node-1"),
            address("10.0.1.2", "pod-12", "node-2"),
            address("10.0.1.3", "pod-13", "node-3"),
        ],
    },
]


def existing_slice(endpoints_: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "test-ep-1",
            "namespace": NS,
            "labels": {LABEL_SERVICE_NAME: "test-ep", LABEL_MANAGED_BY: MIRRORING_CONTROLLER_NAME},
        },
        "addressType": "IPv4",
        "ports": HTTP_HTTPS,
        "endpoints": endpoints_,
    }


def slice_count(plan: Any, existing: int) -> int:
    return existing + len(plan.creates) - len(plan.deletes)


@pytest.mark.parametrize(
    ("name", "subsets", "existing", "slices", "writes", "desired_endpoints", "added"),
    [
        ("Endpoints with no subsets", [], [], 0, 0, 0, 0),
        ("Endpoints with no addresses", [{"ports": HTTP_HTTPS[:1]}], [], 0, 0, 0, 0),
        (
            "Endpoints with 1 subset, port, and address",
            [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}],
            [],
            1,
            1,
            1,
            1,
        ),
        (
            "Endpoints with 1 subset, 2 ports, and 2 addresses",
            TWO_SUBSETS[:1],
            [],
            1,
            1,
            2,
            2,
        ),
        ("Endpoints with 2 subsets, multiple ports and addresses", TWO_SUBSETS, [], 2, 2, 5, 5),
        (
            "2 subsets, existing empty EndpointSlice",
            TWO_SUBSETS,
            [existing_slice([])],
            2,
            2,
            5,
            5,
        ),
        (
            "2 subsets, existing EndpointSlice with some addresses",
            TWO_SUBSETS,
            [
                existing_slice(
                    [
                        {"addresses": ["10.0.0.2"], "hostname": "pod-2"},
                        {"addresses": ["10.0.0.1", "10.0.0.3"], "hostname": "pod-1"},
                    ]
                )
            ],
            2,
            2,
            5,
            4,
        ),
        (
            "2 subsets, existing EndpointSlice identical to subset",
            TWO_SUBSETS,
            [
                existing_slice(
                    [
                        {
                            "addresses": ["10.0.0.1"],
                            "hostname": "pod-1",
                            "nodeName": "node-1",
                            "conditions": {"ready": True},
                        },
                        {
                            "addresses": ["10.0.0.2"],
                            "hostname": "pod-2",
                            "nodeName": "node-2",
                            "conditions": {"ready": True},
                        },
                    ]
                )
            ],
            2,
            1,
            5,
            3,
        ),
        (
            "2 subsets, multiple ports, and dual stack addresses",
            [
                {
                    "ports": HTTP_HTTPS,
                    "addresses": [
                        address("2001:db8:2222:3333:4444:5555:6666:7777", "pod-1", "node-1"),
                        address("10.0.0.2", "pod-2", "node-2"),
                    ],
                },
                {
                    "ports": HTTP_HTTPS_3000,
                    "addresses": [
                        address("10.0.1.1", "pod-11", "node-1"),
                        address("10.0.1.2", "pod-12", "node-2"),
                        address("2001:db8:3333:4444:5555:6666:7777:8888", "pod-13", "node-3"),
                    ],
                },
            ],
            [],
            4,
            4,
            5,
            5,
        ),
        (
            "2 subsets, multiple ports, some invalid addresses",
            [
                {
                    "ports": HTTP_HTTPS,
                    "addresses": [
                        address("2001:db8:1111:3333:4444:5555:6666:7777", "pod-1", "node-1"),
                        address("this-is-not-an-ip", "pod-2", "node-2"),
                    ],
                },
                {
                    "ports": HTTP_HTTPS_3000,
                    "addresses": [
                        address("this-is-also-not-an-ip", "pod-11", "node-1"),
                        address("2001:db8:4444:3333:4444:5555:6666:7777", "pod-12", "node-2"),
                        address("2001:db8:5555:3333:4444:5555:6666:7777", "pod-13", "node-3"),
                    ],
                },
            ],
            [],
            2,
            2,
            3,
            3,
        ),
    ],
)
def test_reconcile(
    name: str,
    subsets: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    slices: int,
    writes: int,
    desired_endpoints: int,
    added: int,
) -> None:
    """TestReconcile: slices after the sync, client writes, desired and added endpoints."""
    plan, mirrored = plan_mirroring(endpoints(subsets), existing, CONFIG)
    assert slice_count(plan, len(existing)) == slices, name
    assert plan.write_count == writes, name
    total = sum(mirrored.desired.endpoint_count(t) for t in ("IPv4", "IPv6"))
    assert total == desired_endpoints
    assert sum(m.added for m in plan.metrics.values()) == added


def test_reconcile_invalid_addresses_are_reported() -> None:
    subsets = [
        {
            "ports": HTTP_HTTPS,
            "addresses": [address("this-is-not-an-ip1", "pod-1", "node-1")],
            "notReadyAddresses": [address("this-is-not-an-ip2", "pod-2", "node-2")],
        }
    ]
    plan, mirrored = plan_mirroring(endpoints(subsets), [], CONFIG)
    assert plan.write_count == 0
    assert (mirrored.skipped, mirrored.invalid) == (2, 2)
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        (
            "Warning",
            "InvalidIPAddress",
            "Skipped 2 invalid IP addresses when mirroring to EndpointSlices",
        )
    ]


def test_reconcile_pending_deletion_creates_nothing() -> None:
    """ "Endpoints with 1 subset, port, and address, pending deletion": no creates."""
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    plan, _ = plan_mirroring(endpoints(subsets, deleting=True), [], CONFIG)
    assert plan.write_count == 0


def _many(count: int, prefix: str = "10.0") -> list[dict[str, Any]]:
    return [{"ip": f"{prefix}.{i // 256}.{i % 256}"} for i in range(count)]


@pytest.mark.parametrize(
    ("ready", "not_ready", "cap", "mirrored_count", "skipped"),
    [
        (500, 0, 1000, 500, 0),
        (1000, 0, 1000, 1000, 0),
        (1001, 0, 1000, 1000, 1),
        (600, 600, 1000, 1000, 200),
        (10, 10, 15, 15, 5),
    ],
)
def test_max_endpoints_per_subset(
    ready: int, not_ready: int, cap: int, mirrored_count: int, skipped: int
) -> None:
    """TestReconcile's "addresses over max" cases: ready addresses first, then not ready, up
    to the cap per subset, and the TooManyAddressesToMirror event."""
    subsets = [
        {
            "ports": HTTP_HTTPS[:1],
            "addresses": _many(ready, "10.0"),
            "notReadyAddresses": _many(not_ready, "10.9"),
        }
    ]
    mirrored = desired_from_endpoints(endpoints(subsets), max_endpoints_per_subset=cap)
    assert mirrored.desired.endpoint_count("IPv4") == mirrored_count
    assert mirrored.skipped == skipped
    group = next(iter(mirrored.desired.groups["IPv4"].values()))
    readiness = [ep.state[2] for ep in group.endpoints.values()]
    assert readiness == [True] * min(ready, cap) + [False] * (mirrored_count - min(ready, cap))
    reasons = [e.reason for e in mirrored.events]
    assert reasons == (["TooManyAddressesToMirror"] if skipped else [])
    if skipped:
        assert mirrored.events[0].message == (
            f"A max of {cap} addresses can be mirrored to EndpointSlices per Endpoints subset. "
            f"{skipped} addresses were skipped"
        )


def test_new_endpoint_slice_labels_annotations_owner() -> None:
    """TestNewEndpointSlice: labels copied (service-name and managed-by overwritten),
    annotations copied but the trigger time and last-applied configuration, a controller
    reference to the Endpoints, generateName ``<name>-``."""
    ep = endpoints(
        [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}],
        labels={"foo": "bar", LABEL_SERVICE_NAME: "wrong", LABEL_MANAGED_BY: "someone"},
        annotations={
            "foo2": "bar2",
            LAST_CHANGE_TRIGGER_TIME: "2024-01-01T00:00:00Z",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
    )
    plan, _ = plan_mirroring(ep, [], CONFIG)
    [created] = plan.creates
    assert created["metadata"] == {
        "generateName": "test-ep-",
        "namespace": NS,
        "labels": {
            "foo": "bar",
            LABEL_SERVICE_NAME: "test-ep",
            LABEL_MANAGED_BY: MIRRORING_CONTROLLER_NAME,
        },
        "annotations": {"foo2": "bar2"},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "name": "test-ep",
                "uid": "ep-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert created["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]


def test_skip_mirror_label_is_not_copied() -> None:
    """Deliberate difference: the label addressed to kube-controller-manager stays behind."""
    ep = endpoints(
        [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}],
        labels={"app": "x", LABEL_SKIP_MIRROR: "true"},
    )
    plan, _ = plan_mirroring(ep, [], CONFIG)
    assert LABEL_SKIP_MIRROR not in plan.creates[0]["metadata"]["labels"]
    # and an existing slice without it is not rewritten for it
    existing = dict(plan.creates[0])
    existing["metadata"] = {**existing["metadata"], "name": "test-ep-abc"}
    again, _ = plan_mirroring(ep, [existing], CONFIG)
    assert again.is_empty


def test_label_or_annotation_change_rewrites_the_slice() -> None:
    """Upstream compares labels (minus managed-by and service-name) and annotations."""
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    plan, _ = plan_mirroring(endpoints(subsets, labels={"a": "1"}), [], CONFIG)
    existing = dict(plan.creates[0])
    existing["metadata"] = {**existing["metadata"], "name": "test-ep-abc"}
    assert plan_mirroring(endpoints(subsets, labels={"a": "1"}), [existing], CONFIG)[0].is_empty
    relabelled, _ = plan_mirroring(endpoints(subsets, labels={"a": "2"}), [existing], CONFIG)
    assert [s["metadata"]["labels"]["a"] for s in relabelled.updates] == ["2"]
    annotated, _ = plan_mirroring(
        endpoints(subsets, labels={"a": "1"}, annotations={"n": "v"}), [existing], CONFIG
    )
    assert [s["metadata"]["annotations"] for s in annotated.updates] == [{"n": "v"}]


def test_a_resync_with_unchanged_annotations_writes_nothing() -> None:
    """The mirrored slice's annotations are compared with the Endpoints' (minus the trigger
    time): the same ones again are no change, whatever their order."""
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    annotations = {"n": "v", "m": "w"}
    plan, _ = plan_mirroring(endpoints(subsets, annotations=annotations), [], CONFIG)
    (created,) = plan.creates
    assert created["metadata"]["annotations"] == annotations
    existing = {**created, "metadata": {**created["metadata"], "name": "test-ep-abc"}}
    again, _ = plan_mirroring(
        endpoints(subsets, annotations={"m": "w", "n": "v"}), [existing], CONFIG
    )
    assert again.is_empty


def test_an_annotation_removed_from_the_endpoints_is_removed_from_the_slice() -> None:
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    plan, _ = plan_mirroring(endpoints(subsets, annotations={"n": "v", "m": "w"}), [], CONFIG)
    existing = {**plan.creates[0], "metadata": {**plan.creates[0]["metadata"], "name": "e-1"}}
    fewer, _ = plan_mirroring(endpoints(subsets, annotations={"n": "v"}), [existing], CONFIG)
    (update,) = fewer.updates
    assert update["metadata"]["name"] == "e-1"
    assert update["metadata"]["annotations"] == {"n": "v"}
    none, _ = plan_mirroring(endpoints(subsets), [existing], CONFIG)
    (update,) = none.updates
    assert "annotations" not in update["metadata"]
    assert fewer.creates == none.creates == [] and fewer.deletes == none.deletes == []


@pytest.mark.parametrize(
    ("given", "ready", "expected"),
    [
        (
            {
                "ip": "10.1.2.3",
                "hostname": "foo",
                "nodeName": "node-abc",
                "targetRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": "default",
                    "name": "foo",
                    "uid": "abc123",
                },
            },
            True,
            {
                "addresses": ["10.1.2.3"],
                "hostname": "foo",
                "nodeName": "node-abc",
                "conditions": {"ready": True},
                "targetRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "namespace": "default",
                    "name": "foo",
                    "uid": "abc123",
                },
            },
        ),
        (
            {"ip": "010.001.002.003"},
            False,
            {"addresses": ["10.1.2.3"], "conditions": {"ready": False}},
        ),
        (
            {"ip": "::ffff:10.1.2.3"},
            True,
            {"addresses": ["10.1.2.3"], "conditions": {"ready": True}},
        ),
    ],
)
def test_address_to_endpoint(given: dict[str, Any], ready: bool, expected: dict[str, Any]) -> None:
    """TestAddressToEndpoint: IP re-stringified, only the ready condition, fields copied."""
    key = "addresses" if ready else "notReadyAddresses"
    mirrored = desired_from_endpoints(endpoints([{key: [given], "ports": HTTP_HTTPS[:1]}]))
    [group] = [g for g in mirrored.desired.groups["IPv4"].values() if g.endpoints]
    [endpoint] = group.endpoints.values()
    assert endpoint.to_dict() == expected


def test_ipv6_address_type() -> None:
    mirrored = desired_from_endpoints(
        endpoints([{"addresses": [{"ip": "2001:DB8::1"}], "ports": HTTP_HTTPS[:1]}])
    )
    assert mirrored.desired.endpoint_count("IPv6") == 1
    [group] = [g for g in mirrored.desired.groups["IPv6"].values() if g.endpoints]
    assert [ep.addresses for ep in group.endpoints.values()] == [("2001:db8::1",)]


def test_ports_keep_empty_names() -> None:
    """``epPortsToEpsPorts``: name and protocol are always set on mirrored ports."""
    ep = endpoints(
        [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}]
    )
    plan, _ = plan_mirroring(ep, [], CONFIG)
    assert plan.creates[0]["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]


def test_subsets_are_repacked_first() -> None:
    """The Endpoints' subsets are canonicalised (RepackSubsets) before mirroring."""
    ep = endpoints(
        [
            {"addresses": [{"ip": "10.0.0.1"}], "ports": HTTP_HTTPS[:1]},
            {"addresses": [{"ip": "10.0.0.2"}], "ports": HTTP_HTTPS[:1]},
            {"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": HTTP_HTTPS[:1]},
        ]
    )
    plan, _ = plan_mirroring(ep, [], CONFIG)
    [created] = plan.creates
    assert sorted((e["addresses"][0], e["conditions"]["ready"]) for e in created["endpoints"]) == [
        ("10.0.0.1", False),
        ("10.0.0.2", True),
    ]


def test_emptied_group_is_deleted_without_placeholder() -> None:
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    plan, _ = plan_mirroring(endpoints(subsets), [], CONFIG)
    existing = dict(plan.creates[0])
    existing["metadata"] = {**existing["metadata"], "name": "test-ep-abc"}
    emptied, _ = plan_mirroring(endpoints([]), [existing], CONFIG)
    assert (emptied.creates, emptied.updates) == ([], [])
    assert [s["metadata"]["name"] for s in emptied.deletes] == ["test-ep-abc"]


def test_mirrored_annotations_and_should_mirror() -> None:
    ep = endpoints(
        [],
        labels={LABEL_SKIP_MIRROR: "true"},
        annotations={"a": "b", LAST_CHANGE_TRIGGER_TIME: "x"},
    )
    assert mirrored_annotations(ep) == {"a": "b"}
    assert should_mirror(ep)
    assert not should_mirror(ep, honour_skip_mirror=True)
    leader = endpoints([], annotations={"control-plane.alpha.kubernetes.io/leader": "{}"})
    assert not should_mirror(leader)


@pytest.mark.parametrize(
    ("count", "per_slice", "cap", "sizes"),
    [
        (250, 100, 1000, [250]),  # --max-endpoints-per-slice plays no part
        (1200, 100, 1000, [1000]),  # the per-subset cap bounds the one slice
        (40, 100, 15, [15]),
    ],
)
def test_one_slice_per_port_set_bounded_by_the_per_subset_cap(
    count: int, per_slice: int, cap: int, sizes: list[int]
) -> None:
    """Upstream's ``reconcileByPortMapping``: one slice per (address type, port set), with at
    most ``maxEndpointsPerSubset`` endpoints, whatever ``--max-endpoints-per-slice`` says."""
    config = CONFIG.model_copy(update={"max_endpoints_per_slice": per_slice})
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": _many(count)}]
    plan, _ = plan_mirroring(endpoints(subsets), [], config, max_endpoints_per_subset=cap)
    assert [len(s["endpoints"]) for s in plan.creates] == sizes


def test_further_existing_slices_of_a_port_set_are_folded_into_the_first() -> None:
    """Slices split by an earlier layout (100 a slice): the first is kept and takes every
    endpoint, the others are deleted, as upstream's reconciler does."""
    addresses = _many(250)
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": addresses}]
    existing = []
    for n, start in enumerate((0, 100, 200)):
        raw = existing_slice(
            [
                {"addresses": [a["ip"]], "conditions": {"ready": True}}
                for a in addresses[start : start + 100]
            ]
        )
        raw["metadata"]["name"] = f"test-ep-{n}"
        raw["ports"] = HTTP_HTTPS[:1]
        existing.append(raw)
    plan, _ = plan_mirroring(endpoints(subsets), existing, CONFIG.model_copy(
        update={"max_endpoints_per_slice": 100}))  # fmt: skip
    assert [s["metadata"]["name"] for s in plan.updates] == ["test-ep-0"]
    assert len(plan.updates[0]["endpoints"]) == 250
    assert sorted(s["metadata"]["name"] for s in plan.deletes) == ["test-ep-1", "test-ep-2"]
    assert plan.creates == []


def test_without_adopting_the_slice_the_endpoints_owns_is_the_one_kept() -> None:
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": _many(2)}]
    stray = existing_slice([{"addresses": ["10.0.0.0"], "conditions": {"ready": True}}])
    stray["metadata"]["name"], stray["ports"] = "stray", HTTP_HTTPS[:1]
    owned = existing_slice([{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}])
    owned["metadata"]["name"], owned["ports"] = "owned", HTTP_HTTPS[:1]
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Endpoints", "name": "test-ep", "uid": "ep-uid",
         "controller": True}
    ]  # fmt: skip
    plan, _ = plan_mirroring(endpoints(subsets), [stray, owned], CONFIG, adopt=False)
    assert [s["metadata"]["name"] for s in plan.updates] == ["owned"]
    assert [s["metadata"]["name"] for s in plan.deletes] == ["stray"]
    assert plan.creates == []


SOME_ADDRESSES = [
    {"addresses": ["10.0.0.2"], "hostname": "pod-2"},
    {"addresses": ["10.0.0.1", "10.0.0.3"], "hostname": "pod-1"},
]
IDENTICAL = [
    {"addresses": ["10.0.0.1"], "hostname": "pod-1", "nodeName": "node-1",
     "conditions": {"ready": True}},
    {"addresses": ["10.0.0.2"], "hostname": "pod-2", "nodeName": "node-2",
     "conditions": {"ready": True}},
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "existing", "counts"),
    [
        ("no existing slice", [], (5, 0, 0)),
        ("existing empty EndpointSlice", [existing_slice([])], (5, 0, 0)),
        ("existing EndpointSlice with some addresses", [existing_slice(SOME_ADDRESSES)], (4, 1, 1)),
        ("existing EndpointSlice identical to subset", [existing_slice(IDENTICAL)], (3, 0, 0)),
        # Ours: a stale endpoint first, junk, then the identical ones.
        (
            "stale endpoint and junk before the identical ones",
            [existing_slice([{"addresses": ["10.0.0.9"]}, "junk", *IDENTICAL])],  # type: ignore[list-item]
            (3, 0, 1),
        ),
        (
            "a slice of a port set the Endpoints no longer has",
            [{**existing_slice(IDENTICAL), "ports": [{"name": "old", "port": 1}]}],
            (5, 0, 2),
        ),
    ],
)
def test_reconcile_per_sync_counts(
    name: str, existing: list[dict[str, Any]], counts: tuple[int, int, int]
) -> None:
    """TestReconcile's addedPerSync, updatedPerSync and removedPerSync for TWO_SUBSETS."""
    _, mirrored = plan_mirroring(endpoints(TWO_SUBSETS), existing, CONFIG)
    assert (mirrored.added, mirrored.updated, mirrored.removed) == counts, name


def test_counts_of_desired_endpoints_alone_are_zero() -> None:
    mirrored = desired_from_endpoints(endpoints(TWO_SUBSETS))
    assert (mirrored.added, mirrored.updated, mirrored.removed) == (0, 0, 0)
    assert (mirrored.skipped, mirrored.invalid, mirrored.events) == (0, 0, [])
    empty = MirroredEndpoints(DesiredEndpoints.empty(("IPv4", "IPv6")))
    assert (empty.skipped, empty.invalid, empty.added, empty.updated, empty.removed) == (
        0,
        0,
        0,
        0,
        0,
    )
    with pytest.raises(AttributeError):  # slots: a misspelt count is an error, not a new field
        empty.removd = 1  # type: ignore[attr-defined]


def test_default_cap_is_a_thousand_addresses_per_subset() -> None:
    """TestReconcile's "1001 addresses" case, with the default maxEndpointsPerSubset."""
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": _many(1001)}]
    mirrored = desired_from_endpoints(endpoints(subsets))
    assert mirrored.desired.endpoint_count("IPv4") == 1000
    assert mirrored.skipped == 1
    assert [e.reason for e in mirrored.events] == ["TooManyAddressesToMirror"]


def test_an_invalid_address_does_not_stop_the_valid_ones_after_it() -> None:
    # "0-not-an-ip" sorts before every IP, so it comes first after repacking.
    subsets = [
        {
            "ports": HTTP_HTTPS[:1],
            "addresses": [{"ip": "0-not-an-ip"}, {"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
        }
    ]
    mirrored = desired_from_endpoints(endpoints(subsets))
    assert mirrored.desired.endpoint_count("IPv4") == 2
    assert (mirrored.skipped, mirrored.invalid) == (1, 1)


def test_labels_and_annotations_that_are_not_strings_are_not_copied() -> None:
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": [address("10.0.0.1", "pod-1", "node-1")]}]
    ep = endpoints(subsets, labels={"a": "1", "n": 2}, annotations={"x": "y", "z": None})  # type: ignore[dict-item]
    plan, _ = plan_mirroring(ep, [], CONFIG)
    [created] = plan.creates
    assert created["metadata"]["labels"] == {
        "a": "1",
        LABEL_SERVICE_NAME: "test-ep",
        LABEL_MANAGED_BY: MIRRORING_CONTROLLER_NAME,
    }
    assert created["metadata"]["annotations"] == {"x": "y"}


def test_without_adopting_only_a_controller_reference_to_the_endpoints_counts() -> None:
    subsets = [{"ports": HTTP_HTTPS[:1], "addresses": _many(2)}]
    refs = {
        "not-controller": {"uid": "ep-uid", "controller": False},
        "other-uid": {"uid": "other", "controller": True},
        "owned": {"uid": "ep-uid", "controller": True},
    }
    existing = []
    for name, ref in refs.items():
        raw = existing_slice([{"addresses": ["10.0.0.0"], "conditions": {"ready": True}}])
        raw["metadata"]["name"], raw["ports"] = name, HTTP_HTTPS[:1]
        raw["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Endpoints", "name": "test-ep", **ref}
        ]
        existing.append(raw)
    plan, _ = plan_mirroring(endpoints(subsets), existing, CONFIG, adopt=False)
    assert [s["metadata"]["name"] for s in plan.updates] == ["owned"]
    assert sorted(s["metadata"]["name"] for s in plan.deletes) == ["not-controller", "other-uid"]


def _slice_ports(plan_creates: list[dict[str, Any]]) -> list[tuple[tuple[str, ...], int]]:
    return sorted((tuple(p["name"] for p in s["ports"]), len(s["endpoints"])) for s in plan_creates)


def test_a_port_with_app_protocol_in_two_subsets_is_packed_per_subset() -> None:
    """Upstream's RepackSubsets keys ports by the Go struct, whose appProtocol is a pointer: in
    an Endpoints object each subset's port is its own, so ``pg`` (with an appProtocol) of the
    first subset and ``pg`` of the second are two ports, each packed with its own subset's
    addresses: slices [http, pg] and [dns, pg]. Merged by value, ``pg`` would offer the union
    and get a slice of its own (randomized referee, seed 938513567)."""
    pg = {"name": "pg", "port": 5432, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"}
    dns = {"name": "dns", "port": 53, "protocol": "UDP"}
    http = {"name": "http", "port": 80, "protocol": "TCP"}
    source = endpoints(
        [
            {"ports": [dns, dict(pg)], "addresses": [{"ip": "10.0.0.1"}]},
            {"ports": [dict(pg), http], "addresses": [{"ip": "10.0.0.2"}]},
        ]
    )
    plan, _ = plan_mirroring(source, [], CONFIG)
    assert _slice_ports(plan.creates) == [(("dns", "pg"), 1), (("http", "pg"), 1)]


def test_a_port_without_app_protocol_in_two_subsets_is_one_port() -> None:
    """Without appProtocol the Go struct has no pointer: equal ports are one port, offering
    the addresses of both subsets."""
    dns = {"name": "dns", "port": 53, "protocol": "UDP"}
    http = {"name": "http", "port": 80, "protocol": "TCP"}
    source = endpoints(
        [
            {"ports": [dns, dict(http)], "addresses": [{"ip": "10.0.0.1"}]},
            {"ports": [dict(http)], "addresses": [{"ip": "10.0.0.2"}]},
        ]
    )
    plan, _ = plan_mirroring(source, [], CONFIG)
    assert _slice_ports(plan.creates) == [(("dns",), 1), (("http",), 2)]
