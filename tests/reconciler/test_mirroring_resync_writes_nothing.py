"""Mirroring: slices identical to the Endpoints object are left alone on a re-sync, whatever
their address family, port set, or the absence of hostnames (upstream's
``reconcileByPortMapping`` keeps one slice per (address type, port set) and writes none whose
endpoints are the desired ones)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import (
    MIRRORING_CONTROLLER_NAME,
    ReconcilerConfig,
    plan_mirroring,
)

CONFIG = ReconcilerConfig(controller_name=MIRRORING_CONTROLLER_NAME, max_endpoints_per_slice=1000)

HTTP = [{"name": "http", "port": 80, "protocol": "TCP"}]
METRICS = [{"name": "metrics", "port": 9090, "protocol": "TCP"}]

# Two port sets, the first dual-stack; no address has a hostname.
ENDPOINTS: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "default", "uid": "ep-uid"},
    "subsets": [
        {"ports": HTTP, "addresses": [{"ip": "10.0.0.1"}, {"ip": "2001:db8::1"}]},
        {"ports": METRICS, "addresses": [{"ip": "10.0.0.2"}]},
    ],
}


def _written_slices() -> list[dict[str, Any]]:
    plan, _ = plan_mirroring(ENDPOINTS, [], CONFIG)
    written = []
    for n, created in enumerate(plan.creates):
        raw = dict(created)
        raw["metadata"] = {**created["metadata"], "name": f"web-{n}"}
        written.append(raw)
    return written


def test_the_first_sync_makes_one_slice_per_address_type_and_port_set() -> None:
    groups = sorted(
        (raw["addressType"], raw["ports"][0]["name"], len(raw["endpoints"]))
        for raw in _written_slices()
    )
    assert groups == [("IPv4", "http", 1), ("IPv4", "metrics", 1), ("IPv6", "http", 1)]


def test_a_resync_of_the_slices_it_wrote_writes_nothing() -> None:
    """Each slice is kept: an IPv4 and an IPv6 slice of one port set are two groups, two port
    sets of one address type too; an endpoint without hostname is the one already written."""
    plan, mirrored = plan_mirroring(ENDPOINTS, _written_slices(), CONFIG)
    assert (plan.creates, plan.updates, plan.deletes) == ([], [], [])
    assert (mirrored.added, mirrored.updated, mirrored.removed) == (0, 0, 0)
