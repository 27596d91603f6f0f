"""The view's merge semantics (pure: objects in, changes out), as kube-proxy merges slices."""

from __future__ import annotations

import dataclasses
import random

import pytest

from endpointslice_operator.controller.cache.selectors import parse_selector
from endpointslice_operator.view import (
    Change,
    Endpoint,
    EndpointGroup,
    EndpointKey,
    EndpointView,
    Gatherer,
    ServiceFilter,
    ServicePortKey,
)
from endpointslice_operator.view.model import address_sort_key, parse_service
from tests.view.objects import KCM, NS, OURS, endpoint, endpoint_slice, service


def key(address: str, port: int = 80, port_name: str = "http", svc: str = "web") -> EndpointKey:
    return EndpointKey(NS, svc, port_name, port, "TCP", address)


def summary(changes: list[Change]) -> list[tuple[str, str, int, str, bool, str]]:
    """(type, port name, service port, address, ready, slice) per change."""
    found: list[tuple[str, str, int, str, bool, str]] = []
    for change in changes:
        assert isinstance(change.key, EndpointKey) and isinstance(change.endpoint, Endpoint)
        found.append(
            (
                change.type,
                change.key.port_name,
                change.key.port,
                change.key.address,
                change.endpoint.ready,
                change.endpoint.slice,
            )
        )
    return found


def test_a_service_port_joined_with_its_slice_gives_one_record_per_ready_address() -> None:
    view = EndpointView()
    assert view.apply_slice(endpoint_slice("web-1", "web", [endpoint("10.0.0.1")])) == []
    changes = view.apply_service(service("web"))
    assert summary(changes) == [("added", "http", 80, "10.0.0.1", True, "web-1")]
    record = view.current[key("10.0.0.1")]
    assert record.target_port == 8080 and record.node == "node-a"
    assert view.snapshot() == changes


def test_every_field_a_consumer_needs() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(
        endpoint_slice(
            "web-1",
            "web",
            [endpoint("10.0.0.1", zone="z1", pod="web-abc", hints=["z2", "z1"], node="n1")],
        )
    )
    assert view.current[key("10.0.0.1")] == Endpoint(
        address="10.0.0.1",
        target_port=8080,
        ready=True,
        serving=True,
        terminating=False,
        node="n1",
        zone="z1",
        hints=("z1", "z2"),
        pod="web-abc",
        slice="web-1",
    )
    change = view.snapshot()[0]
    assert change.to_json() == {
        "type": "added",
        "key": {
            "namespace": NS,
            "service": "web",
            "port_name": "http",
            "port": 80,
            "protocol": "TCP",
            "address": "10.0.0.1",
        },
        "endpoint": {
            "address": "10.0.0.1",
            "target_port": 8080,
            "ready": True,
            "serving": True,
            "terminating": False,
            "node": "n1",
            "zone": "z1",
            "hints": ["z1", "z2"],
            "pod": "web-abc",
            "slice": "web-1",
        },
    }


def test_slices_of_two_managers_are_merged_and_managed_by_narrows() -> None:
    for managed_by, expected in ((None, {"10.0.0.1", "10.0.0.2"}), (OURS, {"10.0.0.2"})):
        view = EndpointView(managed_by=managed_by)
        view.apply_service(service("web"))
        view.apply_slice(endpoint_slice("web-kcm", "web", [endpoint("10.0.0.1")], managed_by=KCM))
        view.apply_slice(endpoint_slice("web-op", "web", [endpoint("10.0.0.2")], managed_by=OURS))
        assert {k.address for k in view.current} == expected


def test_an_address_in_two_slices_is_one_endpoint_and_ready_wins() -> None:
    view = EndpointView(policy="all")
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1", ready=True)]))
    # The other slice (sorting first) lists it not ready: the ready one still wins.
    assert view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1", ready=False)])) == []
    assert view.current[key("10.0.0.1")].slice == "b"
    # The ready one goes: the not-ready duplicate is what is left.
    changes = view.delete_slice(NS, "b")
    assert summary(changes) == [("updated", "http", 80, "10.0.0.1", False, "a")]
    # Both ready: the slice whose name sorts first, whatever the order they came in.
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1")]))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    assert view.current[key("10.0.0.1")].slice == "a"


