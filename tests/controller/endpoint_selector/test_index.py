"""The EndpointSelector index: slim bodies, entries, the selector filed beside the Services'."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from endpointslice_operator.controller.cache.indexes import ServiceIndex
from endpointslice_operator.controller.endpoint_selector.index import (
    EndpointCounts,
    EndpointSelectorEntry,
    EndpointSelectorIndex,
    slim,
)

SPEC = {"selector": {"matchLabels": {"app": "web"}}, "ports": [{"name": "a", "port": 80}]}


def services() -> ServiceIndex:
    return ServiceIndex(
        enabled_annotation="example.com/enabled",
        selector_annotation="example.com/selector",
        managed_by="ours",
    )


def selector_body(name: str = "s", **extra: Any) -> dict[str, Any]:
    metadata = {"namespace": "ns", "name": name, "uid": "u-1", "generation": 2}
    return {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": metadata,
        "spec": SPEC,
        **extra,
    }


def test_slim_keeps_the_fields_read_and_drops_the_rest() -> None:
    body = selector_body(status={"endpoints": 1})
    body["metadata"] = {
        **body["metadata"],
        "managedFields": [{"manager": "kubectl"}],
        "annotations": {"big": "x" * 100},
        "labels": {"team": "a"},
    }
    slimmed = slim(body)
    assert slimmed == {
        "apiVersion": "endpointslice-operator.io/v1alpha1",
        "kind": "EndpointSelector",
        "metadata": {
            "name": "s",
            "namespace": "ns",
            "uid": "u-1",
            "generation": 2,
            "labels": {"team": "a"},
        },
        "spec": SPEC,
    }
    assert slim({"metadata": None, "spec": "junk"}) == {
        "apiVersion": None,
        "kind": None,
        "metadata": {},
        "spec": {},
    }


def test_an_entry_reads_its_identity_with_defaults() -> None:
    entry = EndpointSelectorEntry("k", slim(selector_body()), None, ())
    assert (entry.namespace, entry.name, entry.uid, entry.generation) == ("ns", "s", "u-1", 2)
    bare = EndpointSelectorEntry("k", {"metadata": {"generation": "7"}}, None, ())
    assert (bare.namespace, bare.name, bare.uid, bare.generation) == ("", "", "", 0)
    empty = EndpointSelectorEntry(
        "k", {"metadata": {"namespace": "", "name": None, "uid": ""}}, None, ()
    )
    assert (empty.namespace, empty.name, empty.uid) == ("", "", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.key = "other"  # type: ignore[misc]


def test_a_new_index_is_neither_synced_nor_served() -> None:
    index = EndpointSelectorIndex(services())
    assert (index.synced, index.served, len(index), index.keys()) == (False, False, 0, [])


def test_upsert_files_the_selector_beside_the_services_and_remove_drops_it() -> None:
    service_index = services()
    index = EndpointSelectorIndex(service_index)
    previous, entry = index.upsert(selector_body())
    assert previous is None
    assert entry.key == "endpointselector:ns/s" and entry.selector is not None
    assert index.get(entry.key) is entry and index.keys() == [entry.key] and len(index) == 1
    assert service_index.selecting("ns", {"app": "web"}) == {entry.key}
    again, newer = index.upsert(selector_body())
    assert again is entry and index.get(entry.key) is newer

    # an invalid spec takes the selector out of the index (no pod event queues it)
    broken = selector_body(spec={**SPEC, "ports": [{"name": "a", "port": 0}]})
    _, invalid = index.upsert(broken)
    assert invalid.selector is None and invalid.problems
    assert service_index.selecting("ns", {"app": "web"}) == set()

    index.upsert(selector_body())
    index.counts[entry.key] = EndpointCounts(1, 1)
    removed = index.remove("ns", "s")
    assert removed is not None and removed.key == entry.key
    assert index.get(entry.key) is None and len(index) == 0
    assert service_index.selecting("ns", {"app": "web"}) == set()
    assert entry.key not in index.counts and entry.key not in index.shown
    assert index.remove("ns", "s") is None


def test_remove_of_an_unknown_key_still_forgets_its_counts() -> None:
    index = EndpointSelectorIndex(services())
    index.counts["endpointselector:ns/gone"] = EndpointCounts(1, 2)
    index.shown["endpointselector:ns/gone"] = EndpointCounts(1, 2)
    assert index.remove("ns", "gone") is None
    assert index.counts == {} and index.shown == {}


def test_upsert_reads_the_counts_the_status_shows() -> None:
    index = EndpointSelectorIndex(services())
    _, entry = index.upsert(selector_body(status={"endpoints": 3, "readyEndpoints": 2}))
    assert index.shown[entry.key] == EndpointCounts(ready=2, total=3)
    index.upsert(selector_body(status={"endpoints": 3}))
    assert entry.key not in index.shown
    index.upsert(selector_body(status={"endpoints": 4, "readyEndpoints": 4}))
    index.upsert(selector_body(status={"readyEndpoints": 4}))
    assert entry.key not in index.shown
    index.upsert(selector_body(status={"endpoints": 4, "readyEndpoints": 4}))
    index.upsert(selector_body())
    assert entry.key not in index.shown
