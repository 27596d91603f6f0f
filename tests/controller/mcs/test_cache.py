"""The multi-cluster caches, driven directly by list-watch events (no server needed)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.controller.mcs.cache import (
    KINDS,
    LOCAL_KINDS,
    ClusterCache,
    Key,
    LocalCache,
    newer,
)

MINE = "endpointslice-operator.io"
PROPERTY = "cluster.clusterset.k8s.io"
SERVICE_NAME = "kubernetes.io/service-name"
MCS_NAME = "multicluster.kubernetes.io/service-name"
SOURCE = "multicluster.kubernetes.io/source-cluster"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"


def obj(name: str, namespace: str = "ns", rv: str = "1", **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"namespace": namespace, "name": name, "resourceVersion": rv}
    metadata.update(extra.pop("metadata", {}))
    return {"metadata": metadata, **extra}


def source_slice(name: str, service: str, namespace: str = "ns") -> dict[str, Any]:
    return obj(name, namespace, metadata={"labels": {SERVICE_NAME: service}})


def imported_slice(name: str, service: str, managed_by: str = MINE) -> dict[str, Any]:
    labels = {MCS_NAME: service, SOURCE: "east", MANAGED_BY: managed_by, SERVICE_NAME: "d"}
    return obj(name, metadata={"labels": labels})


def cluster_id(value: str, name: str = PROPERTY) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"value": value}}


class Changes:
    def __init__(self) -> None:
        self.keys: list[Key] = []

    def __call__(self, key: Key) -> None:
        self.keys.append(key)

    def take(self) -> list[Key]:
        taken, self.keys = self.keys, []
        return taken


def test_newer_compares_resource_versions_and_takes_unknown_ones_as_new() -> None:
    assert newer(obj("a", rv="5"), None)
    assert newer(obj("a", rv="5"), obj("a", rv="5"))
    assert newer(obj("a", rv="6"), obj("a", rv="5"))
    assert not newer(obj("a", rv="4"), obj("a", rv="5"))
    assert not newer({"metadata": None}, obj("a", rv="1"))  # no version reads as 0
    assert newer(obj("a", rv="1"), {"metadata": {}})
    assert newer(obj("a", rv="0"), {"metadata": {}})  # both read as 0: not older
    assert newer(obj("a", rv="x"), obj("a", rv="5"))  # not a number: taken
    assert newer(obj("a", rv="1"), obj("a", rv="y"))


def test_complete_once_every_kind_is_listed() -> None:
    cache = ClusterCache("peer", Changes())
    assert cache.kinds == KINDS and not cache.complete
    for kind in KINDS[:-1]:
        cache.listed_callback(kind)(None)
        assert not cache.complete
    cache.listed_callback(KINDS[-1])(None)
    assert cache.complete
    local = LocalCache(Changes(), MINE)
    assert local.kinds == LOCAL_KINDS and local.name == "local"
    for kind in KINDS:
        local.listed_callback(kind)(None)
    assert not local.complete


def test_exports_are_kept_and_dropped_and_each_event_is_a_change() -> None:
    changes = Changes()
    cache = ClusterCache("peer", changes)
    on_export = cache.handler("serviceexports")
    on_export("ADDED", obj("web"))
    assert cache.export(("ns", "web")) == obj("web") and changes.take() == [("ns", "web")]
    on_export("DELETED", obj("web"))
    assert cache.export(("ns", "web")) is None and changes.take() == [("ns", "web")]
    on_export(None, {"metadata": "junk"})
    assert cache.export(("", "")) == {"metadata": "junk"}


def test_services_are_kept_slim_and_change_only_exported_keys() -> None:
    changes = Changes()
    cache = ClusterCache("peer", changes)
    on_service = cache.handler("services")
    on_service("ADDED", obj("web", spec={"ports": [{"port": 80}]}, status={"x": 1}))
    assert cache.services[("ns", "web")] == {
        "metadata": {"namespace": "ns", "name": "web", "resourceVersion": "1"},
        "spec": {"ports": [{"port": 80}]},
    }
    assert changes.take() == []
    on_service("MODIFIED", obj("web", spec=None))
    assert cache.services[("ns", "web")]["spec"] == {}
    cache.handler("serviceexports")("ADDED", obj("web"))
    changes.take()
    on_service("MODIFIED", obj("web", rv="2"))
    assert changes.take() == [("ns", "web")]
    on_service("DELETED", obj("web"))
    assert ("ns", "web") not in cache.services and changes.take() == [("ns", "web")]


def test_source_slices_are_filed_under_their_service() -> None:
    changes = Changes()
    cache = ClusterCache("peer", changes)
    on_slice = cache.handler("endpointslices")
    on_slice("ADDED", source_slice("web-1", "web"))
    on_slice("ADDED", source_slice("web-2", "web"))
    assert [s["metadata"]["name"] for s in cache.source_slices(("ns", "web"))] == [
        "web-1",
        "web-2",
    ]
    assert changes.take() == []  # not exported
    on_slice("ADDED", obj("loose"))  # no Service label
    on_slice("ADDED", obj("odd", metadata={"labels": {SERVICE_NAME: 5}}))
    on_slice("ADDED", obj("odd", metadata={"labels": "junk"}))
    on_slice("ADDED", imported_slice("imp", "web"))  # imported: never a source
    assert set(cache.slices) == {("ns", "web")} and len(cache.source_slices(("ns", "web"))) == 2
    cache.handler("serviceexports")("ADDED", obj("web"))
    changes.take()
    on_slice("DELETED", source_slice("web-1", "web"))
    assert [s["metadata"]["name"] for s in cache.source_slices(("ns", "web"))] == ["web-2"]
    assert changes.take() == [("ns", "web")]
    on_slice("DELETED", source_slice("web-2", "web"))
    assert cache.slices == {} and cache.source_slices(("ns", "web")) == []
    on_slice("DELETED", source_slice("web-3", "web"))  # not known: nothing happens
    assert cache.slices == {}
    assert cache.source_slices(("ns", "other")) == []


def test_the_cluster_id_changes_every_export() -> None:
    changes = Changes()
    cache = ClusterCache("peer", changes)
    on_property = cache.handler("clusterproperties")
    on_property("ADDED", cluster_id("east"))
    assert cache.cluster_id == "east" and changes.take() == []
    cache.handler("serviceexports")("ADDED", obj("web"))
    cache.handler("serviceexports")("ADDED", obj("db"))
    changes.take()
    on_property("MODIFIED", cluster_id("east"))
    assert changes.take() == []  # the same id: nothing to redo
    on_property("ADDED", cluster_id("west", name="other.property"))
    assert cache.cluster_id == "east"
    on_property("MODIFIED", cluster_id("west"))
    assert cache.cluster_id == "west" and sorted(changes.take()) == [("ns", "db"), ("ns", "web")]
    on_property("DELETED", cluster_id("west"))
    assert cache.cluster_id is None and len(changes.take()) == 2


def test_a_complete_relisting_drops_what_it_did_not_deliver() -> None:
    changes = Changes()
    cache = ClusterCache("peer", changes)
    for name in ("kept", "gone"):
        cache.handler("serviceexports")("ADDED", obj(name))
        cache.handler("services")("ADDED", obj(name))
        cache.handler("endpointslices")("ADDED", source_slice(f"{name}-1", name))
        cache.handler("endpointslices")("ADDED", source_slice(f"{name}-2", name))
    cache.handler("clusterproperties")("ADDED", cluster_id("east"))
    changes.take()

    cache.listing("serviceexports")(None)
    cache.handler("serviceexports")("ADDED", obj("kept"))
    cache.listed_callback("serviceexports")(None)
    assert set(cache.exports) == {("ns", "kept")}
    assert changes.take() == [("ns", "kept"), ("ns", "gone")]

    cache.listing("services")(None)
    cache.handler("services")("ADDED", obj("kept"))
    cache.listed_callback("services")(None)
    assert set(cache.services) == {("ns", "kept")}
    assert changes.take() == [("ns", "kept"), ("ns", "gone")]

    cache.listing("endpointslices")(None)
    cache.handler("endpointslices")("ADDED", source_slice("kept-1", "kept"))
    cache.listed_callback("endpointslices")(None)
    assert {k: list(v) for k, v in cache.slices.items()} == {("ns", "kept"): ["kept-1"]}
    assert changes.take() == [("ns", "kept"), ("ns", "kept"), ("ns", "gone"), ("ns", "gone")]

    cache.listing("clusterproperties")(None)
    cache.listed_callback("clusterproperties")(None)
    assert cache.cluster_id is None and changes.take() == [("ns", "kept")]
    assert cache.complete

    # a listing that delivers the property keeps it; outside a listing nothing is pruned
    cache.handler("clusterproperties")("ADDED", cluster_id("east"))
    cache.listing("clusterproperties")(None)
    cache.handler("clusterproperties")("ADDED", cluster_id("east"))
    cache.listed_callback("clusterproperties")(None)
    assert cache.cluster_id == "east"
    changes.take()
    cache.listed_callback("serviceexports")(None)  # no listing begun: a no-op
    assert set(cache.exports) == {("ns", "kept")} and changes.take() == []


def test_local_imports_services_and_imported_slices_are_written_through() -> None:
    cache = LocalCache(Changes(), MINE)
    cache.put_import(obj("web", rv="5"))
    cache.put_import(obj("web", rv="4", spec={"old": True}))
    assert cache.imports[("ns", "web")]["metadata"]["resourceVersion"] == "5"
    cache.put_import(obj("web", rv="6"))
    assert cache.imports[("ns", "web")]["metadata"]["resourceVersion"] == "6"
    cache.drop_import(("ns", "web"))
    cache.drop_import(("ns", "web"))
    assert cache.imports == {}

    cache.put_service(obj("d", rv="3"))
    cache.put_service(obj("d", rv="2"))
    assert cache.services[("ns", "d")]["metadata"]["resourceVersion"] == "3"
    cache.drop_service(("ns", "d"))
    assert cache.services == {}

    key = ("ns", "web")
    cache.put_imported(key, obj("web-a", rv="3"))
    cache.put_imported(key, obj("web-a", rv="2"))
    cache.put_imported(key, obj("web-b", rv="1"))
    assert [s["metadata"]["resourceVersion"] for s in cache.imported_slices(key)] == ["3", "1"]
    assert cache.keys() == {key}
    cache.put_import(obj("other"))
    assert cache.keys() == {key, ("ns", "other")}
    cache.drop_imported(key, "web-a")
    assert len(cache.imported_slices(key)) == 1
    cache.drop_imported(key, "web-b")
    assert cache.imported == {} and cache.imported_slices(key) == []
    cache.drop_imported(key, "web-b")  # nothing left: a no-op


def test_local_service_events_older_than_our_write_are_ignored() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    cache.handler("serviceexports")("ADDED", obj("d"))
    changes.take()
    cache.put_service(obj("d", rv="5"))
    cache.handler("services")("MODIFIED", obj("d", rv="4"))
    assert cache.services[("ns", "d")]["metadata"]["resourceVersion"] == "5"
    assert changes.take() == []
    cache.handler("services")("MODIFIED", obj("d", rv="6"))
    assert cache.services[("ns", "d")]["metadata"]["resourceVersion"] == "6"
    assert changes.take() == [("ns", "d")]
    cache.handler("services")("DELETED", obj("d", rv="1"))  # a deletion is never stale
    assert cache.services == {} and changes.take() == [("ns", "d")]


def test_a_derived_service_changes_the_import_that_controls_it() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    refs: list[Any] = [
        "junk",
        {"kind": "Service", "name": "not-this", "controller": True},
        {"kind": "ServiceImport", "name": "not-controller", "controller": False},
        {"kind": "ServiceImport", "name": "web", "controller": True},
    ]
    cache.handler("services")("ADDED", obj("derived-x", metadata={"ownerReferences": refs}))
    assert changes.take() == [("ns", "web")]
    cache.handler("services")("ADDED", obj("plain", metadata={"ownerReferences": "junk"}))
    cache.handler("services")("ADDED", obj("none"))
    cache.handler("services")("ADDED", obj("other", metadata={"ownerReferences": refs[1:3]}))
    assert changes.take() == []
    unnamed = {"kind": "ServiceImport", "controller": True}
    cache.handler("services")(
        "ADDED", {"metadata": {"name": "u", "ownerReferences": [unnamed]}, "spec": {}}
    )
    assert changes.take() == [("", "")]


def test_local_import_events() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    on_import = cache.handler("serviceimports")
    on_import("ADDED", obj("web", rv="5"))
    assert changes.take() == [("ns", "web")]
    on_import("MODIFIED", obj("web", rv="4"))  # older than what we hold: kept, still a change
    assert cache.imports[("ns", "web")]["metadata"]["resourceVersion"] == "5"
    assert changes.take() == [("ns", "web")]
    on_import("DELETED", obj("web", rv="1"))
    assert cache.imports == {} and changes.take() == [("ns", "web")]


def test_a_new_namespace_changes_what_lives_in_it() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    appeared: list[str] = []
    cache.on_namespace = appeared.append
    cache.handler("serviceexports")("ADDED", obj("exp", namespace="a"))
    cache.handler("serviceimports")("ADDED", obj("imp", namespace="a"))
    cache.handler("serviceexports")("ADDED", obj("elsewhere", namespace="b"))
    changes.take()
    on_namespace = cache.handler("namespaces")
    on_namespace("ADDED", {"metadata": {"name": "a"}})
    assert sorted(changes.take()) == [("a", "exp"), ("a", "imp")]
    assert appeared == ["a"] and cache.namespaces == {"a"}
    on_namespace("MODIFIED", {"metadata": {"name": "a"}})  # known already
    assert changes.take() == [] and appeared == ["a"]
    on_namespace("DELETED", {"metadata": {"name": "a"}})
    assert cache.namespaces == set() and appeared == ["a"] and changes.take() == []


def test_imported_slices_of_ours_are_filed_under_their_import() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    on_slice = cache.handler("endpointslices")
    on_slice("ADDED", imported_slice("imp-1", "web", managed_by="someone-else"))
    no_name = imported_slice("imp-2", "web")
    no_name["metadata"]["labels"][MCS_NAME] = 5
    on_slice("ADDED", no_name)
    assert cache.imported == {} and changes.take() == []
    on_slice("ADDED", imported_slice("imp-1", "web"))
    assert [s["metadata"]["name"] for s in cache.imported_slices(("ns", "web"))] == ["imp-1"]
    assert cache.slices == {}  # not a source slice
    assert changes.take() == [("ns", "web")]
    on_slice("DELETED", imported_slice("imp-1", "web"))
    assert cache.imported == {} and changes.take() == [("ns", "web")]


def test_a_complete_local_relisting_drops_imports_namespaces_and_imported_slices() -> None:
    changes = Changes()
    cache = LocalCache(changes, MINE)
    for name in ("kept", "gone"):
        cache.handler("serviceimports")("ADDED", obj(name))
        cache.handler("namespaces")("ADDED", {"metadata": {"name": name}})
        cache.handler("endpointslices")("ADDED", imported_slice(f"{name}-1", name))
        cache.handler("endpointslices")("ADDED", imported_slice(f"{name}-2", name))
    cache.handler("endpointslices")("ADDED", source_slice("src-1", "kept"))
    changes.take()

    cache.listing("serviceimports")(None)
    cache.handler("serviceimports")("ADDED", obj("kept"))
    cache.listed_callback("serviceimports")(None)
    assert set(cache.imports) == {("ns", "kept")}
    assert changes.take() == [("ns", "kept"), ("ns", "gone")]

    cache.listing("namespaces")(None)
    cache.handler("namespaces")("ADDED", {"metadata": {"name": "kept"}})
    cache.listed_callback("namespaces")(None)
    assert cache.namespaces == {"kept"}

    cache.listing("endpointslices")(None)
    cache.handler("endpointslices")("ADDED", imported_slice("kept-1", "kept"))
    cache.handler("endpointslices")("ADDED", source_slice("src-1", "kept"))
    cache.listed_callback("endpointslices")(None)
    assert {k: list(v) for k, v in cache.imported.items()} == {("ns", "kept"): ["kept-1"]}
    assert {k: list(v) for k, v in cache.slices.items()} == {("ns", "kept"): ["src-1"]}
    assert changes.take() == [("ns", "kept"), ("ns", "kept"), ("ns", "gone"), ("ns", "gone")]