def test_a_duplicate_that_stops_being_ready_does_not_remove_the_endpoint() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1")]))
    changes = view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1", ready=False)]))
    assert summary(changes) == [("updated", "http", 80, "10.0.0.1", True, "b")]
    changes = view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1", ready=False)]))
    assert summary(changes) == [("removed", "http", 80, "10.0.0.1", True, "b")]
    assert view.current == {}


def test_a_service_port_maps_to_the_slice_ports_of_the_same_name() -> None:
    view = EndpointView()
    view.apply_service(service("web", [("http", 80), ("metrics", 9090)]))
    view.apply_slice(
        endpoint_slice("a", "web", [endpoint("10.0.0.1")], ports=[("http", 8080), ("admin", 7)])
    )
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.2")], ports=[("metrics", 9100)]))
    assert sorted(
        (k.port_name, k.port, k.address, e.target_port) for k, e in view.current.items()
    ) == [
        ("http", 80, "10.0.0.1", 8080),
        ("metrics", 9090, "10.0.0.2", 9100),
    ]


def test_a_port_renamed_in_the_slice_moves_its_endpoints() -> None:
    view = EndpointView()
    view.apply_service(service("web", [("http", 80), ("web", 80 + 1)]))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1")], ports=[("http", 8080)]))
    changes = view.apply_slice(
        endpoint_slice("a", "web", [endpoint("10.0.0.1")], ports=[("web", 8080)])
    )
    assert summary(changes) == [
        ("removed", "http", 80, "10.0.0.1", True, "a"),
        ("added", "web", 81, "10.0.0.1", True, "a"),
    ]


def test_a_port_renamed_or_renumbered_in_the_service() -> None:
    view = EndpointView()
    view.apply_service(service("web", [("http", 80)]))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1")], ports=[("http", 8080)]))
    changes = view.apply_service(service("web", [("http", 8000)]))
    assert summary(changes) == [
        ("removed", "http", 80, "10.0.0.1", True, "a"),
        ("added", "http", 8000, "10.0.0.1", True, "a"),
    ]
    # Renamed in the Service only: no slice port of that name, nothing shown.
    changes = view.apply_service(service("web", [("www", 8000)]))
    assert summary(changes) == [("removed", "http", 8000, "10.0.0.1", True, "a")]
    assert view.current == {}


def test_slice_deletion_removes_only_what_no_other_slice_lists() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1"), endpoint("10.0.0.2")]))
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.2"), endpoint("10.0.0.3")]))
    changes = view.delete_slice(NS, "a")
    assert summary(changes) == [
        ("removed", "http", 80, "10.0.0.1", True, "a"),
        ("updated", "http", 80, "10.0.0.2", True, "b"),
    ]
    assert view.delete_slice(NS, "a") == []
    assert {k.address for k in view.current} == {"10.0.0.2", "10.0.0.3"}


def test_service_deletion_and_unannotation_remove_its_endpoints() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1")]))
    changes = view.apply_service(service("web", annotated=False))
    assert [c.type for c in changes] == ["removed"]
    assert [c.type for c in view.apply_service(service("web"))] == ["added"]
    assert [c.type for c in view.delete_service(NS, "web")] == ["removed"]
    assert view.current == {}


def test_policies() -> None:
    endpoints = [
        endpoint("10.0.0.1"),
        endpoint("10.0.0.2", ready=False, serving=True, terminating=True),
        endpoint("10.0.0.3", ready=False, serving=False, terminating=True),
        endpoint("10.0.0.4", ready=False, serving=False, terminating=False),
    ]
    shown = {}
    for policy in ("ready", "serving", "all"):
        view = EndpointView(policy=policy)
        view.apply_service(service("web"))
        view.apply_slice(endpoint_slice("a", "web", endpoints))
        shown[policy] = sorted(k.address for k in view.current)
    assert shown == {
        "ready": ["10.0.0.1"],
        "serving": ["10.0.0.1"],  # a ready endpoint exists: no fallback
        "all": ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"],
    }


