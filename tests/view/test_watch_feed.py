"""The pure parts of ``view/watch.py``: the event feed, the server-side selectors, the filter
and the error (the listings and watches over HTTP are in test_watch.py)."""

from __future__ import annotations

import asyncio

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.cache.selectors import parse_selector
from endpointslice_operator.view.merge import EndpointView
from endpointslice_operator.view.model import Change
from endpointslice_operator.view.watch import (
    SELECTOR_KINDS,
    ViewError,
    _Feed,
    _server_selectors,
    service_filter,
)
from tests.view.objects import NS, endpoint, endpoint_slice, service


def drain(feed: _Feed) -> list[list[Change]]:
    found: list[list[Change]] = []
    while not feed.queue.empty():
        item = feed.queue.get_nowait()
        assert not isinstance(item, Exception)
        found.append(item)
    return found


def types(batches: list[list[Change]]) -> list[list[str]]:
    return [[c.type for c in batch] for batch in batches]


async def test_synced_once_every_kind_and_scope_is_listed_then_changes_flow() -> None:
    feed = _Feed(EndpointView(), [NS])
    services, slices = feed.handler("services"), feed.handler("endpointslices")
    feed.on_listing("services", NS)
    services(None, service("web"))
    feed.on_listed("services", NS)
    assert not feed.synced and drain(feed) == []
    feed.on_listing("endpointslices", NS)
    slices(None, endpoint_slice("web-1", "web", [endpoint("10.0.0.1")]))
    assert drain(feed) == []  # not synced yet: the snapshot will hold it
    feed.on_listed("endpointslices", NS)
    assert feed.synced
    (initial,) = drain(feed)
    assert [c.type for c in initial] == ["added", "synced"]
    slices("ADDED", endpoint_slice("web-2", "web", [endpoint("10.0.0.2")]))
    assert types(drain(feed)) == [["added"]]
    slices("DELETED", endpoint_slice("web-2", "web", []))
    assert types(drain(feed)) == [["removed"]]
    services("DELETED", service("web"))
    assert types(drain(feed)) == [["removed"]]
    services("ADDED", {"metadata": "junk"})  # no metadata: ignored
    slices("ADDED", endpoint_slice("other", "unknown", [endpoint("10.0.0.9")]))  # no change
    assert drain(feed) == []


