"""``controller/cache/owner_kinds.py``: the registered kinds, Service first, with the names
the API gives them, and the queue keys made from a kind's name."""

from __future__ import annotations

from endpointslice_operator.controller.cache.owner_kinds import (
    ENDPOINT_SELECTOR,
    SERVICE,
    SERVICE_IMPORT,
    owner_key,
    registered,
    split_owner_key,
)


def test_every_kind_is_registered_service_first() -> None:
    assert registered() == (SERVICE, ENDPOINT_SELECTOR, SERVICE_IMPORT)
    service = registered()[0]
    assert (service.kind, service.key_prefix, service.slice_label) == (
        "Service",
        "",
        "kubernetes.io/service-name",
    )


def test_owner_keys_are_made_from_the_kinds_name() -> None:
    assert owner_key("Service", "ns", "web") == "ns/web"
    assert owner_key("EndpointSelector", "ns", "sel") == "endpointselector:ns/sel"
    assert owner_key("ServiceImport", "ns", "db") == "serviceimport:ns/db"
    for kind in registered():
        assert split_owner_key(owner_key(kind.kind, "ns", "x")) == (kind, "ns", "x")
