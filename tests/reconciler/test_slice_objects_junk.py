"""``reconciler/slices.py`` on objects as they come from anywhere: owners and slices with
junk or missing metadata, names with characters a DNS subdomain refuses."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.reconciler.slices import Owner, SliceParseCache, generate_name_prefix


@pytest.mark.parametrize("metadata", [None, "junk", ["junk"]])
def test_an_owner_whose_metadata_is_not_a_mapping_has_empty_names(metadata: object) -> None:
    owner = Owner.of({"metadata": metadata})
    assert (owner.api_version, owner.kind) == ("v1", "Service")
    assert (owner.namespace, owner.name, owner.uid) == ("", "", "")
    assert owner.deleting is False
    assert dict(owner.annotations) == {}


@pytest.mark.parametrize("name", ["X", "svcX", "a.Xb", "x\u00e9"])
def test_a_name_with_a_character_outside_a_dns_subdomain_is_its_own_prefix(name: str) -> None:
    assert generate_name_prefix(name) == name


@pytest.mark.parametrize("metadata", [None, "junk", ["junk"]])
def test_a_slice_whose_metadata_is_not_a_mapping_is_read_without_name_or_labels(
    metadata: object,
) -> None:
    cache = SliceParseCache()
    slice_: dict[str, Any] = {
        "metadata": metadata,
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
    }
    view = cache.view(slice_)
    assert (view.name, view.address_type, view.labels) == ("", "IPv4", None)
    assert [key[0] for key in view.keys] == [("10.0.0.1",)]
    assert len(cache) == 0  # no uid: nothing kept


@pytest.mark.parametrize("address_type", [None, 4, ["IPv4"]])
@pytest.mark.parametrize("name", [None, 7])
def test_a_slice_whose_name_or_address_type_is_not_a_string_reads_them_empty(
    name: object, address_type: object
) -> None:
    view = SliceParseCache().view(
        {"metadata": {"uid": "u1", "name": name}, "addressType": address_type}
    )
    assert (view.name, view.address_type, view.keys) == ("", "", ())
