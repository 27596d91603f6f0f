"""view.model: what the view reads from a Service's unnamed port, from an EndpointSelector
(its ports' protocols, its labels and annotations) and a slice's version, how a ``gather``
record is written, and where addresses that are not IPs (FQDN endpoints) sort."""

from __future__ import annotations

from endpointslice_operator.view.model import (
    Endpoint,
    EndpointGroup,
    address_sort_key,
    parse_endpoint_selector,
    parse_service,
    parse_slice,
)

from .objects import NS, endpoint, endpoint_slice, service


def test_a_services_unnamed_port_is_keyed_by_the_empty_name() -> None:
    body = service("web")
    body["spec"]["ports"] = [{"port": 80, "protocol": "TCP"}, {"name": 5, "port": 81}]
    parsed = parse_service(body)
    assert parsed is not None
    assert parsed.ports == {("", "TCP"): 81}  # the second, also unnamed, overwrites


def test_an_endpoint_selector_gives_its_protocols_labels_and_annotations() -> None:
    parsed = parse_endpoint_selector(
        {
            "metadata": {
                "name": "sel",
                "namespace": NS,
                "labels": {"team": "a"},
                "annotations": {"note": "b"},
            },
            "spec": {"ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]},
        }
    )
    assert parsed is not None
    assert parsed.ports == {("dns", "UDP"): 53}
    assert (parsed.labels, parsed.annotations) == ({"team": "a"}, {"note": "b"})


def test_a_gather_record_as_json() -> None:
    endpoint = Endpoint("10.0.0.1", 8080, True, True, False, None, None, (), None, "web-1")
    group = EndpointGroup(("10.0.0.1",), (endpoint,))
    assert group.to_json() == {"addresses": ["10.0.0.1"], "endpoints": [endpoint.to_json()]}


def test_names_sort_after_every_ip_by_their_text() -> None:
    addresses = ["b.example", "2001:db8::1", "a.example", "10.0.0.2", "9.0.0.1"]
    assert sorted(addresses, key=address_sort_key) == [
        "9.0.0.1",
        "10.0.0.2",
        "2001:db8::1",
        "a.example",
        "b.example",
    ]


def test_a_slices_version_is_its_resource_version() -> None:
    """The view skips a slice listed again under the version it holds (and only then)."""
    body = endpoint_slice("web-1", "web", [endpoint("10.0.0.1")], version="42")
    parsed = parse_slice(body)
    assert parsed is not None and parsed.version == "42"
    unversioned = parse_slice(endpoint_slice("web-1", "web", [endpoint("10.0.0.1")]))
    assert unversioned is not None and unversioned.version == ""


def test_a_slice_ports_protocol_is_read() -> None:
    parsed = parse_slice(
        endpoint_slice("dns-1", "dns", [endpoint("10.0.0.1")], ports=[("dns", 53)], protocol="UDP")
    )
    assert parsed is not None
    assert [(name, protocol) for name, protocol, _ in parsed.ports] == [("dns", "UDP")]


def test_a_slices_name_is_shared_by_every_parse_of_it() -> None:
    """The view holds one parse of each slice version; the name each of its endpoints carries
    is one string however many times the slice is read (interned)."""
    names = ["".join(("web-", "abcde")) for _ in range(2)]  # equal strings, two objects
    assert names[0] is not names[1]
    parsed = [parse_slice(endpoint_slice(name, "web", [endpoint("10.0.0.1")])) for name in names]
    first, second = (p.ports[0][2][0].slice for p in parsed if p is not None)
    assert first is second
