"""The owner-kind seam: queue keys, slice owners, the tracker's keys, routing to syncers."""

from __future__ import annotations

import pytest

from endpointslice_operator.controller.cache.indexes import SliceIndex, slice_ref
from endpointslice_operator.controller.cache.owner_kinds import (
    ENDPOINT_SELECTOR,
    SERVICE,
    SERVICE_IMPORT,
    OwnerSyncs,
    owner_of_slice,
    split_owner_key,
    tracker_for_owners,
    tracker_name,
)


def _slice(labels: dict[str, str], uid: str = "u1", generation: int = 1) -> dict[str, object]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": "s-1",
            "uid": uid,
            "generation": generation,
            "resourceVersion": "5",
            "labels": labels,
        }
    }


def test_service_keys_are_unchanged() -> None:
    assert SERVICE.key("ns", "web") == "ns/web"
    assert split_owner_key("ns/web") == (SERVICE, "ns", "web")
    assert tracker_name("ns/web") == ("ns", "web")


def test_other_kinds_carry_their_prefix() -> None:
    key = ENDPOINT_SELECTOR.key("ns", "web")
    assert key == "endpointselector:ns/web"
    assert split_owner_key(key) == (ENDPOINT_SELECTOR, "ns", "web")
    assert tracker_name(key) == ("ns", "endpointselector:web")


def test_slice_owner_prefers_other_kinds_over_the_service_label() -> None:
    both = {
        "kubernetes.io/service-name": "web",
        "endpointslice-operator.io/endpoint-selector-name": "sel",
    }
    assert owner_of_slice("ns", both) == "endpointselector:ns/sel"
    assert owner_of_slice("ns", {"kubernetes.io/service-name": "web"}) == "ns/web"
    assert owner_of_slice("ns", {}) is None
    assert slice_ref(_slice(both))[2].service == "endpointselector:ns/sel"


def test_slice_index_files_slices_under_their_owner() -> None:
    index = SliceIndex("ours")
    labels = {
        "endpointslice.kubernetes.io/managed-by": "ours",
        "endpointslice-operator.io/endpoint-selector-name": "sel",
    }
    index.put(_slice(labels))
    assert [s["metadata"]["name"] for s in index.ours("endpointselector:ns/sel")] == ["s-1"]
    assert index.ours("ns/sel") == []
    stand_in = index.last_seen("ns", "s-1")
    assert stand_in is not None


def test_tracker_keeps_owner_kinds_apart() -> None:
    tracker = tracker_for_owners()
    service_slice = _slice({"kubernetes.io/service-name": "web"}, uid="a", generation=2)
    selector_slice = _slice(
        {"endpointslice-operator.io/endpoint-selector-name": "web"}, uid="b", generation=2
    )
    tracker.update(service_slice)
    tracker.update(selector_slice)
    assert dict(tracker.generations("ns", "web") or {}) == {"a": 2}
    assert dict(tracker.generations("ns", "endpointselector:web") or {}) == {"b": 2}
    selector = {"kind": "EndpointSelector", "metadata": {"namespace": "ns", "name": "web"}}
    service = {"kind": "Service", "metadata": {"namespace": "ns", "name": "web"}}
    # Each owner's listing is checked against its own writes only.
    assert tracker.stale_slices(selector, [selector_slice]) is False
    assert tracker.stale_slices(selector, []) is True
    assert tracker.stale_slices(service, [service_slice]) is False


class _Recorder:
    def __init__(self) -> None:
        self.keys: list[str] = []
        self.terms = 0

    async def sync(self, key: str) -> None:
        self.keys.append(key)

    def start_term(self) -> None:
        self.terms += 1

    def all_keys(self) -> list[str]:
        return ["endpointselector:ns/x"]


@pytest.mark.asyncio
async def test_owner_syncs_route_by_kind() -> None:
    services: list[str] = []

    async def service_sync(key: str) -> None:
        services.append(key)

    selectors = _Recorder()
    syncs = OwnerSyncs(service_sync, {"EndpointSelector": selectors})
    await syncs.sync("ns/web")
    await syncs.sync("endpointselector:ns/web")
    assert services == ["ns/web"]
    assert selectors.keys == ["endpointselector:ns/web"]
    syncs.start_term()
    assert selectors.terms == 1
    assert syncs.all_keys() == ["endpointselector:ns/x"]
    # A kind without a syncer (switched off): its keys are left alone.
    await OwnerSyncs(service_sync).sync("endpointselector:ns/web")
    assert services == ["ns/web"]


