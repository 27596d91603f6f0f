"""Secondary networks in the controller: annotation parsing, the pod index's side tables, the
event rules for them, and the left-out reporter's counting and rate limit."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from endpointslice_operator.controller.cache.claims import pick_version, slim_claim
from endpointslice_operator.controller.sync.networks import (
    SOURCE_DEVICE_NETWORK,
    SOURCE_NETWORK,
    LeftOutReporter,
    NetworkAnnotations,
    NetworkChoice,
    choose,
)
from endpointslice_operator.controller.watch.claim_watch import RETRY_FIRST, RETRY_MAX, retry_delays
from endpointslice_operator.reconciler.sources import NETWORK_STATUS_ANNOTATION
from tests.controller.watch.test_router import Harness, pod, service

NAMES = NetworkAnnotations("eso.example/network", "eso.example/device-network")


def _service(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": "s", "namespace": "ns", "annotations": annotations}}


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, None),
        ({NAMES.network: "ns/storage"}, NetworkChoice(SOURCE_NETWORK, network="ns/storage")),
        ({NAMES.network: " storage "}, NetworkChoice(SOURCE_NETWORK, network="storage")),
        ({NAMES.device_network: "nic"}, NetworkChoice(SOURCE_DEVICE_NETWORK, claim="nic")),
        (
            {NAMES.device_network: "nic/vf"},
            NetworkChoice(SOURCE_DEVICE_NETWORK, claim="nic", request="vf"),
        ),
        ({NAMES.network: ""}, "is not <namespace>/<name>"),
        ({NAMES.network: "a/b/c"}, "is not <namespace>/<name>"),
        ({NAMES.network: "/b"}, "is not <namespace>/<name>"),
        ({NAMES.device_network: "nic/"}, "is not <pod claim name>[/<request>]"),
        ({NAMES.network: "n", NAMES.device_network: "nic"}, "exclude each other"),
    ],
)
def test_choose(annotations: dict[str, str], expected: NetworkChoice | str | None) -> None:
    chosen = choose(_service(**annotations), NAMES)
    if isinstance(expected, str):
        assert isinstance(chosen, str) and expected in chosen
    else:
        assert chosen == expected


def _attached(name: str, rv: str, status: str | None, labels: dict[str, str] | None = None) -> Any:
    body = pod(name, labels or {"app": "web"}, rv)
    if status is not None:
        body["metadata"]["annotations"] = {NETWORK_STATUS_ANNOTATION: status}
    return body


async def test_side_tables_hold_only_pods_with_the_data() -> None:
    h = Harness()
    h.router.on_pod("ADDED", _attached("plain", "1", None))
    h.router.on_pod("ADDED", _attached("multus", "2", "[]"))
    claimed = pod("claimed", {"app": "web"}, "3")
    claimed["status"]["resourceClaimStatuses"] = [
        {"name": "nic", "resourceClaimName": "claimed-nic"},
        {"name": "gpu"},  # no claim generated: not kept
    ]
    h.router.on_pod("ADDED", claimed)
    pods = h.indexes.pods
    assert pods.network_statuses == {("ns", "multus"): "[]"}
    assert pods.claim_statuses == {("ns", "claimed"): {"nic": "claimed-nic"}}
    assert [p.name for p in pods.claimed_by("ns", "claimed-nic")] == ["claimed"]
    # The records themselves are the same as without the data.
    assert pods.get("ns", "multus")._fields == pods.get("ns", "plain")._fields  # type: ignore[union-attr]
    h.router.on_pod("MODIFIED", _attached("multus", "4", None))
    h.router.on_pod("DELETED", claimed)
    assert pods.network_statuses == {} and pods.claim_statuses == {}


async def test_a_change_of_only_the_network_status_queues_the_services() -> None:
    h = Harness()
    h.router.on_service(None, service("a", {"app": "web"}))
    status = json.dumps([{"name": "ns/storage", "ips": ["192.168.0.1"]}])
    h.router.on_pod("ADDED", _attached("p1", "1", status))
    h.fresh_queue()
    h.router.on_pod("MODIFIED", _attached("p1", "2", status))
    assert h.queued() == set()  # nothing the slices show changed
    h.router.on_pod("MODIFIED", _attached("p1", "3", status.replace("0.1", "0.2")))
    assert h.queued() == {"ns/a"}
    h.fresh_queue()
    h.router.on_pod("MODIFIED", _attached("p1", "4", None))  # annotation removed
    assert h.queued() == {"ns/a"}


async def test_a_claim_change_queues_the_services_of_the_pods_using_it() -> None:
    h = Harness()
    h.router.on_service(None, service("a", {"app": "web"}))
    claimed = pod("p1", {"app": "web"}, "1")
    claimed["status"]["resourceClaimStatuses"] = [{"name": "nic", "resourceClaimName": "p1-nic"}]
    h.router.on_pod("ADDED", claimed)
    h.indexes.claims.synced = True
    h.fresh_queue()
    claim: dict[str, Any] = {"metadata": {"name": "p1-nic", "namespace": "ns"}, "status": {}}
    h.router.on_claim("ADDED", claim)
    assert h.queued() == {"ns/a"}
    h.fresh_queue()
    h.router.on_claim("MODIFIED", {**claim, "metadata": {**claim["metadata"], "labels": {}}})
    assert h.queued() == set()  # the status is the same
    h.router.on_claim("DELETED", claim)
    assert h.queued() == {"ns/a"}
    h.fresh_queue()
    h.router.on_claim("ADDED", {"metadata": {"name": "unused", "namespace": "ns"}})
    assert h.queued() == set()


def test_left_out_reporter_counts_and_rate_limits() -> None:
    gauge: dict[str, int] = {}
    clock = [0.0]
    reporter = LeftOutReporter(gauge.__setitem__, lambda: clock[0], interval=300.0)
    many = [(f"ns/p{i}", "not attached to network ns/x") for i in range(7)]
    first = reporter.update("ns/a", SOURCE_NETWORK, many, "network ns/x")
    assert first is not None
    assert first.startswith("7 selected pod(s) left out, no address on the network ns/x: ")
    assert "ns/p4 (not attached" in first and "ns/p5" not in first and first.endswith("and 2 more")
    assert gauge == {SOURCE_NETWORK: 7}
    assert reporter.update("ns/b", SOURCE_DEVICE_NETWORK, many[:1], "claim") is not None
    assert gauge == {SOURCE_NETWORK: 7, SOURCE_DEVICE_NETWORK: 1}
    # The same pods again: no new Event until the interval has passed.
    clock[0] = 299.0
    assert reporter.update("ns/a", SOURCE_NETWORK, many, "network ns/x") is None
    clock[0] = 301.0
    assert reporter.update("ns/a", SOURCE_NETWORK, many, "network ns/x") is not None
    # Another set of pods: at once.
    assert reporter.update("ns/a", SOURCE_NETWORK, many[:3], "network ns/x") is not None
    assert gauge[SOURCE_NETWORK] == 3
    reporter.forget("ns/a")
    reporter.forget("ns/b")
    assert gauge == {SOURCE_NETWORK: 0, SOURCE_DEVICE_NETWORK: 0}
    # Back after being fixed and broken again: reported at once.
    assert reporter.update("ns/a", SOURCE_NETWORK, many[:1], "network ns/x") is not None


def test_claim_retry_delays_double_from_a_few_seconds_up_to_five_minutes() -> None:
    assert (RETRY_FIRST, RETRY_MAX) == (5.0, 300.0)
    delays = list(itertools.islice(retry_delays(), 10))
    assert delays == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0, 300.0]
    assert list(itertools.islice(retry_delays(3.0, 10.0), 4)) == [3.0, 6.0, 10.0, 10.0]


def test_claim_version_and_slim_claim() -> None:
    def group(*versions: str) -> dict[str, Any]:
        return {
            "versions": [{"groupVersion": f"resource.k8s.io/{v}", "version": v} for v in versions]
        }

    assert pick_version(group("v1beta1", "v1beta2")) == "v1beta2"
    assert pick_version(group("v1", "v1beta1")) == "v1"
    assert pick_version(group("v1alpha3")) is None
    assert pick_version({}) is None
    slim = slim_claim(
        {
            "metadata": {"name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "5"},
            "spec": {"devices": {"requests": [{"name": "vf"}]}},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "vf", "driver": "d", "pool": "p", "device": "x"}]
                    },
                    "nodeSelector": {"nodeSelectorTerms": []},
                },
                "devices": [
                    {
                        "driver": "d",
                        "pool": "p",
                        "device": "x",
                        "data": {"big": 1},
                        "networkData": {"ips": ["10.0.0.1/24"]},
                    }
                ],
                "reservedFor": [{"resource": "pods", "name": "p1", "uid": "u1"}],
            },
        }
    )
    assert slim == {
        "metadata": {"namespace": "ns", "name": "c", "uid": "u", "resourceVersion": "5"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "vf", "driver": "d", "pool": "p", "device": "x"}]
                }
            },
            "devices": [
                {"driver": "d", "pool": "p", "device": "x", "networkData": {"ips": ["10.0.0.1/24"]}}
            ],
        },
    }
