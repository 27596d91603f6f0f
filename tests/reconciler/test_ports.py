"""``reconciler/ports.py`` beyond upstream's tables: the port-set key and reading ``ports``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from endpointslice_operator.reconciler.ports import (
    EndpointPort,
    ServicePort,
    in_hash_order,
    port_hash,
    port_key,
    ports_from_dicts,
    ports_to_dicts,
    service_ports,
)

PORTS: list[EndpointPort] = [
    ("http", 80, "TCP", None),
    ("http", 80, "TCP", "kubernetes.io/h2c"),
    ("dns", 53, "UDP", None),
    ("metrics", 9090, "TCP", None),
    (None, 8080, "TCP", None),
    (None, None, None, None),
]


def test_a_port_set_has_one_key_whatever_the_order() -> None:
    keys = {port_key(order) for order in itertools.permutations(PORTS)}
    assert len(keys) == 1


SPEC_ORDER = (3, 1, 7, 2, 9, 5, 4)
"""Ports ``p3 p1 p7 p2 p9 p5 p4`` (8000+i, targetPort 9000+i), the case of issue 34."""


def test_the_key_is_in_kube_controller_manager_v1_36_order() -> None:
    """Read off kube-controller-manager v1.36.2's slice for that Service (tests/realcluster/
    test_parity_ports.py holds it to the server): FNV-1a 128 order of each port."""
    key = port_key((f"p{i}", 9000 + i, "TCP", None) for i in SPEC_ORDER)
    assert [name for name, _, _, _ in key] == ["p1", "p5", "p2", "p7", "p4", "p3", "p9"]


def test_the_hash_tells_nil_from_empty_and_app_protocol() -> None:
    assert port_key(PORTS) == (
        ("http", 80, "TCP", "kubernetes.io/h2c"),
        ("dns", 53, "UDP", None),
        (None, None, None, None),
        ("http", 80, "TCP", None),
        (None, 8080, "TCP", None),
        ("metrics", 9090, "TCP", None),
    )
    assert port_hash(("", 80, "TCP", None)) != port_hash((None, 80, "TCP", None))


def test_an_updated_slice_keeps_its_port_entries_in_hash_order() -> None:
    """Upstream sorts an existing slice's ports in place, so its update lists them in hash
    order; each entry stays as it was."""
    existing = [{"name": f"p{i}", "port": 9000 + i, "protocol": "TCP"} for i in range(1, 10)]
    ordered = in_hash_order(existing)
    assert [p["name"] for p in ordered] == [name for name, _, _, _ in ports_from_dicts(existing)]
    assert sorted(ordered, key=lambda p: p["port"]) == existing
    assert in_hash_order(None) == []


def test_ports_from_dicts_reads_each_port_and_skips_what_is_not_an_object() -> None:
    ports = [
        "junk",
        {"name": "https", "port": 443, "protocol": "TCP", "appProtocol": "https"},
        7,
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": 5, "port": True, "protocol": None, "appProtocol": ["h2"]},  # each field odd
    ]
    assert ports_from_dicts(ports) == port_key(
        [("https", 443, "TCP", "https"), ("dns", 53, "UDP", None), (None, None, None, None)]
    )


@pytest.mark.parametrize("ports", [None, [], 5, "http", {"port": 80}])
def test_ports_that_are_not_a_list_or_empty_are_no_ports(ports: Any) -> None:
    assert ports_from_dicts(ports) == ()


def test_ports_read_back_as_written() -> None:
    key = port_key(PORTS)
    written = ports_to_dicts(key)
    assert written[0] == {
        "name": "http",
        "port": 80,
        "protocol": "TCP",
        "appProtocol": "kubernetes.io/h2c",
    }
    assert written[2] == {}
    assert ports_from_dicts(written) == key


def test_service_ports_skip_unusable_entries_with_an_error_each() -> None:
    service = {
        "spec": {
            "ports": [
                "junk",
                {"port": 80},
                {"name": "bool", "port": 81, "targetPort": True},
                {"name": "float", "port": 82, "targetPort": 1.5},
                {"name": "b", "port": 83, "targetPort": "web", "protocol": "UDP", "appProtocol": 7},
            ]
        }
    }
    errors: list[str] = []
    assert service_ports(service, errors) == (
        ServicePort(name="", protocol="TCP", app_protocol=None, target=80),
        ServicePort(name="b", protocol="UDP", app_protocol=None, target="web"),
    )
    assert errors == [
        "spec.ports[0] is not an object",
        "spec.ports[2]: unusable targetPort True",
        "spec.ports[3]: unusable targetPort 1.5",
    ]


@pytest.mark.parametrize("service", [{}, {"spec": None}, {"spec": {"ports": {"port": 80}}}])
def test_a_service_without_a_ports_list_has_no_ports(service: dict[str, Any]) -> None:
    errors: list[str] = []
    assert service_ports(service, errors) == ()
    assert errors == []