IMPORTED_LABELS = {
    "endpointslice.kubernetes.io/managed-by": "ours",
    "kubernetes.io/service-name": "derived-gapqrqeg1j",
    "multicluster.kubernetes.io/service-name": "web",
    "multicluster.kubernetes.io/source-cluster": "east",
}


def test_service_import_is_an_owner_kind() -> None:
    key = SERVICE_IMPORT.key("ns", "web")
    assert key == "serviceimport:ns/web"
    assert split_owner_key(key) == (SERVICE_IMPORT, "ns", "web")
    assert tracker_name(key) == ("ns", "serviceimport:web")
    # The import's label wins over the derived Service's name on an imported slice.
    assert owner_of_slice("ns", IMPORTED_LABELS) == "serviceimport:ns/web"
    index = SliceIndex("ours")
    index.put(_slice(IMPORTED_LABELS))
    assert [s["metadata"]["name"] for s in index.ours("serviceimport:ns/web")] == ["s-1"]
    assert index.ours("ns/derived-gapqrqeg1j") == []
    assert index.services_with_ours() == ["serviceimport:ns/web"]


def test_tracker_files_imported_slices_under_the_import() -> None:
    tracker = tracker_for_owners()
    imported = _slice(IMPORTED_LABELS, uid="i", generation=3)
    tracker.update(imported)
    assert dict(tracker.generations("ns", "serviceimport:web") or {}) == {"i": 3}
    assert tracker.generations("ns", "derived-gapqrqeg1j") is None
    assert tracker.should_sync(imported) is False


@pytest.mark.asyncio
async def test_import_keys_go_to_the_import_syncer() -> None:
    services: list[str] = []

    async def service_sync(key: str) -> None:
        services.append(key)

    imports, selectors = _Recorder(), _Recorder()
    syncs = OwnerSyncs(service_sync, {"EndpointSelector": selectors, "ServiceImport": imports})
    await syncs.sync("serviceimport:ns/web")
    await syncs.sync("ns/web")
    assert imports.keys == ["serviceimport:ns/web"]
    assert selectors.keys == [] and services == ["ns/web"]
    # --multicluster off: import keys (of imported slices left in the index) are left alone.
    await OwnerSyncs(service_sync).sync("serviceimport:ns/web")
    assert services == ["ns/web"]


def test_an_owner_kind_is_a_frozen_value() -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        SERVICE.key_prefix = "svc"  # type: ignore[misc]
    assert SERVICE.key("ns", "web") == "ns/web"


@pytest.mark.parametrize("prefix", ["", "a:b", "a/b", "a:", "/a"])
def test_register_refuses_a_prefix_that_is_not_a_plain_word(prefix: str) -> None:
    from endpointslice_operator.controller.cache.owner_kinds import OwnerKind, register, registered

    before = registered()
    with pytest.raises(ValueError, match="plain word"):
        register(OwnerKind("Odd", prefix, "example.com/odd-name"))
    assert registered() == before


def test_a_bare_prefix_without_a_colon_is_a_service_key() -> None:
    # a Service key never holds ':'; a word that happens to be a prefix is a namespace
    assert split_owner_key("endpointselector") == (SERVICE, "endpointselector", "")
    assert split_owner_key("endpointselector/web") == (SERVICE, "endpointselector", "web")


def test_slice_owner_skips_empty_and_non_string_labels() -> None:
    es_label = "endpointslice-operator.io/endpoint-selector-name"
    service_label = "kubernetes.io/service-name"
    assert owner_of_slice("ns", {es_label: "", service_label: "web"}) == "ns/web"
    assert owner_of_slice("ns", {es_label: 5, service_label: "web"}) == "ns/web"
    assert owner_of_slice("ns", {service_label: ""}) is None
    assert owner_of_slice("ns", {service_label: ["web"]}) is None
