"""Endpoint identity and state: the fast path for existing endpoints agrees with the full one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from endpointslice_operator.reconciler.endpoints import _parse, endpoint_from_dict, existing_entry

BASE: dict[str, Any] = {
    "addresses": ["10.0.0.1"],
    "conditions": {"ready": True, "serving": True, "terminating": False},
    "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"},
    "nodeName": "n",
    "zone": "z",
}


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(BASE, id="common shape"),
        pytest.param({**BASE, "hints": {"forZones": [{"name": "z"}]}}, id="hints are ignored"),
        pytest.param({**BASE, "hostname": "h"}, id="hostname"),
        pytest.param({**BASE, "addresses": ["10.0.0.2", "10.0.0.1"]}, id="two addresses"),
        pytest.param({**BASE, "conditions": {"ready": True}}, id="partial conditions"),
        pytest.param(
            {**BASE, "targetRef": {"kind": "Pod", "name": "p", "resourceVersion": "3"}},
            id="targetRef without uid",
        ),
        pytest.param({k: v for k, v in BASE.items() if k != "targetRef"}, id="no targetRef"),
        pytest.param({**BASE, "addresses": "10.0.0.1"}, id="addresses not a list"),
        pytest.param({**BASE, "nodeName": 5}, id="bad nodeName"),
        pytest.param({}, id="empty"),
    ],
)
def test_existing_entry_matches_the_full_parser(raw: dict[str, Any]) -> None:
    key, state, _, _ = _parse(raw)
    assert existing_entry(raw) == (key, state)


def test_identity_ignores_address_order_and_state_ignores_hints() -> None:
    one = endpoint_from_dict({**BASE, "addresses": ["10.0.0.2", "10.0.0.1"]})
    two = endpoint_from_dict(
        {**BASE, "addresses": ["10.0.0.1", "10.0.0.2"], "hints": {"forZones": []}}
    )
    assert one.key == two.key
    assert one.state == two.state
    assert one.addresses == ("10.0.0.2", "10.0.0.1")  # written back in the given order


def test_state_differs_on_target_uid_but_not_resource_version() -> None:
    ref = BASE["targetRef"]
    same = existing_entry({**BASE, "targetRef": {**ref, "resourceVersion": "9"}})
    other = existing_entry({**BASE, "targetRef": {**ref, "uid": "v"}})
    assert same == existing_entry(BASE)
    assert other[0] == existing_entry(BASE)[0]
    assert other[1] != existing_entry(BASE)[1]


SCALARS = st.none() | st.booleans() | st.integers(-1, 1) | st.sampled_from(["", "x", "10.0.0.1"])
VALUES = (
    SCALARS
    | st.lists(SCALARS, max_size=2)
    | st.dictionaries(
        st.sampled_from(
            ["ready", "serving", "terminating", "kind", "namespace", "name", "uid", "x"]
        ),
        SCALARS,
        max_size=4,
    )
)
FIELDS = st.sampled_from(
    ["addresses", "conditions", "targetRef", "nodeName", "zone", "hostname", "hints"]
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(FIELDS, VALUES, max_size=4), st.booleans())
def test_existing_entry_never_raises_and_agrees(overrides: dict[str, Any], from_base: bool) -> None:
    raw = {**BASE, **overrides} if from_base else overrides
    key, state, _, _ = _parse(raw)
    assert existing_entry(raw) == (key, state)
