"""view.model: reading Services, EndpointSelectors and EndpointSlices as found on a server
(fields missing, empty or of the wrong type), and the Change record."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

import pytest

from endpointslice_operator.view.model import (
    Change,
    EndpointKey,
    parse_endpoint_selector,
    parse_service,
    parse_slice,
)

from .objects import NS, endpoint, endpoint_slice, service


def test_change_is_an_immutable_hashable_value() -> None:
    key = EndpointKey(NS, "web", "http", 80, "TCP", "10.0.0.1")
    change = Change("removed", key)
    with pytest.raises(FrozenInstanceError):
        change.type = "added"  # type: ignore[misc]
    assert change == Change("removed", key) and len({change, Change("removed", key)}) == 1
    # Without a value (a synced marker, or a change built without one): the type alone.
    assert change.to_json() == {"type": "removed"}
    assert Change("synced").to_json() == {"type": "synced"}


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": "web"},
        {"namespace": NS},
        {"name": "", "namespace": NS},
        {"name": 5, "namespace": NS},
        {"name": "web", "namespace": ""},
        {"name": "web", "namespace": 5},
    ],
)
def test_objects_without_a_name_and_namespace_are_not_read(metadata: dict[str, Any]) -> None:
    for obj in (service("web"), endpoint_selector(), endpoint_slice("web-1", "web", [])):
        # The labels stay: only the name or namespace is wrong.
        labels = obj["metadata"].get("labels", {})
        body = {**obj, "metadata": {"labels": labels, **metadata}}
        assert parse_service(body) is None
        assert parse_endpoint_selector(body) is None
        assert parse_slice(body) is None
    assert parse_slice(endpoint_slice("web-1", "web", [])) is not None


def endpoint_selector(ports: list[Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "sel", "namespace": NS},
        "spec": {"ports": ports if ports is not None else [{"name": "http", "port": 8080}]},
    }


def test_service_ports_without_a_number_are_left_out() -> None:
    body = service("web")
    body["spec"]["ports"] = [
        {"name": "a", "port": "80"},
        {"name": "b", "port": True},
        {"name": "c"},
        {"name": "http", "port": 80},
        {"name": "dns", "port": 53, "protocol": "UDP"},
    ]
    parsed = parse_service(body)
    assert parsed is not None
    assert parsed.ports == {("http", "TCP"): 80, ("dns", "UDP"): 53}


def test_endpoint_selector_ports_by_number_or_name() -> None:
    parsed = parse_endpoint_selector(
        endpoint_selector([{"name": "http", "port": 8080}, {"port": "metrics"}, {"port": False}])
    )
    assert parsed is not None
    assert (parsed.namespace, parsed.name) == (NS, "sel")
    assert parsed.ports == {("http", "TCP"): 8080, ("", "TCP"): 0}


def test_slice_needs_a_non_empty_owner_label() -> None:
    body = endpoint_slice("web-1", "web", [endpoint("10.0.0.1")])
    body["metadata"]["labels"]["kubernetes.io/service-name"] = ""
    assert parse_slice(body) is None


def test_slice_ports_without_a_name_or_number_are_left_out() -> None:
    body = endpoint_slice("web-1", "web", [endpoint("10.0.0.1")])
    body["ports"] = [
        {"port": 80},
        {"name": "x", "port": "80"},
        {"name": "y", "port": 0},
        {"name": "http", "port": 8080},
    ]
    parsed = parse_slice(body)
    assert parsed is not None
    assert [(name, protocol) for name, protocol, _ in parsed.ports] == [("http", "TCP")]
    ((_, _, endpoints),) = parsed.ports
    assert [(e.address, e.target_port) for e in endpoints] == [("10.0.0.1", 8080)]


def test_slice_endpoints_without_addresses_are_skipped_and_junk_fields_read_as_absent() -> None:
    good = endpoint("10.0.0.2", node="", zone="", hints=["zone-b"])
    good["hints"]["forZones"][:0] = ["junk", {"noname": 1}, {"name": 5}]
    good["nodeName"], good["zone"] = "", 7
    body = endpoint_slice(
        "web-1",
        "web",
        [{"addresses": []}, {"addresses": [5]}, {"conditions": {}}, good],
    )
    parsed = parse_slice(body)
    assert parsed is not None
    ((_, _, endpoints),) = parsed.ports
    assert [e.address for e in endpoints] == ["10.0.0.2"]
    (only,) = endpoints
    assert (only.node, only.zone, only.hints) == (None, None, ("zone-b",))


def test_an_imported_slice_gives_its_endpoints_their_source_cluster() -> None:
    def cluster_of(label: Any) -> Any:
        body = endpoint_slice("web-1", "web", [endpoint("10.0.0.1")])
        if label is not None:
            body["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"] = label
        parsed = parse_slice(body)
        assert parsed is not None
        ((_, _, (only,)),) = parsed.ports
        return only.cluster, only.to_json().get("cluster", "absent")

    assert cluster_of("east") == ("east", "east")
    for no_cluster in (None, "", 5):
        assert cluster_of(no_cluster) == (None, "absent")
