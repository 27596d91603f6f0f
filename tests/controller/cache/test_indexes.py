"""The in-memory indexes: slim projections, selector lookups both ways, slice ownership."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from endpointslice_operator.controller.cache.indexes import Indexes, slim_node, slim_service
from endpointslice_operator.controller.cache.selectors import parse_selector
from endpointslice_operator.reconciler.cached_slice import CachedSlice
from endpointslice_operator.reconciler.labels import LABEL_MANAGED_BY
from endpointslice_operator.reconciler.records import pod_record
from endpointslice_operator.reconciler.slices import SHARED_PARSE_CACHE

ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
ME = "endpointslice-operator.io"


def make_indexes() -> Indexes:
    return Indexes(enabled_annotation=ENABLED, selector_annotation=SELECTOR, managed_by=ME)


def service(
    name: str, selector: dict[str, str] | None = None, **annotations: str
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": {ENABLED: "true", **annotations},
            "labels": {"team": "a"},
        },
        "spec": {"selector": selector, "ports": [{"port": 80}], "clusterIP": "10.0.0.1"},
    }


def pod(name: str, labels: dict[str, str], namespace: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"p-{name}", "labels": labels},
        "status": {"podIPs": [{"ip": "10.1.0.1"}]},
    }


def test_slim_service_keeps_what_the_reconciler_reads() -> None:
    body = service("web", {"app": "web"})
    body["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "x" * 999
    body["metadata"]["annotations"]["service.kubernetes.io/topology-mode"] = "Auto"
    body["metadata"]["managedFields"] = [{"big": "thing"}]
    body["status"] = {"loadBalancer": {}}
    slim = slim_service(body, (ENABLED, SELECTOR))
    assert slim["metadata"]["annotations"] == {
        ENABLED: "true",
        "service.kubernetes.io/topology-mode": "Auto",
    }
    assert "managedFields" not in slim["metadata"]
    assert "status" not in slim
    assert slim["spec"]["clusterIP"] == "10.0.0.1"
    assert slim["metadata"]["labels"] == {"team": "a"}


def test_slim_node() -> None:
    node = {
        "metadata": {
            "name": "n1",
            "labels": {"topology.kubernetes.io/zone": "z1", "kubernetes.io/os": "linux"},
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "1Gi"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "images": [{"names": ["a"]}],
        },
    }
    assert slim_node(node) == {
        "metadata": {
            "name": "n1",
            "uid": None,
            "resourceVersion": None,
            "labels": {"topology.kubernetes.io/zone": "z1"},
        },
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "4"},
        },
    }


def test_services_selecting_a_pod() -> None:
    idx = make_indexes()
    idx.services.upsert(service("web", {"app": "web"}))
    idx.services.upsert(service("canary", None, **{SELECTOR: "app in (web,api),track"}))
    idx.services.upsert(service("nopos", None, **{SELECTOR: "!legacy"}))
    idx.services.upsert(service("bad", None, **{SELECTOR: "app in"}))
    unmanaged = service("plain", {"app": "web"})
    del unmanaged["metadata"]["annotations"][ENABLED]
    idx.services.upsert(unmanaged)
    assert idx.services.selecting("ns", {"app": "web"}) == {"ns/web", "ns/nopos"}
    assert idx.services.selecting("ns", {"app": "web", "track": "x"}) == {
        "ns/web",
        "ns/canary",
        "ns/nopos",
    }
    assert idx.services.selecting("ns", {"app": "web", "legacy": "1"}) == {"ns/web"}
    assert idx.services.selecting("other", {"app": "web"}) == set()
    # A selector change moves the Service between buckets.
    idx.services.upsert(service("web", {"app": "api"}))
    assert "ns/web" not in idx.services.selecting("ns", {"app": "web"})
    assert "ns/web" in idx.services.selecting("ns", {"app": "api"})
    idx.services.remove("ns", "web")
    assert idx.services.selecting("ns", {"app": "api"}) == {"ns/nopos"}
    assert len(idx.services) == 4


def test_pods_selected_by_a_selector() -> None:
    idx = make_indexes()
    for i in range(5):
        idx.pods.put(pod_record(pod(f"web-{i}", {"app": "web", "shard": str(i % 2)})))
    idx.pods.put(pod_record(pod("db-0", {"app": "db"})))
    idx.pods.put(pod_record(pod("web-x", {"app": "web"}, namespace="other")))
    idx.services.upsert(service("web", {"app": "web", "shard": "1"}))
    entry = idx.services.get("ns/web")
    assert entry is not None and entry.decision.selector is not None
    assert [p.name for p in idx.pods.select("ns", entry.decision.selector)] == ["web-1", "web-3"]
    # relabel web-1 out of the selection, delete web-3
    idx.pods.put(pod_record(pod("web-1", {"app": "web", "shard": "0"})))
    idx.pods.remove("ns", "web-3")
    assert idx.pods.select("ns", entry.decision.selector) == []
    assert len(idx.pods) == 6
    assert idx.pods.get("other", "web-x") is not None


def _slice(name: str, service_name: str | None, managed_by: str | None) -> dict[str, Any]:
    labels = {}
    if service_name is not None:
        labels["kubernetes.io/service-name"] = service_name
    if managed_by is not None:
        labels["endpointslice.kubernetes.io/managed-by"] = managed_by
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels}}


def test_slices_by_owner() -> None:
    idx = make_indexes()
    idx.slices.put(_slice("web-1", "web", ME))
    idx.slices.put(_slice("web-2", "web", "endpointslice-controller.k8s.io"))
    idx.slices.put(_slice("web-3", "web", "someone-else"))
    idx.slices.put(_slice("orphan", None, ME))
    assert [s["metadata"]["name"] for s in idx.slices.ours("ns/web")] == ["web-1"]
    assert idx.slices.has_upstream("ns/web")
    assert len(idx.slices) == 4
    # managed-by flips away from us: no longer ours
    previous = idx.slices.put(_slice("web-1", "web", "someone-else"))
    assert previous is not None and previous.managed_by == ME
    assert idx.slices.ours("ns/web") == []
    idx.slices.remove(_slice("web-2", "web", "endpointslice-controller.k8s.io"))
    assert not idx.slices.has_upstream("ns/web")
    assert idx.counts()["endpointslices"] == 3


_LABEL_VALUES = ("a", "b", "c")


def _labels(min_size: int, max_size: int) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(
        st.sampled_from(("app", "tier", "hash")),
        st.sampled_from(_LABEL_VALUES),
        min_size=min_size,
        max_size=max_size,
    )


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("put"), st.integers(0, 5), _labels(0, 3)),
            st.tuples(st.just("remove"), st.integers(0, 5), st.just({})),
            st.tuples(st.just("select"), st.integers(0, 5), _labels(1, 2)),
        ),
        max_size=40,
    )
)
def test_label_buckets_built_on_demand_select_like_a_full_scan(
    steps: list[tuple[str, int, dict[str, str]]],
) -> None:
    """Buckets exist only for keys a selector asked for, and selection always equals a scan."""
    idx = make_indexes()
    model: dict[str, dict[str, str]] = {}
    for action, number, labels in steps:
        name = f"pod-{number}"
        if action == "put":
            idx.pods.put(pod_record(pod(name, labels)))
            model[name] = labels
        elif action == "remove":
            idx.pods.remove("ns", name)
            model.pop(name, None)
        else:
            expected = sorted(
                n for n, have in model.items() if all(have.get(k) == v for k, v in labels.items())
            )
            selector = parse_selector(",".join(f"{k}={v}" for k, v in labels.items()))
            assert [p.name for p in idx.pods.select("ns", selector)] == expected
    assert len(idx.pods) == len(model)


def test_labels_no_selector_uses_get_no_buckets() -> None:
    idx = make_indexes()
    for i in range(50):
        labels = {"app": "web", "statefulset.kubernetes.io/pod-name": f"web-{i}"}
        idx.pods.put(pod_record(pod(f"web-{i}", labels)))
    assert len(idx.pods.select("ns", parse_selector("app=web"))) == 50
    ns = idx.pods._namespaces["ns"]
    assert ns.indexed == {"app"}
    assert set(ns.by_label) == {("app", "web")}


def _endpoint_slice(name: str, uid: str, pods: list[str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "resourceVersion": "7",
            "labels": {"kubernetes.io/service-name": "web", LABEL_MANAGED_BY: ME},
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": ["10.1.0.1"],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": "node-1",
                "targetRef": {"kind": "Pod", "namespace": "ns", "name": p, "uid": f"p-{p}"},
            }
            for p in pods
        ],
    }


def _decoded_pod(name: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(json.dumps(pod(name, {"app": "web"})))
    return decoded


def _shares_record_strings(held: CachedSlice, record: Any) -> bool:
    _, keys, states = held.parsed
    return (
        keys[0][3] is record.name
        and states[0][7] is record.name
        and states[0][8] is record.uid
        and keys[0][0][0] is record.pod_ips[0]
    )


def test_our_slices_are_held_parsed_and_equal() -> None:
    idx = make_indexes()
    idx.pods.put(pod_record(_decoded_pod("web-0")))
    record = idx.pods.get("ns", "web-0")
    decoded = json.loads(json.dumps(_endpoint_slice("web-x", "s-1", ["web-0", "web-1"])))
    idx.slices.put(decoded)
    (held,) = idx.slices.ours("ns/web")
    assert isinstance(held, CachedSlice) and held.endpoints_rebuilt
    assert held == _endpoint_slice("web-x", "s-1", ["web-0", "web-1"])
    # The parse holds the pod record's own strings (found in the pod index), not copies.
    assert _shares_record_strings(held, record)
    # A new version of the pod keeps them, so the slice keeps sharing them.
    updated = _decoded_pod("web-0")
    updated["metadata"]["resourceVersion"] = "9"
    new = pod_record(updated, record)
    assert new is not None and record is not None
    assert new.name is record.name and new.uid is record.uid and new.pod_ips is record.pod_ips


def test_slices_listed_before_their_pods_share_their_strings_once_told() -> None:
    idx = make_indexes()
    idx.slices.put(json.loads(json.dumps(_endpoint_slice("web-x", "s-1", ["web-0"]))))
    idx.pods.put(pod_record(_decoded_pod("web-0")))
    record = idx.pods.get("ns", "web-0")
    (held,) = idx.slices.ours("ns/web")
    assert isinstance(held, CachedSlice)
    assert not _shares_record_strings(held, record)
    before = dict(held)
    idx.slices.share_pod_strings()
    assert _shares_record_strings(held, record) and held == before


def test_a_pod_of_another_uid_lends_no_strings() -> None:
    idx = make_indexes()
    other = _decoded_pod("web-0")
    other["metadata"]["uid"] = "a-new-pod-of-that-name"
    idx.pods.put(pod_record(other))
    idx.slices.put(json.loads(json.dumps(_endpoint_slice("web-x", "s-1", ["web-0"]))))
    (held,) = idx.slices.ours("ns/web")
    assert (
        isinstance(held, CachedSlice) and held.parsed[2][0][8] == "p-web-0"
    )  # the slice's own uid, not the record's


def test_our_slices_never_enter_the_shared_parse_cache() -> None:
    """The planner reads a held slice's parse from the slice itself: nothing to cache, nothing
    left behind in the process-wide parse cache when the slice is deleted."""
    idx = make_indexes()
    endpoint_slice = _endpoint_slice("web-x", "uid-parse-cache-test", ["web-0"])
    idx.slices.put(endpoint_slice)
    (held,) = idx.slices.ours("ns/web")
    assert isinstance(held, CachedSlice)
    view = SHARED_PARSE_CACHE.view(held)
    assert view.keys == held.parsed[1] and view.states == held.parsed[2]
    assert "uid-parse-cache-test" not in SHARED_PARSE_CACHE._entries


def test_the_same_slice_at_the_same_version_is_not_stored_again() -> None:
    idx = make_indexes()
    idx.slices.put(_endpoint_slice("web-x", "s-1", ["web-0"]))
    (held,) = idx.slices.ours("ns/web")
    idx.slices.put(_endpoint_slice("web-x", "s-1", ["web-0"]))
    assert idx.slices.ours("ns/web")[0] is held
    newer = _endpoint_slice("web-x", "s-1", ["web-0", "web-1"])
    newer["metadata"]["resourceVersion"] = "8"
    idx.slices.put(newer)
    assert idx.slices.ours("ns/web") == [newer]
