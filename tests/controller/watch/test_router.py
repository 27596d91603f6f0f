"""Event -> queue key rules (reference C.2), with a real ServiceQueue."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from kubernetes_asyncio.config import new_client_from_config

from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.cache.owner_kinds import tracker_for_owners
from endpointslice_operator.controller.watch.relist import RELIST_QUIET_PERIOD
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker
from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import NS, cluster
from tests.e2e.harness import pod as e2e_pod

ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
ME = "endpointslice-operator.io"


def service(name: str, selector: dict[str, str] | None, opted_in: bool = True) -> dict[str, Any]:
    annotations = {ENABLED: "true"} if opted_in else {}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "annotations": annotations,
        },
        "spec": {"selector": selector},
    }


def pod(
    name: str, labels: dict[str, str], rv: str, *, ready: bool = True, ip: str = "10.0.0.1"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"p-{name}",
            "labels": labels,
            "resourceVersion": rv,
        },
        "status": {
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


class Harness:
    def __init__(self, batch_period: float = 0.0, coalesce: bool = True) -> None:
        self.indexes = Indexes(
            enabled_annotation=ENABLED, selector_annotation=SELECTOR, managed_by=ME
        )
        self.tracker = EndpointSliceTracker()
        self.topology = TopologyCache()
        self.router = EventRouter(
            indexes=self.indexes,
            tracker=self.tracker,
            topology=self.topology,
            batch_period=batch_period,
            coalesce=coalesce,
        )
        self.queue = ServiceQueue(workers=1)
        self.router.queue = self.queue

    def fresh_queue(self) -> ServiceQueue:
        self.queue = ServiceQueue(workers=1)
        self.router.queue = self.queue
        return self.queue

    def queued(self) -> set[str]:
        return {key for key in ("ns/a", "ns/b", "ns/c", "ns/plain") if key in self.queue}


@pytest.fixture
async def h() -> Harness:
    harness = Harness()
    harness.router.on_service(None, service("a", {"app": "web"}))
    harness.router.on_service(None, service("b", {"tier": "front"}))
    harness.router.on_service(None, service("plain", {"app": "web"}, opted_in=False))
    harness.fresh_queue()
    return harness


async def test_service_events_queue_at_once(h: Harness) -> None:
    h.router.on_service("MODIFIED", service("a", {"app": "web"}))
    assert h.queued() == {"ns/a"}
    assert len(h.queue) == 1
    # Not opted in and never was, no slices of ours: nothing to do.
    h.router.on_service("MODIFIED", service("plain", {"app": "x"}, opted_in=False))
    assert h.queued() == {"ns/a"}
    # Opting out queues it (cleanup), and so does deletion.
    h.router.on_service("MODIFIED", service("b", {"tier": "front"}, opted_in=False))
    h.router.on_service("DELETED", service("a", {"app": "web"}))
    assert h.queued() == {"ns/a", "ns/b"}


async def test_pod_add_and_delete(h: Harness) -> None:
    h.router.on_pod("ADDED", pod("p1", {"app": "web", "tier": "front"}, "1"))
    assert h.queued() == {"ns/a", "ns/b"}
    h.fresh_queue()
    h.router.on_pod("DELETED", pod("p1", {"app": "web", "tier": "front"}, "2"))
    assert h.queued() == {"ns/a", "ns/b"}


async def test_pod_update_rules(h: Harness) -> None:
    h.router.on_pod("ADDED", pod("p1", {"app": "web"}, "1"))
    h.fresh_queue()
    # same resourceVersion: a resync, ignored
    h.router.on_pod("MODIFIED", pod("p1", {"app": "web"}, "1"))
    assert h.queued() == set()
    # irrelevant change (no readiness/IP/labels change)
    irrelevant = pod("p1", {"app": "web"}, "2")
    irrelevant["spec"] = {"nodeName": "n9"}
    h.router.on_pod("MODIFIED", irrelevant)
    assert h.queued() == set()
    # readiness flip: the Services matching the labels
    h.router.on_pod("MODIFIED", pod("p1", {"app": "web"}, "3", ready=False))
    assert h.queued() == {"ns/a"}
    h.fresh_queue()
    # labels only: symmetric difference (a loses it, b gains it)
    h.router.on_pod("MODIFIED", pod("p1", {"app": "web", "tier": "front"}, "4", ready=False))
    assert h.queued() == {"ns/b"}
    h.fresh_queue()
    h.router.on_pod("MODIFIED", pod("p1", {"tier": "front"}, "5", ready=False))
    assert h.queued() == {"ns/a"}
    h.fresh_queue()
    # labels and IP change: union
    h.router.on_pod("MODIFIED", pod("p1", {"app": "web"}, "6", ready=False, ip="10.0.0.2"))
    assert h.queued() == {"ns/a", "ns/b"}


async def test_pod_events_wait_for_the_batch_period_upstreams_way() -> None:
    h = Harness(batch_period=5.0, coalesce=False)
    h.router.on_service(None, service("a", {"app": "web"}))
    h.fresh_queue()
    h.router.on_pod("ADDED", pod("p1", {"app": "web"}, "1"))
    assert h.queue.delayed == 1
    assert len(h.queue) == 0


async def test_a_pod_event_for_a_quiet_service_is_queued_at_once() -> None:
    h = Harness(batch_period=5.0)
    h.router.on_service(None, service("a", {"app": "web"}))
    h.fresh_queue()
    h.router.on_pod("ADDED", pod("p1", {"app": "web"}, "1"))
    assert h.queue.delayed == 0
    assert len(h.queue) == 1


def _slice(
    name: str, uid: str, generation: int, *, managed_by: str = ME, service_name: str = "a"
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid,
            "generation": generation,
            "labels": {
                "kubernetes.io/service-name": service_name,
                "endpointslice.kubernetes.io/managed-by": managed_by,
            },
        }
    }


async def test_slice_events_use_the_tracker(h: Harness) -> None:
    ours = _slice("a-1", "s1", 1)
    h.tracker.update(ours)
    h.router.on_slice("ADDED", ours)
    assert h.queue.delayed == 0  # our own write coming back
    changed = copy.deepcopy(ours)
    changed["metadata"]["generation"] = 2
    h.router.on_slice("MODIFIED", changed)
    assert h.queue.delayed == 1  # someone else changed it: requeue after >= 1 s
    h.fresh_queue()
    h.tracker.expect_deletion(changed)
    h.router.on_slice("DELETED", changed)
    assert h.queue.delayed == 0
    other = _slice("a-2", "s2", 1)
    h.tracker.update(other)
    h.router.on_slice("ADDED", other)
    h.router.on_slice("DELETED", other)  # deleted by someone else
    assert h.queue.delayed == 1


async def test_upstream_slices_requeue_managed_service(h: Harness) -> None:
    h.router.on_slice("ADDED", _slice("a-x", "x1", 1, managed_by="endpointslice-controller.k8s.io"))
    assert h.queued() == {"ns/a"}
    assert h.indexes.slices.has_upstream("ns/a")


async def test_node_changes_refresh_topology(h: Harness) -> None:
    h.router.topology_live = True

    def node(name: str, zone: str, ready: str = "True") -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {
                "allocatable": {"cpu": "2"},
                "conditions": [{"type": "Ready", "status": ready}],
            },
        }

    h.router.on_node("ADDED", node("n1", "z1"))
    assert not h.topology.sufficient_node_info
    h.router.on_node("ADDED", node("n2", "z2"))
    assert h.topology.cpu_ratios_by_zone == {"z1": 0.5, "z2": 0.5}
    h.router.on_node("MODIFIED", node("n2", "z1"))
    assert h.topology.cpu_ratios_by_zone is None  # one zone left: insufficient


async def test_malformed_events_are_ignored(h: Harness) -> None:
    h.router.on_pod("ADDED", {"metadata": {}})
    h.router.on_service("ADDED", {"metadata": "nonsense"})
    h.router.on_slice("ADDED", {})
    h.router.on_node("ADDED", {"metadata": None})
    assert h.queued() == set()


@pytest.mark.looptime
async def test_relists_forget_what_the_latest_listing_left_out_and_the_server_lost(
    h: Harness,
) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        stored = {name: e2e_pod(emu, name, "10.1.0.1") for name in ("p1", "p2", "p3", "p6")}
        for obj in stored.values():
            h.router.on_pod(None, obj)
        for obj in emu.store.list("nodes"):
            h.router.on_node(None, obj)
        h.router.listing_began("pods", None)  # no re-listing before tracking starts
        h.router.on_pod(None, stored["p1"])
        api_client = await new_client_from_config(config_file=str(emu.kubeconfig_path))
        try:
            h.router.track_relists(api_client)  # the initial listings are in
            assert set(h.router.relistings) == {
                "services",
                "pods",
                "nodes",
                "endpoints",
                "endpointslices",
            }
            for name in ("p2", "p3"):
                emu.store.delete("pods", NS, name)
            # Listing 1 shows p1 and p2 (p3 went away unseen).
            h.router.on_pod(None, stored["p1"])
            h.router.on_pod(None, stored["p2"])
            assert h.router.relistings["pods"].running
            # Listing 2 starts before the first is verified: p2 is gone by then, p4 is new.
            h.router.on_pod(None, stored["p1"])
            p4 = e2e_pod(emu, "p4", "10.1.0.4")
            h.router.on_pod(None, p4)
            # A watch event after the listing counts as delivered too.
            p5 = e2e_pod(emu, "p5", "10.1.0.5")
            h.router.on_pod("ADDED", p5)
            # p6 was not delivered but is still there: kept.
            # A node deleted unseen: the list-watch's next listing delivers nothing.
            emu.store.delete("nodes", "", "node-b")
            h.router.listing_began("nodes", None)
            await asyncio.sleep(2 * RELIST_QUIET_PERIOD)
            assert sorted(name for _, name in h.indexes.pods.names()) == ["p1", "p4", "p5", "p6"]
            assert (h.router.relistings["pods"].checked, h.router.relistings["pods"].forgotten) == (
                3,
                2,
            )
            assert h.indexes.nodes.get("node-b") is None
            assert h.indexes.nodes.get("node-a") is not None
            h.router.cancel_relists()
        finally:
            await api_client.close()


async def test_a_recreated_pod_survives_late_events_of_its_predecessor(h: Harness) -> None:
    old = pod("web-0", {"app": "web"}, "10", ip="10.0.0.1")
    old["metadata"]["uid"] = "uid-old"
    new = pod("web-0", {"app": "web"}, "20", ip="10.0.0.2")
    new["metadata"]["uid"] = "uid-new"
    h.router.on_pod("ADDED", old)
    # Kopf handles each uid separately: the successor's ADDED may come before the
    # predecessor's last update and deletion.
    h.router.on_pod("ADDED", new)
    late = copy.deepcopy(old)
    late["metadata"]["resourceVersion"] = "15"
    late["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    h.router.on_pod("MODIFIED", late)
    h.router.on_pod("DELETED", late)
    record = h.indexes.pods.get("ns", "web-0")
    assert record is not None
    assert record.uid == "uid-new"
    assert record.pod_ips == ("10.0.0.2",)
    # its own deletion does remove it
    h.router.on_pod("DELETED", new)
    assert h.indexes.pods.get("ns", "web-0") is None


async def test_imported_slices_are_filed_under_their_service_import(h: Harness) -> None:
    """A slice of ours labelled with a source cluster (Multi-Cluster Services) is filed under
    its ServiceImport's key (``serviceimport:ns/web``), never under the derived Service its
    ``kubernetes.io/service-name`` names (that Service is not opted in: the Service path would
    delete it); a change nobody tracked queues the import key, the echo of a tracked write
    queues nothing."""
    h.router.tracker = tracker_for_owners()
    imported = _slice("derived-1", "i1", 1, service_name="derived-abc")
    imported["metadata"]["labels"]["multicluster.kubernetes.io/service-name"] = "web"
    imported["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"] = "east"
    h.router.on_slice("ADDED", imported)
    assert h.indexes.slices.ref("ns", "derived-1") is not None
    assert [s["metadata"]["name"] for s in h.indexes.slices.ours("serviceimport:ns/web")] == [
        "derived-1"
    ]
    assert h.indexes.slices.ours("ns/derived-abc") == []
    assert h.queue.delayed == 1  # nobody tracked it: the import key, after the slice delay
    assert "serviceimport:ns/web" in h.router.all_keys()
    assert "ns/derived-abc" not in h.router.all_keys()
    h.fresh_queue()
    written = copy.deepcopy(imported)
    written["metadata"]["generation"] = 2
    h.router.tracker.update(written)
    h.router.on_slice("MODIFIED", written)
    assert h.queue.delayed == 0  # our own write coming back
    h.router.on_slice("DELETED", written)  # deleted by someone else
    assert h.indexes.slices.ref("ns", "derived-1") is None
    assert h.queue.delayed == 1
    assert h.queued() == set()  # no Service key, the derived one included
