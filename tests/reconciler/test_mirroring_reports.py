"""Mirroring: what it tells about an Endpoints object (upstream's managed-by value, the
address it refused, the Warnings' type) and whether it mirrors it at all (a boolean)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import (
    LABEL_SKIP_MIRROR,
    MIRRORING_CONTROLLER_NAME,
    desired_from_endpoints,
    should_mirror,
)


def _endpoints(
    subsets: list[dict[str, Any]], *, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", **(metadata or {})},
            "subsets": subsets}  # fmt: skip


def test_the_managed_by_value_is_kube_controller_managers() -> None:
    assert MIRRORING_CONTROLLER_NAME == "endpointslicemirroring-controller.k8s.io"


def test_an_invalid_address_is_named_in_the_errors() -> None:
    ports = [{"name": "http", "port": 80, "protocol": "TCP"}]
    mirrored = desired_from_endpoints(
        _endpoints([{"ports": ports, "addresses": [{"ip": "not-an-ip"}, {"ip": "10.0.0.1"}]}])
    )
    assert mirrored.desired.errors == [
        "address 'not-an-ip' is not a valid IP, it will not be mirrored to an EndpointSlice"
    ]


def test_the_mirroring_events_are_warnings() -> None:
    ports = [{"name": "http", "port": 80, "protocol": "TCP"}]
    addresses = [
        {"ip": "0-not-an-ip"},
        {"ip": "10.0.0.1"},
        {"ip": "10.0.0.2"},
    ]  # the invalid one sorts first
    mirrored = desired_from_endpoints(
        _endpoints([{"ports": ports, "addresses": addresses}]), max_endpoints_per_subset=1
    )
    assert [(e.type, e.reason) for e in mirrored.events] == [
        ("Warning", "InvalidIPAddress"),
        ("Warning", "TooManyAddressesToMirror"),
    ]


def test_should_mirror_answers_a_boolean() -> None:
    leader = _endpoints(
        [], metadata={"annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}}
    )
    assert should_mirror(leader) is False
    assert should_mirror(leader, honour_skip_mirror=True) is False
    plain = _endpoints([])
    assert should_mirror(plain) is True
    assert should_mirror(plain, honour_skip_mirror=True) is True
    not_skipped = _endpoints([], metadata={"labels": {LABEL_SKIP_MIRROR: "false"}})
    assert should_mirror(not_skipped, honour_skip_mirror=True) is True
