"""reconciler.endpoints: the JSON an endpoint becomes, and the fast reading of an existing
slice's endpoint, which must agree with the defensive parser on every input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from endpointslice_operator.reconciler.endpoints import endpoint_from_dict, existing_entry

REF = {"kind": "Pod", "namespace": "ns", "name": "pod-a", "uid": "u-1"}
WELL_FORMED: dict[str, Any] = {
    "addresses": ["10.0.0.1"],
    "conditions": {"ready": True, "serving": True, "terminating": False},
    "targetRef": REF,
    "nodeName": "node-a",
    "zone": "zone-a",
}


def round_trip(raw: dict[str, Any]) -> dict[str, Any]:
    return endpoint_from_dict(raw).to_dict()


@pytest.mark.parametrize(
    "conditions",
    [
        {"ready": True, "serving": True, "terminating": False},
        {"serving": True, "terminating": False},
        {"ready": True, "terminating": False},
        {"ready": True, "serving": False},
        {"ready": False},
        {},
    ],
)
def test_only_the_conditions_set_are_written(conditions: dict[str, bool]) -> None:
    written = round_trip({"addresses": ["10.0.0.1"], "conditions": conditions})
    assert written == {"addresses": ["10.0.0.1"], "conditions": conditions}


@pytest.mark.parametrize(
    "ref",
    [
        REF,
        {**REF, "apiVersion": "v1"},
        {**REF, "fieldPath": "spec.containers{c}"},
        {**REF, "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
        {"kind": "Pod", "name": "pod-a"},
        {"kind": "Pod", "namespace": "ns", "name": "pod-a"},
        {"name": "pod-a", "uid": "u-1"},
    ],
)
def test_the_target_ref_is_written_with_the_fields_it_has(ref: dict[str, str]) -> None:
    written = round_trip({"addresses": ["10.0.0.1"], "conditions": {}, "targetRef": ref})
    assert written["targetRef"] == ref


def test_node_name_zone_and_hostname_only_when_set() -> None:
    bare = round_trip({"addresses": ["10.0.0.1"]})
    assert bare == {"addresses": ["10.0.0.1"], "conditions": {}}
    full = round_trip({**WELL_FORMED, "hostname": "h"})
    assert (full["nodeName"], full["zone"], full["hostname"]) == ("node-a", "zone-a", "h")
    assert full["targetRef"] == REF
    assert full["conditions"] == WELL_FORMED["conditions"]


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(WELL_FORMED)
    target = raw
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return raw


_DELETE = object()

# One thing at a time off the shape the fast path takes.
VARIANTS = [
    ((), None),
    (("addresses",), ("10.0.0.1",)),
    (("addresses",), "1"),
    (("addresses",), [5]),
    (("addresses",), ["10.0.0.2", "10.0.0.1"]),
    (("conditions", "ready"), "true"),
    (("conditions", "serving"), 1),
    (("conditions", "terminating"), None),
    (("conditions", "terminating"), "no"),
    (("conditions", "extra"), True),
    (("conditions", "ready"), _DELETE),
    (("conditions",), ["ready", "serving", "terminating"]),
    (("targetRef", "kind"), 5),
    (("targetRef", "namespace"), None),
    (("targetRef", "name"), ["x"]),
    (("targetRef", "uid"), 7),
    (("targetRef", "apiVersion"), "v1"),
    (("targetRef", "fieldPath"), "spec"),
    (("targetRef", "kind"), _DELETE),
    (("targetRef",), "junk"),
    (("nodeName",), 3),
    (("nodeName",), None),
    (("nodeName",), _DELETE),
    (("zone",), 3),
    (("zone",), _DELETE),
    (("hostname",), "h"),
]


@pytest.mark.parametrize(("path", "value"), VARIANTS)
def test_existing_entry_agrees_with_the_parser(path: tuple[str, ...], value: Any) -> None:
    raw = copy.deepcopy(WELL_FORMED) if not path else _with(path, value)
    parsed = endpoint_from_dict(raw)
    assert existing_entry(raw) == (parsed.key, parsed.state)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(0, 3), st.sampled_from(["", "x", "v1"]))


@given(
    addresses=st.one_of(_VALUES, st.lists(st.one_of(st.sampled_from(["10.0.0.1"]), _VALUES))),
    conditions=st.dictionaries(st.sampled_from(["ready", "serving", "terminating", "x"]), _VALUES),
    ref=st.one_of(
        _VALUES,
        st.dictionaries(
            st.sampled_from(["kind", "namespace", "name", "uid", "apiVersion", "fieldPath"]),
            _VALUES,
        ),
    ),
    extra=st.dictionaries(st.sampled_from(["nodeName", "zone", "hostname"]), _VALUES),
)
def test_existing_entry_agrees_with_the_parser_on_any_shape(
    addresses: Any, conditions: Any, ref: Any, extra: dict[str, Any]
) -> None:
    raw = {"addresses": addresses, "conditions": conditions, "targetRef": ref, **extra}
    parsed = endpoint_from_dict(raw)
    assert existing_entry(raw) == (parsed.key, parsed.state)
