"""``reconciler/ports.py``: the text form of a port set, and where ``in_hash_order`` puts
entries that are not ports."""

from __future__ import annotations

from endpointslice_operator.reconciler.ports import (
    _port_tuple,
    in_hash_order,
    port_hash,
    port_key,
    port_key_text,
)


def test_the_text_of_a_port_key_names_every_field_of_every_port_in_key_order() -> None:
    key = port_key([("http", 80, "TCP", None), ("dns", 53, "UDP", "kubernetes.io/dns")])
    text = port_key_text(key)
    assert sorted(text.split(",")) == ["dns/53/UDP/kubernetes.io/dns", "http/80/TCP/None"]
    assert text == ",".join(f"{n}/{p}/{pr}/{a}" for n, p, pr, a in key)
    assert port_key_text(()) == ""


def test_entries_that_are_not_ports_come_first_as_they_are() -> None:
    """Before every port, whatever its hash: those starting with a digit too."""
    http = {"name": "http", "port": 80, "protocol": "TCP"}
    dns = {"name": "dns", "port": 53, "protocol": "UDP"}
    hashes = [port_hash(_port_tuple(port)) for port in (dns, http)]
    assert hashes[0][0].isdigit() and hashes[1][0].isalpha() and hashes == sorted(hashes)
    assert in_hash_order([http, "junk", dns, 7]) == ["junk", 7, dns, http]
    assert in_hash_order("junk") == []
