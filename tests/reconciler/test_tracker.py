"""Port of upstream util/endpointslice_tracker_test.go."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from endpointslice_operator.reconciler.tracking.tracker import (
    DELETION_EXPECTED,
    STALE_INFORMER_CACHE_MESSAGE,
    EndpointSliceTracker,
    StaleInformerCache,
)


def endpoint_slice(
    *,
    namespace: str = "ns1",
    service: str = "svc1",
    uid: str | None = "original",
    generation: int = 1,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "example-1",
        "namespace": namespace,
        "generation": generation,
        "labels": {"kubernetes.io/service-name": service},
    }
    if uid is not None:
        metadata["uid"] = uid
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": metadata}


SLICE_1 = endpoint_slice()
DIFFERENT_NS = endpoint_slice(namespace="ns2", uid="diff-ns")
DIFFERENT_SERVICE = endpoint_slice(service="svc2", uid="diff-svc")
NEWER_GEN = endpoint_slice(generation=2)
SERVICE_1 = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "svc1", "namespace": "ns1"},
}


UPDATE_CASES = {
    "same slice": (SLICE_1, SLICE_1, True, False),
    "different namespace": (SLICE_1, DIFFERENT_NS, False, True),
    "different service": (SLICE_1, DIFFERENT_SERVICE, False, True),
    "newer generation": (SLICE_1, NEWER_GEN, True, True),
}


@pytest.mark.parametrize(
    ("update_param", "checks_param", "expect_has", "expect_should_sync"),
    UPDATE_CASES.values(),
    ids=UPDATE_CASES.keys(),
)
def test_endpoint_slice_tracker_update(
    update_param: dict[str, Any],
    checks_param: dict[str, Any],
    expect_has: bool,
    expect_should_sync: bool,
) -> None:
    tracker = EndpointSliceTracker()
    tracker.update(update_param)
    assert tracker.has(checks_param) is expect_has
    assert tracker.should_sync(checks_param) is expect_should_sync
    assert tracker.generations("ns1", "svc1") == {"original": 1}


def tracker_with(generations: dict[str, int] | None) -> EndpointSliceTracker:
    """A tracker holding these generations for ns1/svc1 (None: tracking nothing)."""
    tracker = EndpointSliceTracker()
    if generations is not None:
        # Upstream's "empty slices" case tracks the Service with no slices at all: reach that
        # state the only way the API allows, by tracking a slice and then seeing it deleted.
        tracker.expect_deletion(endpoint_slice(uid="placeholder"))
        tracker.handle_deletion(endpoint_slice(uid="placeholder"))
        for uid, generation in generations.items():
            if generation == DELETION_EXPECTED:
                tracker.expect_deletion(endpoint_slice(uid=uid))
            else:
                tracker.update(endpoint_slice(uid=uid, generation=generation))
    assert tracker.generations("ns1", "svc1") == generations
    return tracker


STALE_CASES = {
    "empty tracker": (None, [], False),
    "empty slices": ({}, [], False),
    "matching slices": ({"original": 1}, [SLICE_1], False),
    "newer slice in tracker": ({"original": 2}, [SLICE_1], True),
    "newer slice in params": ({"original": 1}, [NEWER_GEN], False),
    "slice in params is expected to be deleted": (
        {"original": DELETION_EXPECTED},
        [SLICE_1],
        True,
    ),
    "slice in tracker but not in params": ({"original": 1}, [], True),
    # Beyond upstream's table:
    "expected deletion not listed": ({"original": DELETION_EXPECTED}, [], False),
    "untracked slice listed": ({"original": 1}, [SLICE_1, endpoint_slice(uid="other")], False),
}


@pytest.mark.parametrize(
    ("generations", "slices", "expect_newer"), STALE_CASES.values(), ids=STALE_CASES.keys()
)
def test_endpoint_slice_tracker_stale_slices(
    generations: dict[str, int] | None, slices: list[dict[str, Any]], expect_newer: bool
) -> None:
    tracker = tracker_with(generations)
    before = copy.deepcopy(slices)
    assert tracker.stale_slices(SERVICE_1, slices) is expect_newer
    assert tracker.stale_slices(SERVICE_1, iter(slices)) is expect_newer
    assert slices == before


DELETION_CASES = {
    "same slice": (SLICE_1, SLICE_1, True, True, True),
    "different namespace": (DIFFERENT_NS, DIFFERENT_NS, True, True, False),
    "different namespace, check original ep slice": (DIFFERENT_NS, SLICE_1, True, False, False),
    "different service": (DIFFERENT_SERVICE, DIFFERENT_SERVICE, True, True, False),
    "expectDelete different service, check original ep slice, delete original": (
        DIFFERENT_SERVICE,
        SLICE_1,
        True,
        False,
        False,
    ),
    "different generation": (NEWER_GEN, NEWER_GEN, True, True, True),
    "expectDelete different generation, check original ep slice, delete original": (
        NEWER_GEN,
        SLICE_1,
        True,
        True,
        True,
    ),
}


@pytest.mark.parametrize(
    ("expect_deletion_param", "checks_param", "expect_has", "expect_should_sync", "expect_handled"),
    DELETION_CASES.values(),
    ids=DELETION_CASES.keys(),
)
def test_endpoint_slice_tracker_deletion(
    expect_deletion_param: dict[str, Any],
    checks_param: dict[str, Any],
    expect_has: bool,
    expect_should_sync: bool,
    expect_handled: bool,
) -> None:
    tracker = EndpointSliceTracker()
    tracker.update(SLICE_1)
    tracker.expect_deletion(expect_deletion_param)
    assert tracker.has(checks_param) is expect_has
    assert tracker.should_sync(checks_param) is expect_should_sync
    assert tracker.handle_deletion(SLICE_1) is expect_handled
    assert tracker.has(SLICE_1) is False


DELETE_SERVICE_CASES = {
    "same service": (("ns1", "svc1"), False, True, None),
    "different namespace": (("ns2", "svc1"), True, False, 1),
    "different service": (("ns1", "svc2"), True, False, 1),
}


@pytest.mark.parametrize(
    ("delete_service_param", "expect_has", "expect_should_sync", "expect_generation"),
    DELETE_SERVICE_CASES.values(),
    ids=DELETE_SERVICE_CASES.keys(),
)
def test_endpoint_slice_tracker_delete_service(
    delete_service_param: tuple[str, str],
    expect_has: bool,
    expect_should_sync: bool,
    expect_generation: int | None,
) -> None:
    no_uid = endpoint_slice(uid=None)
    tracker = EndpointSliceTracker()
    tracker.update(no_uid)
    tracker.delete_service(*delete_service_param)
    assert tracker.has(no_uid) is expect_has
    assert tracker.should_sync(no_uid) is expect_should_sync
    generations = tracker.generations("ns1", "svc1")
    if expect_generation is None:
        assert generations is None
    else:
        assert generations == {"": expect_generation}


def test_handle_deletion_of_untracked_slice_is_expected() -> None:
    tracker = EndpointSliceTracker()
    assert tracker.handle_deletion(SLICE_1) is True
    tracker.update(endpoint_slice(uid="other"))
    assert tracker.handle_deletion(SLICE_1) is True


def test_slice_without_metadata_is_tracked_under_an_empty_key() -> None:
    tracker = EndpointSliceTracker()
    tracker.update({})
    assert tracker.has({"metadata": None})
    assert not tracker.should_sync({})
    assert tracker.generations("", "") == {"": 0}


def test_tracker_keeps_no_reference_to_slices() -> None:
    tracker = EndpointSliceTracker()
    body = endpoint_slice(generation=3)
    tracker.update(body)
    body["metadata"]["generation"] = 1
    assert tracker.stale_slices(SERVICE_1, [body]) is True
    assert len(tracker) == 1


def test_stale_informer_cache_error() -> None:
    error = StaleInformerCache()
    assert (
        str(error) == STALE_INFORMER_CACHE_MESSAGE == "EndpointSlice informer cache is out of date"
    )


def test_deletion_expected_is_upstreams_sentinel() -> None:
    # deletionExpected = -1 upstream; generations() hands it out to callers.
    assert DELETION_EXPECTED == -1
    tracker = EndpointSliceTracker()
    tracker.expect_deletion(SLICE_1)
    assert tracker.generations("ns1", "svc1") == {"original": -1}


SELECTOR_LABEL = "endpointselector.example/name"


def test_slices_of_other_owner_kinds_are_filed_under_their_owner() -> None:
    tracker = EndpointSliceTracker(owner_labels=[("EndpointSelector", SELECTOR_LABEL, "es:")])
    selector = {"kind": "EndpointSelector", "metadata": {"namespace": "ns1", "name": "sel"}}
    owned = endpoint_slice(uid="owned", generation=2)
    owned["metadata"]["labels"][SELECTOR_LABEL] = "sel"  # checked before the service-name label
    tracker.update(owned)
    assert tracker.generations("ns1", "es:sel") == {"owned": 2}
    assert tracker.generations("ns1", "svc1") is None
    assert not tracker.stale_slices(selector, [owned])
    assert tracker.stale_slices(selector, [])  # ours, missing from the list
    assert tracker.stale_slices(selector, [endpoint_slice(uid="owned", generation=1)])
    # A Service of the same name is not that owner.
    service = {"kind": "Service", "metadata": {"namespace": "ns1", "name": "sel"}}
    assert not tracker.stale_slices(service, [])
    tracker.update(endpoint_slice(uid="plain", service="sel"))
    assert tracker.stale_slices(service, [])