def test_serving_falls_back_to_terminating_endpoints_when_none_is_ready() -> None:
    view = EndpointView(policy="serving")
    view.apply_service(service("web"))
    view.apply_slice(
        endpoint_slice(
            "a", "web", [endpoint("10.0.0.2", ready=False, serving=True, terminating=True)]
        )
    )
    view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1")]))
    assert sorted(k.address for k in view.current) == ["10.0.0.1"]
    # The last ready endpoint goes: kube-proxy falls back to the serving, terminating one.
    changes = view.delete_slice(NS, "b")
    assert summary(changes) == [
        ("removed", "http", 80, "10.0.0.1", True, "b"),
        ("added", "http", 80, "10.0.0.2", False, "a"),
    ]
    # A ready one comes back: the fallback ends.
    changes = view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.3")]))
    assert summary(changes) == [
        ("removed", "http", 80, "10.0.0.2", False, "a"),
        ("added", "http", 80, "10.0.0.3", True, "b"),
    ]


def test_absent_conditions_read_as_kube_proxy_reads_them() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1", ready=None)]))
    record = view.current[key("10.0.0.1")]
    assert (record.ready, record.serving, record.terminating) == (True, True, False)


def test_what_kube_proxy_ignores_is_ignored() -> None:
    view = EndpointView(policy="all")
    view.apply_service(service("web", [("", 80)]))
    unlabelled = endpoint_slice("a", "web", [endpoint("10.0.0.1")], ports=[("", 8080)])
    del unlabelled["metadata"]["labels"]["kubernetes.io/service-name"]
    assert view.apply_slice(unlabelled) == []
    nameless = endpoint_slice("b", "web", [endpoint("10.0.0.2")], ports=[("", 8080)])
    del nameless["ports"][0]["name"]
    assert view.apply_slice(nameless) == []
    no_port = endpoint_slice("c", "web", [endpoint("10.0.0.3")], ports=[("", 0)])
    assert view.apply_slice(no_port) == []
    no_address = endpoint_slice("d", "web", [{"addresses": []}], ports=[("", 8080)])
    assert view.apply_slice(no_address) == []
    garbage = endpoint_slice("e", "web", [{"addresses": "x"}], ports=[("", 8080)])
    garbage["endpoints"].append("not a dict")
    assert view.apply_slice(garbage) == []
    assert view.apply_slice({"metadata": "nonsense"}) == []
    assert view.apply_service({"spec": {"ports": "nonsense"}}) == []
    # An unnamed port ("" as kube-controller-manager writes it) joins the unnamed service port.
    view.apply_slice(endpoint_slice("f", "web", [endpoint("10.0.0.6")], ports=[("", 8080)]))
    assert [k.address for k in view.current] == ["10.0.0.6"]


def test_services_and_selector_choose_services_without_the_annotation() -> None:
    objects = [
        service("web", annotated=False, labels={"tier": "front"}),
        service("db", annotated=False, labels={"tier": "back"}),
        service("api", annotated=True),
        service("web", annotated=False, namespace="other"),
    ]
    slices = [
        endpoint_slice("web-1", "web", [endpoint("10.0.0.1")]),
        endpoint_slice("db-1", "db", [endpoint("10.0.0.2")]),
        endpoint_slice("api-1", "api", [endpoint("10.0.0.3")]),
        endpoint_slice("web-1", "web", [endpoint("10.0.1.1")], namespace="other"),
    ]
    cases = [
        (ServiceFilter(), {"10.0.0.3"}),
        (ServiceFilter(services=frozenset({"web"})), {"10.0.0.1", "10.0.1.1"}),
        (ServiceFilter(services=frozenset({"other/web"})), {"10.0.1.1"}),
        (ServiceFilter(namespace=NS, services=frozenset({"web"})), {"10.0.0.1"}),
        (ServiceFilter(selector=parse_selector("tier in (front,back)")), {"10.0.0.1", "10.0.0.2"}),
    ]
    for service_filter, expected in cases:
        view = EndpointView(service_filter=service_filter)
        for obj in [*objects, *slices]:
            view.apply_service(obj) if obj["kind"] == "Service" else view.apply_slice(obj)
        assert {k.address for k in view.current} == expected, service_filter


def test_an_unchanged_slice_listed_again_is_no_change() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    obj = endpoint_slice("a", "web", [endpoint("10.0.0.1")], version="7")
    assert len(view.apply_slice(obj)) == 1
    assert view.apply_slice(obj) == []


