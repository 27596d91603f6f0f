"""``reconciler/compact.py``: what is shared between decoded slices and objects, and what is
left as it was (junk conditions, timestamps)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from endpointslice_operator.reconciler import compact_slice
from endpointslice_operator.reconciler.compact import shared_strings


def _decoded(value: Any) -> Any:
    """A fresh decode, as a watch event gives it (no string shared with anything)."""
    return json.loads(json.dumps(value))


def test_node_and_zone_names_of_endpoints_are_shared_between_slices() -> None:
    endpoint = {"addresses": ["10.0.0.1"], "nodeName": "node-a.example", "zone": "zone-a/1"}
    mine = compact_slice(_decoded({"endpoints": [endpoint]}))["endpoints"][0]
    theirs = compact_slice(_decoded({"endpoints": [endpoint]}))["endpoints"][0]
    assert mine == theirs == endpoint
    assert mine["nodeName"] is theirs["nodeName"]
    assert mine["zone"] is theirs["zone"]


@pytest.mark.parametrize("conditions", [["ready"], "ready", 1, True])
def test_conditions_that_are_not_a_mapping_are_kept_as_they_are(conditions: object) -> None:
    endpoint_slice = compact_slice({"endpoints": [{"conditions": conditions}]})
    assert endpoint_slice == {"endpoints": [{"conditions": conditions}]}


@pytest.mark.parametrize("key", ["creationTimestamp", "deletionTimestamp"])
def test_timestamps_are_not_shared(key: str) -> None:
    """Unique per object: no interning-table entry, the decoded string kept, even when an
    equal string is interned already."""
    value = "2024-01-02T03:04:05Z"
    tree = _decoded({"metadata": {key: value, "name": "web"}})
    interned = sys.intern("".join(list(value)))
    assert interned is not tree["metadata"][key]
    shared = shared_strings(tree)
    assert shared == tree
    assert shared["metadata"][key] is tree["metadata"][key]
