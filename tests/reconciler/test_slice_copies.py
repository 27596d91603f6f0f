"""``reconciler/slices.py``'s copies: ``json_copy`` on values that are not plain JSON, and the
update ``copy_for_update`` makes of a slice read from a list (no apiVersion, no kind) or
from a read-only mapping whose endpoints are not to be read."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from endpointslice_operator.reconciler.slices import copy_for_update, json_copy


def test_json_copy_makes_a_tuple_an_editable_list() -> None:
    inner = [2]
    copied = json_copy({"t": (1, inner)})
    assert copied == {"t": [1, [2]]} and type(copied["t"]) is list
    assert copied["t"][1] is not inner


def test_json_copy_deep_copies_what_is_neither_json_nor_list_like() -> None:
    members = {1, 2}
    copied = json_copy({"s": members})
    assert copied == {"s": {1, 2}} and type(copied["s"]) is set
    assert copied["s"] is not members


PORTS = [{"name": "http", "port": 80, "protocol": "TCP"}]


def test_an_update_of_a_slice_read_from_a_list_names_its_api_version_and_kind() -> None:
    """Items of a List response carry neither apiVersion nor kind; an update must."""
    item = {"metadata": {"name": "svc-abc"}, "addressType": "IPv4", "ports": PORTS}
    update = copy_for_update(item, {}, [])
    assert (update["apiVersion"], update["kind"]) == ("discovery.k8s.io/v1", "EndpointSlice")


class _UnreadableEndpoints(Mapping[str, Any]):
    """A read-only slice (as a cache holds it) whose endpoints cost a rebuild to read."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> Any:
        if key == "endpoints":
            raise AssertionError("the endpoints of the existing slice were read")
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def test_an_update_never_reads_the_endpoints_it_replaces() -> None:
    existing = _UnreadableEndpoints(
        {
            "metadata": {"name": "svc-abc", "resourceVersion": "3"},
            "addressType": "IPv4",
            "ports": PORTS,
            "endpoints": [{"addresses": ["10.0.0.1"]}],
        }
    )
    endpoints = [{"addresses": ["10.0.0.2"]}]
    update = copy_for_update(existing, {"l": "v"}, endpoints)
    assert update["endpoints"] is endpoints
    assert update["metadata"] == {"name": "svc-abc", "resourceVersion": "3", "labels": {"l": "v"}}