def test_gather_one_record_per_service_port_with_sorted_addresses() -> None:
    view = EndpointView()
    gatherer = Gatherer()
    gatherer.feed(view.apply_service(service("web")))
    changes = gatherer.feed(
        view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.10"), endpoint("10.0.0.9")]))
    )
    port_key = ServicePortKey(NS, "web", "http", 80, "TCP")
    assert [(c.type, c.key) for c in changes] == [("added", port_key)]
    assert changes[0].to_json()["endpoint"]["addresses"] == ["10.0.0.9", "10.0.0.10"]
    changes = gatherer.feed(view.apply_slice(endpoint_slice("b", "web", [endpoint("10.0.0.1")])))
    assert [c.type for c in changes] == ["updated"]
    assert changes[0].endpoint is not None
    assert changes[0].endpoint.addresses == ("10.0.0.1", "10.0.0.9", "10.0.0.10")  # type: ignore[union-attr]
    gatherer.feed(view.delete_slice(NS, "a"))
    changes = gatherer.feed(view.delete_slice(NS, "b"))
    assert [c.type for c in changes] == ["removed"]
    assert gatherer.snapshot() == []


@pytest.mark.parametrize("seed", range(8))
def test_incremental_view_equals_a_view_built_from_scratch(seed: int) -> None:
    """Random slice updates and deletions and Service port changes, in random order: the
    changes add up to the view, and after every step the view equals one built from scratch
    from the objects of that moment."""
    rng = random.Random(seed)
    policy = rng.choice(["ready", "serving", "all"])
    view = EndpointView(policy=policy)  # type: ignore[arg-type]
    shown: dict[EndpointKey, Endpoint] = {}
    busy = 0
    gatherer = Gatherer()
    slices: dict[str, dict[str, object]] = {}
    services = {"web": service("web", [("http", 80), ("grpc", 90)])}
    for obj in services.values():
        view.apply_service(obj)
    variants = [
        service("web", [("http", 80), ("grpc", 90)]),
        service("web", [("http", 8000)]),  # renumbered, one port gone
        service("web", [("grpc", 80), ("http", 90)]),  # names swapped
        service("web", [("http", 80), ("grpc", 90)], annotated=False),  # out of the view
    ]
    for step in range(300):
        name = f"s{rng.randrange(6)}"
        if rng.random() < 0.1:
            services["web"] = rng.choice(variants)
            changes = view.apply_service(services["web"])
        elif rng.random() < 0.2:
            slices.pop(name, None)
            changes = view.delete_slice(NS, name)
        else:
            endpoints = [
                endpoint(
                    f"10.0.0.{rng.randrange(8)}",
                    ready=rng.random() < 0.6,
                    serving=rng.random() < 0.7,
                    terminating=rng.random() < 0.3,
                )
                for _ in range(rng.randrange(4))
            ]
            ports = rng.choice([[("http", 8080)], [("grpc", 9090)], [("http", 8081), ("grpc", 9)]])
            slices[name] = endpoint_slice(
                name, "web", endpoints, ports=ports, version=str(step + 1)
            )
            changes = view.apply_slice(slices[name])
        for change in changes:
            assert isinstance(change.key, EndpointKey)
            if change.type == "removed":
                assert change.key in shown
                del shown[change.key]
            else:
                assert (change.key in shown) == (change.type == "updated")
                assert isinstance(change.endpoint, Endpoint)
                shown[change.key] = change.endpoint
        assert shown == view.current
        busy += bool(shown)
        gatherer.feed(changes)
        expected: dict[ServicePortKey, list[Endpoint]] = {}
        for key, value in view.current.items():
            expected.setdefault(ServicePortKey(*key[:5]), []).append(value)
        assert {c.key: c.endpoint for c in gatherer.snapshot()} == {
            port_key: EndpointGroup(tuple(e.address for e in ordered), tuple(ordered))
            for port_key, values in expected.items()
            for ordered in [sorted(values, key=lambda e: address_sort_key(e.address))]
        }
        # At every step, not only at the end: a candidate lost on the way (an address in
        # three slices, one of them gone) only shows once it should win.
        fresh = EndpointView(policy=policy)  # type: ignore[arg-type]
        for obj in reversed(list(slices.values())):
            fresh.apply_slice(obj)
        for obj in services.values():
            fresh.apply_service(obj)
        assert fresh.current == view.current, step
    assert busy > 50  # the view was not empty most of the time: something was compared


