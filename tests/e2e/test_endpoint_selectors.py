"""EndpointSelectors on the emulator: selection, validation, status, slices, deletion, restarts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from endpointslice_operator.controller.endpoint_selector.status import STATUS_INTERVAL
from endpointslice_operator.controller.watch.relist import COUNT_INTERVAL, RELIST_QUIET_PERIOD
from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    MANAGED_BY,
    NS,
    cluster,
    events,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
    writes,
)
from tests.e2e.selector_helpers import (
    LABEL_KEP6116,
    LABEL_SELECTOR_NAME,
    endpoint_selector,
    install_crd,
    ready_condition,
    selector_addresses,
    selector_body,
    selector_slices,
    status_counts,
    update_selector,
)
from tests.e2e.watch_gap import miss_deletions


def _conditions(emu: Any, name: str) -> dict[str, tuple[bool, bool, bool]]:
    found = {}
    for s in selector_slices(emu, name):
        for ep in s.get("endpoints") or []:
            c = ep["conditions"]
            found[ep["addresses"][0]] = (c.get("ready"), c.get("serving"), c.get("terminating"))
    return found


async def test_match_labels_and_match_expressions_both_select() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1", labels={"app": "web", "tier": "front"})
        pod(emu, "web-1", "10.1.0.2", labels={"app": "web", "tier": "back"})
        pod(emu, "db-0", "10.1.0.3", labels={"app": "db"})
        endpoint_selector(emu, "by-labels", match_labels={"app": "web"}, labels={"team": "a"})
        endpoint_selector(
            emu,
            "by-expressions",
            match_expressions=[
                {"key": "app", "operator": "In", "values": ["web", "db"]},
                {"key": "tier", "operator": "NotIn", "values": ["back"]},
            ],
        )
        async with running_operator(emu):
            await eventually(
                lambda: selector_addresses(emu, "by-labels") == {"10.1.0.1", "10.1.0.2"}
            )
            await eventually(
                lambda: selector_addresses(emu, "by-expressions") == {"10.1.0.1", "10.1.0.3"}
            )
            (s,) = selector_slices(emu, "by-labels")
            labels = s["metadata"]["labels"]
            assert labels == {
                "team": "a",
                LABEL_MANAGED_BY: MANAGED_BY,
                LABEL_SELECTOR_NAME: "by-labels",
                LABEL_KEP6116: "by-labels",
            }
            owner = emu.store.get("endpointselectors", NS, "by-labels")
            assert owner is not None
            assert s["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "endpointslice-operator.io/v1alpha1",
                    "kind": "EndpointSelector",
                    "name": "by-labels",
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            assert s["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
            # Status: written through Kopf's patch.
            await eventually(
                lambda: (ready_condition(emu, "by-labels") or {}).get("status") == "True"
            )
            condition = ready_condition(emu, "by-labels")
            assert condition is not None
            assert condition["reason"] == "Accepted"
            assert condition["observedGeneration"] == owner["metadata"]["generation"]
            # A pod event reaches the EndpointSelectors through the Services' pod index.
            pod(emu, "web-2", "10.1.0.4", labels={"app": "web", "tier": "front"})
            await eventually(lambda: "10.1.0.4" in selector_addresses(emu, "by-expressions"))
            await eventually(lambda: "10.1.0.4" in selector_addresses(emu, "by-labels"))


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"selector": {}}, "InvalidSelector"),
        (
            {
                "selector": {"matchLabels": {"app": "web"}},
                "ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}],
            },
            "DuplicatePortName",
        ),
        (
            {
                "selector": {"matchLabels": {"app": "web"}},
                "ports": [{"name": "a", "port": 80, "protocol": "ICMP"}],
            },
            "UnknownProtocol",
        ),
    ],
)
async def test_an_invalid_spec_gets_a_condition_a_warning_and_no_slices(
    spec: dict[str, Any], reason: str
) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        body = selector_body("bad")
        body["spec"] = spec
        emu.store.create(body)
        endpoint_selector(emu, "good", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            await eventually(lambda: selector_addresses(emu, "good") == {"10.1.0.1"})
            await eventually(lambda: (ready_condition(emu, "bad") or {}).get("reason") == reason)
            condition = ready_condition(emu, "bad")
            assert condition is not None and condition["status"] == "False"
            await eventually(lambda: events(emu, reason))
            (event,) = events(emu, reason)
            assert event["type"] == "Warning"
            assert event["involvedObject"]["kind"] == "EndpointSelector"
            assert event["involvedObject"]["name"] == "bad"
            assert "Not publishing EndpointSlices" in event["message"]
            await settle(op)
            assert selector_slices(emu, "bad") == []
            # Fixed: published, and Ready.
            update_selector(
                emu,
                "bad",
                lambda s: s.update(
                    spec={
                        "selector": {"matchLabels": {"app": "web"}},
                        "ports": [{"name": "a", "port": 80}],
                    }
                ),
            )
            await eventually(lambda: selector_addresses(emu, "bad") == {"10.1.0.1"})
            await eventually(lambda: (ready_condition(emu, "bad") or {}).get("status") == "True")


async def test_ready_serving_terminating_and_publish_not_ready() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2", ready=False)
        endpoint_selector(emu, "plain", match_labels={"app": "web"})
        endpoint_selector(emu, "all", match_labels={"app": "web"}, publishNotReadyAddresses=True)
        async with running_operator(emu):
            await eventually(
                lambda: (
                    _conditions(emu, "plain")
                    == {"10.1.0.1": (True, True, False), "10.1.0.2": (False, False, False)}
                )
            )
            await eventually(
                lambda: (
                    _conditions(emu, "all")
                    == {"10.1.0.1": (True, True, False), "10.1.0.2": (True, False, False)}
                )
            )
            set_ready(emu, "web-1", True)
            await eventually(lambda: _conditions(emu, "plain")["10.1.0.2"] == (True, True, False))
            current = emu.store.get("pods", NS, "web-0")
            assert current is not None
            emu.store.delete("pods", NS, "web-0", grace_period_seconds=30)
            await eventually(
                lambda: _conditions(emu, "plain").get("10.1.0.1") == (False, True, True)
            )
            await eventually(lambda: _conditions(emu, "all").get("10.1.0.1") == (True, True, True))


async def test_a_named_port_resolved_differently_gives_two_slices() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")  # http -> 8080
        pod(
            emu,
            "web-1",
            "10.1.0.2",
            container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
        )
        endpoint_selector(
            emu, "named", match_labels={"app": "web"}, ports=[{"name": "web", "port": "http"}]
        )
        async with running_operator(emu):
            await eventually(lambda: len(selector_slices(emu, "named")) == 2)
            by_port = {
                s["ports"][0]["port"]: [ep["addresses"][0] for ep in s["endpoints"]]
                for s in selector_slices(emu, "named")
            }
            assert by_port == {8080: ["10.1.0.1"], 9090: ["10.1.0.2"]}
            assert all(s["ports"][0]["name"] == "web" for s in selector_slices(emu, "named"))


async def test_a_named_port_on_no_pod_is_not_ready_and_warned_once() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")  # container port "http" only
        endpoint_selector(
            emu, "typo", match_labels={"app": "web"}, ports=[{"name": "web", "port": "htp"}]
        )
        endpoint_selector(
            emu, "right", match_labels={"app": "web"}, ports=[{"name": "web", "port": "http"}]
        )
        async with running_operator(emu) as op:
            # The slices stay what kube-controller-manager publishes for such a Service.
            await eventually(lambda: selector_addresses(emu, "typo") == {"10.1.0.1"})
            assert not selector_slices(emu, "typo")[0].get("ports")
            await eventually(
                lambda: (ready_condition(emu, "typo") or {}).get("reason") == "UnresolvedPort"
            )
            condition = ready_condition(emu, "typo")
            assert condition is not None and condition["status"] == "False"
            assert "htp/TCP" in condition["message"]
            # more syncs do not repeat the warning
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: selector_addresses(emu, "typo") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            (event,) = events(emu, "UnresolvedPort")
            assert event["type"] == "Warning"
            assert event["involvedObject"]["name"] == "typo"
            assert event["message"] == condition["message"]
            assert (ready_condition(emu, "right") or {}).get("reason") == "Accepted"
            # Fixed: Ready again.
            update_selector(
                emu, "typo", lambda s: s["spec"].update(ports=[{"name": "web", "port": "http"}])
            )
            await eventually(lambda: (ready_condition(emu, "typo") or {}).get("status") == "True")


async def test_a_selector_change_moves_the_slices_and_no_ports_give_an_empty_list() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1", labels={"app": "web"})
        pod(emu, "api-0", "10.1.0.2", labels={"app": "api"})
        endpoint_selector(emu, "moving", match_labels={"app": "web"}, ports=[])
        async with running_operator(emu):
            await eventually(lambda: selector_addresses(emu, "moving") == {"10.1.0.1"})
            assert not selector_slices(emu, "moving")[0].get("ports")
            update_selector(
                emu, "moving", lambda s: s["spec"].update(selector={"matchLabels": {"app": "api"}})
            )
            await eventually(lambda: selector_addresses(emu, "moving") == {"10.1.0.2"})
            await eventually(
                lambda: (ready_condition(emu, "moving") or {}).get("observedGeneration") == 2
            )


async def test_ip_families_filter_and_default_to_the_families_found() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", ["10.1.0.1", "fd00::1"])
        endpoint_selector(emu, "both", match_labels={"app": "web"})
        endpoint_selector(emu, "v6", match_labels={"app": "web"}, ipFamilies=["IPv6"])
        pod(emu, "v4-only", "10.2.0.1", labels={"app": "v4"})
        endpoint_selector(emu, "found", match_labels={"app": "v4"})
        async with running_operator(emu):
            await eventually(
                lambda: {s["addressType"] for s in selector_slices(emu, "both")} == {"IPv4", "IPv6"}
            )
            await eventually(lambda: selector_addresses(emu, "v6") == {"fd00::1"})
            assert {s["addressType"] for s in selector_slices(emu, "v6")} == {"IPv6"}
            await eventually(lambda: selector_addresses(emu, "found") == {"10.2.0.1"})
            assert {s["addressType"] for s in selector_slices(emu, "found")} == {"IPv4"}


async def test_service_name_label_only_when_a_service_owns_it_and_the_kep_label_by_default() -> (
    None
):
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        owner = service(emu, "web", opt_in=False)
        body = selector_body("web-owned", match_labels={"app": "web"})
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "name": "web",
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
        emu.store.create(body)
        endpoint_selector(emu, "free", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            await eventually(lambda: selector_addresses(emu, "web-owned") == {"10.1.0.1"})
            await eventually(lambda: selector_addresses(emu, "free") == {"10.1.0.1"})
            (owned,) = selector_slices(emu, "web-owned")
            (free,) = selector_slices(emu, "free")
            assert owned["metadata"]["labels"][LABEL_SERVICE_NAME] == "web"
            assert owned["metadata"]["labels"][LABEL_KEP6116] == "web-owned"
            assert LABEL_SERVICE_NAME not in free["metadata"]["labels"]
            assert free["metadata"]["labels"][LABEL_KEP6116] == "free"
            # The Service-owned selector's slice is not taken for the (unmanaged) Service's own.
            await settle(op)
            assert [s["metadata"]["name"] for s in slices(emu, "web")] == [
                owned["metadata"]["name"]
            ]
            before = writes(emu)
        # With --no-kep6116-labels, the KEP label goes (one rewrite per slice), the rest stays.
        async with running_operator(emu, kep6116_labels=False) as op:
            await eventually(
                lambda: all(
                    LABEL_KEP6116 not in s["metadata"]["labels"]
                    for name in ("free", "web-owned")
                    for s in selector_slices(emu, name)
                )
            )
            await settle(op)
            assert writes(emu)["update"] - before["update"] == 2


async def test_deleting_removes_the_slices_by_garbage_collector_or_by_the_operator() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "collected", match_labels={"app": "web"})
        endpoint_selector(emu, "orphaned", match_labels={"app": "web"})
        async with running_operator(emu):
            await eventually(lambda: selector_addresses(emu, "collected") == {"10.1.0.1"})
            await eventually(lambda: selector_addresses(emu, "orphaned") == {"10.1.0.1"})
            emu.store.delete("endpointselectors", NS, "collected")
            await eventually(lambda: selector_slices(emu, "collected") == [])
            # Orphan propagation: the garbage collector leaves the slices (as on a cluster
            # where none runs); the operator deletes its own.
            deletes = writes(emu)["delete"]
            emu.store.delete("endpointselectors", NS, "orphaned", propagation_policy="Orphan")
            await eventually(lambda: selector_slices(emu, "orphaned") == [])
            assert writes(emu)["delete"] == deletes + 1


@pytest.mark.looptime
async def test_endpoint_counts_reach_the_status_at_most_once_per_interval_under_churn() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        for i in range(3):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        async with running_operator(emu):
            await eventually(lambda: status_counts(emu, "web") == (3, 3), timeout=30)
            owner = emu.store.get("endpointselectors", NS, "web")
            assert owner is not None
            assert "finalizers" not in owner["metadata"]  # deleting it never waits for us
            status_writes = emu.requests.count(
                verb="patch", resource="endpointselectors", subresource="status"
            )
            slice_updates = writes(emu)["update"]
            # A pod flapping 10 times a second for 20 s: every flip is a slice write...
            for flip in range(200):
                set_ready(emu, "web-0", flip % 2 == 1)
                await asyncio.sleep(0.1)
            set_ready(emu, "web-0", False)
            await eventually(lambda: status_counts(emu, "web") == (2, 3), timeout=30)
            assert writes(emu)["update"] - slice_updates > 50
            # ... but the status is written at most once per interval (20 s / 5 s, the end
            # state, and one interval of slack for where the flips fall in the timer's phase).
            written = (
                emu.requests.count(verb="patch", resource="endpointselectors", subresource="status")
                - status_writes
            )
            assert 1 <= written <= 20 / STATUS_INTERVAL + 2
            # Counts that come back to what the status shows cost nothing.
            status_writes += written
            set_ready(emu, "web-1", False)
            await asyncio.sleep(0.5)
            set_ready(emu, "web-1", True)
            await asyncio.sleep(3 * STATUS_INTERVAL)
            assert status_counts(emu, "web") == (2, 3)
            assert (
                emu.requests.count(verb="patch", resource="endpointselectors", subresource="status")
                == status_writes
            )


@pytest.mark.looptime
async def test_a_refused_count_write_is_tried_again_at_the_next_round() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        async with running_operator(emu):
            await eventually(lambda: status_counts(emu, "web") == (1, 1), timeout=30)
            emu.faults.fault_verbs = {"patch"}
            emu.faults.fault_resources = {"endpointselectors"}
            emu.faults.fail_codes = (500,)
            emu.faults.fail_rate = 1.0
            refused = emu.requests.count(verb="patch", resource="endpointselectors", code=500)
            set_ready(emu, "web-0", False)
            await eventually(lambda: selector_slices(emu, "web") != [], timeout=30)
            await asyncio.sleep(3 * STATUS_INTERVAL)
            failed = (
                emu.requests.count(verb="patch", resource="endpointselectors", code=500) - refused
            )
            assert 2 <= failed <= 4  # one refused write a round, not a retry loop
            assert status_counts(emu, "web") == (1, 1)
            emu.faults.fail_rate = 0.0
            await eventually(
                lambda: status_counts(emu, "web") == (0, 1), timeout=3 * STATUS_INTERVAL
            )


@pytest.mark.looptime
async def test_a_deletion_missed_while_the_watch_had_expired_is_found() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "kept", match_labels={"app": "web"})
        endpoint_selector(emu, "gone", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            index = op.endpoint_selectors
            assert index is not None
            await eventually(lambda: selector_addresses(emu, "kept") == {"10.1.0.1"})
            await eventually(lambda: selector_addresses(emu, "gone") == {"10.1.0.1"})
            # While nothing is missed, the safety net costs one list of one item a round.
            lists = emu.requests.count(verb="list", resource="endpointselectors")
            await asyncio.sleep(2 * COUNT_INTERVAL)
            assert emu.requests.count(verb="list", resource="endpointselectors") - lists == 2
            gets = emu.requests.count(verb="get", resource="endpointselectors")
            started = asyncio.get_running_loop().time()
            await miss_deletions(
                emu, "endpointselectors", NS, ("gone",), propagation_policy="Orphan"
            )
            # Kopf's re-listing delivers "kept" only: "gone" is asked for once the re-listing is
            # quiet, well before the next count (Kopf alone would keep it forever).
            await eventually(lambda: selector_slices(emu, "gone") == [], timeout=COUNT_INTERVAL)
            # The resumption's 30 s, then the quiet period (the next count is 60 s away).
            assert asyncio.get_running_loop().time() - started < 30 + RELIST_QUIET_PERIOD + 5
            assert emu.requests.count(verb="get", resource="endpointselectors") - gets == 1
            assert index.get(f"endpointselector:{NS}/gone") is None
            assert index.get(f"endpointselector:{NS}/kept") is not None
            assert selector_addresses(emu, "kept") == {"10.1.0.1"}


@pytest.mark.looptime
async def test_the_last_endpoint_selector_deleted_unseen_is_found_by_the_count() -> None:
    # A re-listing that delivers nothing shows Kopf's handlers no event at all: the periodic
    # count is what finds the EndpointSelector gone.
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "gone", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            index = op.endpoint_selectors
            assert index is not None
            await eventually(lambda: selector_addresses(emu, "gone") == {"10.1.0.1"})
            await miss_deletions(
                emu, "endpointselectors", NS, ("gone",), propagation_policy="Orphan"
            )
            await asyncio.sleep(35)  # Kopf has listed again: nothing
            assert selector_slices(emu, "gone") != []
            await eventually(lambda: selector_slices(emu, "gone") == [], timeout=2 * COUNT_INTERVAL)
            assert index.get(f"endpointselector:{NS}/gone") is None


async def test_restart_with_nothing_changed_writes_nothing() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        for i in range(5):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        endpoint_selector(emu, "bad", match_labels={"app": "web"}, ports=[{"port": 0}])
        async with running_operator(emu) as op:
            await eventually(lambda: len(selector_addresses(emu, "web")) == 5)
            await eventually(lambda: ready_condition(emu, "bad") is not None)
            await eventually(lambda: ready_condition(emu, "web") is not None)
            await eventually(lambda: status_counts(emu, "web") == (5, 5), timeout=30)
            await settle(op)
        before = writes(emu)
        patches = emu.requests.count(verb="patch", resource="endpointselectors")
        async with running_operator(emu) as op:
            await eventually(
                lambda: op.endpoint_selectors is not None and op.endpoint_selectors.synced
            )
            await settle(op, pause=1.0)
        assert writes(emu) == before
        # The status already says it all: no status patch either.
        assert emu.requests.count(verb="patch", resource="endpointselectors") == patches


async def test_switched_off_the_operator_never_asks_for_them() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        async with running_operator(emu, endpoint_selectors=False) as op:
            await settle(op, pause=0.5)
            assert selector_slices(emu, "web") == []
            assert emu.requests.count(resource="endpointselectors") == 0


@pytest.mark.looptime
async def test_a_crd_installed_later_is_served_without_a_restart() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        pod(emu, "web-0", "10.1.0.1")
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            await asyncio.sleep(60)
            assert selector_slices(emu, "web") == []
            install_crd(emu)
            await eventually(lambda: selector_addresses(emu, "web") == {"10.1.0.1"}, timeout=400)
            assert op.endpoint_selectors is not None and op.endpoint_selectors.served


def _packing(found: list[dict[str, Any]]) -> list[str]:
    """Slices as (address type, ports, endpoints) with their names left out, sorted."""
    return sorted(
        json.dumps(
            [
                s["addressType"],
                s.get("ports") or [],
                sorted(s.get("endpoints") or [], key=lambda ep: ep["addresses"]),
            ],
            sort_keys=True,
        )
        for s in found
    )


async def test_parity_with_a_service_of_the_same_selector_and_ports() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        for i in range(7):
            pod(
                emu,
                f"web-{i}",
                f"10.1.0.{i + 1}",
                ready=i % 3 != 0,
                node_name="node-a" if i % 2 else "node-b",
            )
        pod(
            emu,
            "web-odd",
            "10.1.0.50",
            container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
        )
        ports = [{"name": "http", "port": "http", "protocol": "TCP", "appProtocol": "http"}]
        service(
            emu,
            "web",
            selector={"app": "web"},
            ports=[{**ports[0], "port": 80, "targetPort": "http"}],
            ipFamilies=["IPv4"],
            clusterIP="None",
        )
        endpoint_selector(emu, "web", match_labels={"app": "web"}, ports=ports)
        async with running_operator(emu, max_endpoints_per_slice=3) as op:
            await eventually(lambda: len(selector_addresses(emu, "web")) == 8)
            await eventually(
                lambda: (
                    {
                        a
                        for s in slices(emu, "web")
                        for ep in s["endpoints"]
                        for a in ep["addresses"]
                    }
                    == selector_addresses(emu, "web")
                )
            )
            await settle(op)
            service_slices = [
                s for s in slices(emu, "web") if LABEL_SELECTOR_NAME not in s["metadata"]["labels"]
            ]
            assert len(service_slices) == 4  # 7 pods at 3 per slice, and the 9090 one
            assert _packing(service_slices) == _packing(selector_slices(emu, "web"))


async def test_the_endpoints_command_follows_an_endpoint_selector() -> None:
    from tests.view.test_endpoints_cli import run_cli

    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2", ready=False)
        pod(
            emu,
            "web-2",
            "10.1.0.3",
            container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
        )
        endpoint_selector(
            emu, "named", match_labels={"app": "web"}, ports=[{"name": "web", "port": "http"}]
        )
        endpoint_selector(emu, "fixed", match_labels={"app": "web"})
        # A Service of the same name as one of them: its (absent) slices stay out of the view.
        service(emu, "named", selector={"app": "none"}, opt_in=False)
        async with running_operator(emu) as op:
            await eventually(lambda: len(selector_addresses(emu, "named")) == 3)
            await eventually(lambda: len(selector_addresses(emu, "fixed")) == 3)
            await settle(op)
            kubeconfig = str(emu.kubeconfig_path)
            code, out, err = await run_cli(
                "--kubeconfig", kubeconfig, "-n", NS, "--endpoint-selector", "named"
            )
            assert (code, err) == (0, "")
            assert [line.split() for line in out.splitlines()] == [
                ["NAMESPACE", "SERVICE", "PORT", "ADDRESS", "READY", "SERVING", "TERM", "NODE"],
                [NS, "named", "web:0/TCP", "10.1.0.1:8080", "true", "true", "false", "node-a"],
                [NS, "named", "web:0/TCP", "10.1.0.3:9090", "true", "true", "false", "node-a"],
            ]
            code, out, _ = await run_cli(
                "--kubeconfig", kubeconfig, "--endpoint-selector", f"{NS}/fixed", "--policy", "all"
            )
            assert code == 0
            assert [line.split()[2:5] for line in out.splitlines()[1:]] == [
                ["http:8080/TCP", "10.1.0.1:8080", "true"],
                ["http:8080/TCP", "10.1.0.2:8080", "false"],
                ["http:8080/TCP", "10.1.0.3:8080", "true"],
            ]
            code, _, err = await run_cli(
                "--kubeconfig", kubeconfig, "--endpoint-selector", "x", "--service", "y"
            )
            assert code == 2 and "cannot be combined" in err


async def test_slices_of_the_upstream_kind_of_the_same_name_are_left_alone() -> None:
    """With the API server serving ``discovery.k8s.io`` EndpointSelectors too, the in-tree
    controller's slices carry the same ``kubernetes.io/endpoint-selector-name``: the operator
    neither adopts, rewrites nor deletes them (docs/endpointselector.md)."""
    async with run_emulator() as emu:
        cluster(emu)
        install_crd(emu)
        pod(emu, "web-0", "10.1.0.1")
        upstream = emu.store.create(
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "web-upstream",
                    "namespace": NS,
                    "labels": {
                        LABEL_KEP6116: "web",
                        LABEL_MANAGED_BY: "endpointslice-controller.k8s.io",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            }
        )
        endpoint_selector(emu, "web", match_labels={"app": "web"})
        async with running_operator(emu) as op:
            await eventually(lambda: selector_addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            current = emu.store.get("endpointslices", NS, "web-upstream")
            assert current is not None
            assert current["metadata"]["resourceVersion"] == upstream["metadata"]["resourceVersion"]
            by_kep_label = [
                s["metadata"]["labels"][LABEL_MANAGED_BY]
                for s in emu.store.list("endpointslices", NS)
                if s["metadata"]["labels"].get(LABEL_KEP6116) == "web"
            ]
            assert sorted(by_kep_label) == sorted([MANAGED_BY, "endpointslice-controller.k8s.io"])
