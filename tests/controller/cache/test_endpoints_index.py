"""The Endpoints index and the Endpoints event -> queue key rules, with a real ServiceQueue."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.controller.cache.endpoints_index import EndpointsIndex
from endpointslice_operator.controller.cache.indexes import Indexes
from endpointslice_operator.controller.watch.router import EventRouter
from endpointslice_operator.controller.work.queue import ServiceQueue
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

ME = "endpointslice-operator.io"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"


def endpoints(name: str, *, ours: bool = False, rv: str = "1") -> dict[str, Any]:
    labels = {MANAGED_BY: ME} if ours else {"hand": "made"}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"e-{name}",
            "resourceVersion": rv,
            "labels": labels,
            "managedFields": [{"manager": "x"}],
        },
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
    }


def test_ours_are_held_whole_others_by_name_unless_kept() -> None:
    kept: set[tuple[str, str]] = {("ns", "mirrored")}
    index = EndpointsIndex(ME, keep=lambda namespace, name: (namespace, name) in kept)
    index.put(endpoints("mine", ours=True))
    index.put(endpoints("theirs"))
    index.put(endpoints("mirrored"))
    mine, theirs, mirrored = (index.get("ns", n) for n in ("mine", "theirs", "mirrored"))
    assert mine is not None and "subsets" in mine and "managedFields" not in mine["metadata"]
    assert theirs is not None and "subsets" not in theirs
    assert theirs["metadata"]["labels"] == {"hand": "made"}
    assert mirrored is not None and "subsets" in mirrored
    assert (index.is_full("ns", "mine"), index.is_full("ns", "theirs")) == (True, False)
    assert index.is_ours(mine) and not index.is_ours(theirs)
    assert index.ours() == [("ns", "mine")]
    index.put(endpoints("theirs"), full=True)
    assert index.is_full("ns", "theirs")
    index.remove(endpoints("theirs"))
    assert index.get("ns", "theirs") is None and not index.is_full("ns", "theirs")
    assert len(index) == 2


def harness() -> tuple[EventRouter, ServiceQueue, Indexes]:
    indexes = Indexes(enabled_annotation=ENABLED, selector_annotation=SELECTOR, managed_by=ME)
    router = EventRouter(
        indexes=indexes, tracker=EndpointSliceTracker(), topology=None, batch_period=0.0
    )
    queue = ServiceQueue(workers=1)
    router.queue = queue
    return router, queue, indexes


def managed_service(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}",
                     "annotations": {ENABLED: "true"}},
        "spec": {"selector": {"app": name}},
    }  # fmt: skip


async def test_endpoints_events_queue_the_service_when_it_matters() -> None:
    router, queue, indexes = harness()
    router.on_service(None, managed_service("a"))
    assert "ns/a" in queue
    fresh = ServiceQueue(workers=1)
    router.queue = fresh
    # someone else's appears for a managed Service: queued (it is in the way)
    router.on_endpoints("ADDED", endpoints("a"))
    assert "ns/a" in fresh
    # for a Service we do not know: not queued
    router.on_endpoints("ADDED", endpoints("unknown"))
    assert "ns/unknown" not in fresh
    # ours modified (our own write coming back: the writer put its answer in the index)
    router.queue = fresh = ServiceQueue(workers=1)
    router.on_endpoints("ADDED", endpoints("b", ours=True))
    router.queue = fresh = ServiceQueue(workers=1)
    indexes.endpoints.put(endpoints("b", ours=True, rv="2"))
    router.on_endpoints("MODIFIED", endpoints("b", ours=True, rv="2"))
    assert "ns/b" not in fresh and fresh.delayed == 0
    # ours changed by someone else (another resourceVersion): repaired after 1 s
    router.on_endpoints("MODIFIED", endpoints("b", ours=True, rv="3"))
    assert fresh.delayed == 1
    # ours deleted: queued even without a Service (to find out nothing is wanted)
    router.on_endpoints("DELETED", endpoints("b", ours=True, rv="2"))
    assert "ns/b" in fresh
    assert indexes.endpoints.get("ns", "b") is None
    # a Service that mirrors: every change of its Endpoints queues it
    router.queue = fresh = ServiceQueue(workers=1)
    router.mirrors = lambda key: key == "ns/m"
    router.on_endpoints("MODIFIED", endpoints("m", rv="7"))
    assert "ns/m" in fresh