async def test_a_relisting_removes_only_what_it_did_not_show_in_its_scope() -> None:
    feed = _Feed(EndpointView(), [NS, "other"])
    services, slices = feed.handler("services"), feed.handler("endpointslices")
    for scope in (NS, "other"):
        feed.on_listing("services", scope)
        services(None, service("web", namespace=scope))
        feed.on_listed("services", scope)
        feed.on_listing("endpointslices", scope)
        slices(None, endpoint_slice("a", "web", [endpoint("10.0.0.1")], namespace=scope))
        slices(None, endpoint_slice("b", "web", [endpoint("10.0.0.2")], namespace=scope))
        feed.on_listed("endpointslices", scope)
    assert feed.synced
    drain(feed)
    feed.on_listing("endpointslices", NS)
    slices(None, endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    feed.on_listed("endpointslices", NS)
    (removed,) = drain(feed)
    assert [(c.type, c.key.namespace, c.key.address) for c in removed] == [  # type: ignore[union-attr]
        ("removed", NS, "10.0.0.2")
    ]
    # a listing of the owners that no longer shows the Service removes its endpoints
    feed.on_listing("services", "other")
    feed.on_listed("services", "other")
    (gone,) = drain(feed)
    assert {c.key.address for c in gone} == {"10.0.0.1", "10.0.0.2"}  # type: ignore[union-attr]
    assert {c.key.namespace for c in gone} == {"other"}  # type: ignore[union-attr]
    # listed without a listing begun (nothing seen): everything of its scope goes
    feed.on_listed("endpointslices", NS)
    (rest,) = drain(feed)
    assert [c.key.address for c in rest] == ["10.0.0.1"]  # type: ignore[union-attr]


async def test_a_cluster_wide_listing_covers_every_namespace() -> None:
    feed = _Feed(EndpointView(), [None])
    services, slices = feed.handler("services"), feed.handler("endpointslices")
    feed.on_listing("services", None)
    services(None, service("web"))
    services(None, service("web", namespace="b"))
    feed.on_listed("services", None)
    feed.on_listing("endpointslices", None)
    slices(None, endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    slices(None, endpoint_slice("a", "web", [endpoint("10.0.0.2")], namespace="b"))
    feed.on_listed("endpointslices", None)
    drain(feed)
    feed.on_listing("endpointslices", None)
    slices(None, endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    feed.on_listed("endpointslices", None)
    (removed,) = drain(feed)
    assert [(c.key.namespace, c.key.address) for c in removed] == [("b", "10.0.0.2")]  # type: ignore[union-attr]


async def test_endpoint_selectors_are_the_owners_of_their_feed() -> None:
    feed = _Feed(EndpointView(endpoint_selectors=True), [NS], SELECTOR_KINDS)
    assert feed.owners == "endpointselectors"
    assert feed._pending == {("endpointselectors", NS), ("endpointslices", NS)}


async def test_a_watcher_failing_before_the_sync_is_the_generators_error() -> None:
    feed = _Feed(EndpointView(), [NS])

    async def fail() -> None:
        raise ApiError(403, {"reason": "Forbidden", "message": "no"})

    async def wait() -> None:
        await asyncio.sleep(3600)

    failed = asyncio.create_task(fail())
    await asyncio.gather(failed, return_exceptions=True)
    feed.on_done("services", failed)
    error = feed.queue.get_nowait()
    assert isinstance(error, ViewError) and error.kind == "services"
    assert str(error) == "the API server refused to list services: 403 Forbidden"

    waiting = asyncio.create_task(wait())
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    feed.on_done("services", waiting)  # cancelled: nothing to say
    ended = asyncio.create_task(asyncio.sleep(0))
    await ended
    feed.on_done("services", ended)  # ended without an error: nothing to say
    assert feed.queue.empty()
    feed.synced = True
    failed = asyncio.create_task(fail())
    await asyncio.gather(failed, return_exceptions=True)
    feed.on_done("services", failed)  # after the sync, failures are retried by the watcher
    assert feed.queue.empty()


def test_view_error_messages() -> None:
    assert str(ViewError("services", ApiError(404, None))) == (
        "the API server refused to list services: 404"
    )
    assert str(ViewError("endpointslices", OSError("refused"))) == (
        "cannot list endpointslices: OSError: refused"
    )


def test_server_selectors_narrow_by_name_and_label() -> None:
    assert _server_selectors(None, None) == {}
    assert _server_selectors("web", None) == {
        "endpointslices": {"label_selector": "kubernetes.io/service-name in (web)"},
        "services": {"field_selector": "metadata.name=web"},
    }
    assert _server_selectors(["ns/web", "db", "web"], "app=x") == {
        "endpointslices": {"label_selector": "kubernetes.io/service-name in (db,web)"},
        "services": {"label_selector": "app=x"},
    }
    # a name no label selector can hold: the slices are not narrowed
    assert _server_selectors(["web", "Not_A_Label"], None) == {}
    assert _server_selectors([], None) == {}
    assert _server_selectors(None, "  ") == {}
    assert _server_selectors(None, parse_selector("app=x")) == {}


def test_service_filter_from_arguments() -> None:
    one = service_filter(namespace="ns", services="web", selector="app=x", annotation_prefix="p")
    assert one.namespace == "ns" and one.services == frozenset({"web"})
    assert one.selector == parse_selector("app=x") and one.annotation == "p/view"
    many = service_filter(services=["a", "b"])
    assert many.services == frozenset({"a", "b"}) and many.selector is None
    selector = parse_selector("app=y")
    assert service_filter(selector=selector).selector is selector
    assert service_filter().services is None


async def test_a_listing_counts_only_objects_of_its_own_kind_as_seen() -> None:
    # a slice named like its Service: the Service's listing must not keep the slice
    feed = _Feed(EndpointView(), [NS])
    services, slices = feed.handler("services"), feed.handler("endpointslices")
    for kind in ("services", "endpointslices"):
        feed.on_listing(kind, NS)
    services(None, service("web"))
    slices(None, endpoint_slice("web", "web", [endpoint("10.0.0.1")]))
    slices(None, endpoint_slice("web-b", "web", [endpoint("10.0.0.2")]))
    for kind in ("services", "endpointslices"):
        feed.on_listed(kind, NS)
    drain(feed)
    feed.on_listing("services", NS)
    feed.on_listing("endpointslices", NS)
    services(None, service("web"))
    slices(None, endpoint_slice("web-b", "web", [endpoint("10.0.0.2")]))
    feed.on_listed("endpointslices", NS)
    (removed,) = drain(feed)
    assert [(c.type, c.key.address) for c in removed] == [("removed", "10.0.0.1")]  # type: ignore[union-attr]
