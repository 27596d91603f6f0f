"""``reconciler/ipaddr.py``: the reasons an address is refused, as reported, and the fast path
for canonical IPv4 texts agreeing with the full parse."""

from __future__ import annotations

import pytest

from endpointslice_operator.reconciler.ipaddr import endpoint_ip, pod_endpoint_ip


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("junk", "not an IP address"),
        ("1.2.3", "not an IP address"),
        ("127.0.0.1", "loopback address"),
        ("169.254.1.1", "link-local address"),
        ("224.0.0.5", "link-local multicast address"),
        ("0.0.0.0", "unspecified address"),
        ("::1", "loopback address"),
        ("fe80::1", "link-local address"),
        ("ff02::1", "link-local multicast address"),
        ("::", "unspecified address"),
    ],
)
def test_a_refused_address_is_reported_with_its_reason(text: str, reason: str) -> None:
    assert endpoint_ip(text) == reason
    assert pod_endpoint_ip(text) == reason


@pytest.mark.parametrize(
    "text",
    [
        "10.0.0.1",
        "010.000.000.001",
        "255.255.255.255",
        "256.1.1.1",
        "a1.2.3.4",
        "1.2.3.4a",
        "XX1XX.XX2XX.XX3XX.XX4XX",
        "1.2.3.4.5",
        "::ffff:10.0.0.1",
        "",
    ],
)
def test_the_fast_path_for_canonical_ipv4_agrees_with_the_full_parse(text: str) -> None:
    """Only canonical IPv4 texts skip the parser: digits alone, whatever surrounds them."""
    assert pod_endpoint_ip(text) == endpoint_ip(text)
