"""``reconciler/slices.py`` beyond upstream's tables: ownership, names, the parse cache."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from endpointslice_operator.reconciler.slices import (
    Owner,
    SliceParseCache,
    copy_for_update,
    generate_name_prefix,
    placeholder_equal,
    service_controller_key,
)

SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"namespace": "ns", "name": "svc", "uid": "uid-1"},
}
REF = {"apiVersion": "v1", "kind": "Service", "name": "svc", "uid": "uid-1", "controller": True}


@pytest.mark.parametrize(
    ("slice_", "owned"),
    [
        pytest.param({"metadata": {"ownerReferences": [REF]}}, True, id="its reference"),
        pytest.param(
            {"metadata": {"ownerReferences": ["junk", {**REF, "uid": "x"}, REF]}},
            True,
            id="its reference after others",
        ),
        pytest.param({}, False, id="no metadata"),
        pytest.param({"metadata": {}}, False, id="no ownerReferences"),
        pytest.param({"metadata": {"ownerReferences": REF}}, False, id="references not a list"),
        pytest.param({"metadata": {"ownerReferences": []}}, False, id="no reference"),
        pytest.param(
            {"metadata": {"ownerReferences": [{**REF, "uid": "uid-2"}]}}, False, id="other uid"
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [{**REF, "kind": "Pod"}]}}, False, id="other kind"
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [{**REF, "apiVersion": "v2"}]}},
            False,
            id="other apiVersion",
        ),
    ],
)
def test_owns_only_what_a_reference_names_by_uid_kind_and_api_version(
    slice_: dict[str, Any], owned: bool
) -> None:
    assert Owner.of(SERVICE).owns(slice_) is owned


def test_an_owner_is_an_immutable_value() -> None:
    owner = Owner.of(SERVICE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        owner.uid = "uid-2"  # type: ignore[misc]
    assert owner == Owner.of(SERVICE)
    assert not hasattr(owner, "__dict__")  # slotted: one per sync


@pytest.mark.parametrize("label", ["", 5, None])
def test_a_slice_without_a_usable_service_name_label_has_no_service_key(label: object) -> None:
    slice_ = {"metadata": {"namespace": "ns", "labels": {"kubernetes.io/service-name": label}}}
    with pytest.raises(ValueError, match=r"missing kubernetes\.io/service-name label"):
        service_controller_key(slice_)


EVERY_ALLOWED_CHARACTER = "abcdefghijklmnopqrstuvwxyz0123456789-x.y"


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("svc", "svc-"),
        ("a", "a-"),
        ("a.b", "a.b-"),
        ("svc-", "svc--"),
        (EVERY_ALLOWED_CHARACTER, f"{EVERY_ALLOWED_CHARACTER}-"),
        ("x" * 252, "x" * 252 + "-"),  # 253 characters: the longest DNS subdomain
        # One more is too long for ours; upstream's check (which masks the dash it appends
        # and the character before it) would still take it. The API server cuts a
        # generateName to 58 characters anyway, so the names made are alike.
        ("x" * 253, "x" * 253),
        ("", ""),
        ("-svc", "-svc"),
        ("a..b", "a..b"),
        ("a.-b", "a.-b"),
        ("Svc", "Svc"),
        ("s_c", "s_c"),
    ],
)
def test_generate_name_prefix_adds_a_dash_only_to_a_valid_dns_subdomain(
    name: str, prefix: str
) -> None:
    assert generate_name_prefix(name) == prefix


def _slice(uid: object, endpoints: int, version: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "resourceVersion": version},
        "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(endpoints)],
    }


def test_the_parse_cache_answers_the_same_object_from_its_entry() -> None:
    cache = SliceParseCache()
    slice_ = _slice("u1", 2)
    first = cache.view(slice_)
    again = cache.view(slice_)
    assert again.keys is first.keys and again.states is first.states
    # Changed in place (which callers must not do) with a new resourceVersion: parsed again.
    slice_["endpoints"].pop()
    slice_["metadata"]["resourceVersion"] = "2"
    assert len(cache.view(slice_).keys) == 1
    assert (len(cache), cache.endpoint_count) == (1, 1)


@pytest.mark.parametrize("uid", [None, "", 7])
def test_the_parse_cache_keeps_nothing_for_a_slice_without_a_uid(uid: object) -> None:
    cache = SliceParseCache()
    slice_ = _slice(uid, 2)
    view = cache.view(slice_)
    assert len(view.keys) == 2
    assert (len(cache), cache.endpoint_count) == (0, 0)
    assert cache.view(slice_).keys is not view.keys


def test_the_parse_cache_bound_is_inclusive_and_never_evicts_the_newest_entry() -> None:
    cache = SliceParseCache(max_endpoints=4)
    cache.view(_slice("u1", 2))
    cache.view(_slice("u2", 2))
    assert (len(cache), cache.endpoint_count) == (2, 4)  # exactly at the bound: both kept
    cache.view(_slice("u3", 6))  # more than the bound on its own: the others go, it stays
    assert (len(cache), cache.endpoint_count) == (1, 6)


def test_a_slice_view_is_slotted() -> None:
    """One per existing slice per sync: no per-instance dict."""
    assert not hasattr(SliceParseCache().view(_slice("u1", 1)), "__dict__")


PORTS = [{"name": "http", "port": 80, "protocol": "TCP"}]


def test_copy_for_update_keeps_the_ports_and_metadata_but_not_managed_fields() -> None:
    existing = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "svc-abc",
            "resourceVersion": "7",
            "labels": {"old": "label"},
            "managedFields": [{"manager": "someone"}],
        },
        "addressType": "IPv4",
        "ports": PORTS,
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    }
    endpoints = [{"addresses": ["10.0.0.2"]}]
    update = copy_for_update(existing, {"new": "label"}, endpoints)
    assert update == {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "svc-abc", "resourceVersion": "7", "labels": {"new": "label"}},
        "addressType": "IPv4",
        "ports": PORTS,
        "endpoints": endpoints,
    }
    assert update["ports"] is not PORTS and update["ports"][0] is not PORTS[0]


@pytest.mark.parametrize("ports", [None, []])
def test_copy_for_update_of_a_slice_without_ports_writes_an_empty_list(ports: object) -> None:
    existing = {"metadata": {"name": "svc-abc"}, "addressType": "IPv4", "ports": ports}
    assert copy_for_update(existing, {}, [])["ports"] == []


@pytest.mark.parametrize(
    ("existing", "placeholder", "equal"),
    [
        pytest.param({"ports": None}, {"ports": []}, True, id="nil and empty ports"),
        pytest.param({}, {"endpoints": []}, True, id="missing and empty endpoints"),
        pytest.param({"ports": {}}, {}, True, id="empty map and missing"),
        pytest.param(
            {"metadata": {"ownerReferences": []}}, {"metadata": {}}, True, id="no references"
        ),
        pytest.param({"metadata": {"labels": {}}}, {}, True, id="no labels"),
        pytest.param({"metadata": {"namespace": ""}}, {}, True, id="no namespace"),
        pytest.param({"ports": PORTS}, {"ports": []}, False, id="ports and none"),
        pytest.param(
            {"metadata": {}, "apiVersion": "v1", "ports": PORTS},
            {"metadata": {}, "apiVersion": "v1", "ports": []},
            False,
            id="a difference after the fields that do not count",
        ),
        pytest.param(
            {"metadata": {"namespace": "a"}}, {"metadata": {"namespace": "b"}}, False, id="ns"
        ),
        pytest.param(
            {"metadata": {"ownerReferences": [{"uid": "1"}]}},
            {"metadata": {"ownerReferences": [{"uid": "2"}]}},
            False,
            id="other owner",
        ),
        pytest.param(
            {"apiVersion": "discovery.k8s.io/v1beta1", "kind": "X"},
            {"apiVersion": "discovery.k8s.io/v1"},
            True,
            id="apiVersion and kind do not count",
        ),
    ],
)
def test_placeholder_equal_takes_nil_and_empty_alike(
    existing: dict[str, Any], placeholder: dict[str, Any], equal: bool
) -> None:
    assert placeholder_equal(existing, placeholder) is equal
    assert placeholder_equal(placeholder, existing) is equal