def test_gather_in_bulk_and_one_by_one_agree() -> None:
    """Many changes of one port at once take the sort path, few the bisection path."""
    view = EndpointView()
    view.apply_service(service("web"))
    addresses = [f"10.0.{i % 3}.{i}" for i in range(100)] + ["fd00::1", "10.0.0.255"]
    bulk = Gatherer()
    bulk.feed(view.apply_slice(endpoint_slice("a", "web", [endpoint(a) for a in addresses])))
    single = Gatherer()
    for change in view.snapshot():
        single.feed([change])
    assert bulk.snapshot() == single.snapshot()
    (record,) = bulk.snapshot()
    assert isinstance(record.endpoint, EndpointGroup)
    assert record.endpoint.addresses[0] == "10.0.0.0" and record.endpoint.addresses[-1] == "fd00::1"
    assert list(record.endpoint.addresses) == sorted(addresses, key=address_sort_key)
    # Then one by one on both: the same again.
    changes = view.apply_slice(endpoint_slice("a", "web", [endpoint(a) for a in addresses[1:]]))
    assert bulk.feed(changes) == single.feed(changes)
    assert bulk.snapshot() == single.snapshot()


def test_service_filter_selects_only_within_its_namespace_and_names() -> None:
    """``ServiceFilter.selects`` is public: it is False for a Service outside the filter, even
    one the rest of the filter (selector, annotation) would take."""
    web = parse_service(service("web", annotated=True, labels={"tier": "front"}))
    other = parse_service(service("web", annotated=True, namespace="other"))
    db = parse_service(service("db", annotated=True, labels={"tier": "front"}))
    assert web is not None and other is not None and db is not None
    front = parse_selector("tier=front")
    assert ServiceFilter(namespace=NS).selects(web)
    assert not ServiceFilter(namespace=NS).selects(other)
    assert not ServiceFilter(namespace=NS, selector=front).selects(other)
    assert ServiceFilter(services=frozenset({"web"}), selector=front).selects(web)
    assert not ServiceFilter(services=frozenset({"web"}), selector=front).selects(db)
    assert not ServiceFilter(services=frozenset({f"{NS}/db"})).selects(web)
    assert ServiceFilter(services=frozenset({f"{NS}/db"})).selects(db)
    # The annotation decides only when neither names nor a selector are given.
    plain = parse_service(service("web", annotated=False))
    assert plain is not None
    assert not ServiceFilter().selects(plain)
    assert ServiceFilter().selects(web)
    assert ServiceFilter(services=frozenset({"web"})).selects(plain)


def test_among_not_ready_candidates_a_serving_one_wins() -> None:
    """Ranking: ready first, then serving (a terminating endpoint still serving beats one that
    is not), then the slice name; here the serving one is in the later slice."""
    view = EndpointView(policy="all")
    view.apply_service(service("web"))
    view.apply_slice(endpoint_slice("a", "web", [endpoint("10.0.0.1", ready=False, serving=False)]))
    view.apply_slice(
        endpoint_slice(
            "b", "web", [endpoint("10.0.0.1", ready=False, serving=True, terminating=True)]
        )
    )
    shown = view.current[key("10.0.0.1")]
    assert (shown.slice, shown.serving, shown.terminating) == ("b", True, True)


def test_a_duplicate_address_within_a_slice_keeps_the_first_of_equal_rank() -> None:
    view = EndpointView()
    view.apply_service(service("web"))
    view.apply_slice(
        endpoint_slice(
            "a",
            "web",
            [endpoint("10.0.0.1", node="node-1"), endpoint("10.0.0.1", node="node-2")],
        )
    )
    assert view.current[key("10.0.0.1")].node == "node-1"


def test_service_filter_is_a_frozen_hashable_value() -> None:
    chosen = ServiceFilter(namespace=NS, services=frozenset({"web"}))
    assert hash(chosen) == hash(ServiceFilter(namespace=NS, services=frozenset({"web"})))
    with pytest.raises(dataclasses.FrozenInstanceError):
        chosen.namespace = "other"  # type: ignore[misc]


def test_the_serving_fallback_takes_only_endpoints_both_serving_and_terminating() -> None:
    view = EndpointView(policy="serving")
    view.apply_service(service("web"))
    view.apply_slice(
        endpoint_slice(
            "a",
            "web",
            [
                endpoint("10.0.0.1", ready=False, serving=True, terminating=True),
                endpoint("10.0.0.2", ready=False, serving=False, terminating=True),
                endpoint("10.0.0.3", ready=False, serving=True, terminating=False),
            ],
        )
    )
    assert sorted(k.address for k in view.current) == ["10.0.0.1"]
