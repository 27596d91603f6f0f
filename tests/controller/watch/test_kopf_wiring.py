"""Kopf as a pure watcher: the empty diff-base essence is only safe with ``on.event`` handlers."""

from __future__ import annotations

import kopf

from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.watch.kopf_wiring import kopf_settings
from endpointslice_operator.controller.watch.router import EventRouter, register_handlers
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker


def _registry(*, skip: tuple[str, ...] = ()) -> kopf.OperatorRegistry:
    router = EventRouter(
        indexes=Indexes(
            enabled_annotation="example.io/enabled",
            selector_annotation="example.io/selector",
            managed_by="example.io",
        ),
        tracker=EndpointSliceTracker(),
        topology=None,
        batch_period=0.0,
    )
    registry = kopf.OperatorRegistry()
    register_handlers(registry, router, skip=skip)
    return registry


def test_only_event_handlers_are_registered() -> None:
    # The diff-base storage builds an empty essence; changing handlers or daemons would need
    # the real one (Kopf's registries are private attributes, hence the underscores).
    registry = _registry()
    assert not registry._changing.get_all_handlers()
    assert not registry._spawning.get_all_handlers()
    assert not registry._indexing.get_all_handlers()
    assert {h.id for h in registry._watching.get_all_handlers()} == {
        "index-service",
        "index-pod",
        "index-node",
        "index-endpointslice",
    }


def test_kinds_can_be_left_to_the_list_watchers() -> None:
    registry = _registry(skip=("pods", "endpointslices"))
    assert {h.id for h in registry._watching.get_all_handlers()} == {
        "index-service",
        "index-node",
    }


def test_the_diff_base_essence_is_empty_and_never_a_copy_of_the_body() -> None:
    storage = kopf_settings().persistence.diffbase_storage
    body = kopf.Body({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    assert storage.build(body=body) == {}
    assert storage.fetch(body=body) is None
