"""Multus: the network-status annotation's key (the Network Plumbing Working Group spec's), what
an entry's ``interface`` reads as, and a text ``json`` refuses without a decode error."""

from __future__ import annotations

import json

from endpointslice_operator.reconciler.sources import (
    NETWORK_STATUS_ANNOTATION,
    NetworkInterface,
    parse_network_status,
)


def test_the_annotation_key_is_the_specs() -> None:
    assert NETWORK_STATUS_ANNOTATION == "k8s.v1.cni.cncf.io/network-status"


def test_an_entrys_interface_is_its_text_or_empty() -> None:
    text = json.dumps(
        [
            {"name": "ns/a", "interface": "net1", "ips": ["192.168.1.2"]},
            {"name": "ns/b", "ips": []},
            {"name": "ns/c", "interface": 7, "ips": []},
        ]
    )
    assert parse_network_status(text) == (
        NetworkInterface("ns/a", "net1", ("192.168.1.2",)),
        NetworkInterface("ns/b", "", ()),
        NetworkInterface("ns/c", "", ()),
    )


def test_a_number_too_long_to_convert_is_not_json() -> None:
    """``json.loads`` raises a plain ``ValueError`` (not a decode error) for an integer of more
    digits than Python converts: the annotation is malformed, nothing raises."""
    assert parse_network_status("[" + "1" * 5000 + "]") == "not JSON"
