"""The benchmark machinery's own logic: scenarios, percentiles, latency bookkeeping, the
emulator process's control API and process cleanup."""

from __future__ import annotations

import os
from pathlib import Path

import aiohttp
import pytest

from benchmarks.figures.propagation import FlipSource
from benchmarks.lib.client import LatencyTracker, flip_ready, percentile
from benchmarks.lib.cluster import MANAGED_BY, Scenario, populate
from benchmarks.lib.minimal_controller import endpoint
from benchmarks.lib.probes import slice_writes
from benchmarks.lib.processes import emulator_process, get_json, rss_bytes
from endpointslice_operator.testing import Store


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([3.0, 1.0, 2.0], 1.0) == 3.0
    assert percentile([7.0], 0.01) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_opted_in_pods_spread_over_services_and_cover_all() -> None:
    scenario = Scenario(services=4, pods_per_service=3)
    picked = [scenario.opted_in_pod(n) for n in range(scenario.opted_in_pods)]
    assert len(set(picked)) == 12
    assert [service for service, _ in picked[:4]] == [scenario.service_name(i) for i in range(4)]
    assert all(pod.startswith(service) for service, pod in picked)


def test_flip_source_alternates_a_pod_once_every_pod_was_used() -> None:
    source = FlipSource(Scenario(services=2, pods_per_service=1))
    assert [source.take() for _ in range(4)] == [
        ("svc-00000-000", False),
        ("svc-00001-000", False),
        ("svc-00000-000", True),
        ("svc-00001-000", True),
    ]


def test_latency_tracker_waits_for_the_expected_readiness() -> None:
    tracker = LatencyTracker()
    tracker.expect("a", False)
    ready_a = {"targetRef": {"name": "a"}, "conditions": {"ready": True}}
    tracker.observe({"endpoints": [ready_a, {"targetRef": {"name": "b"}}]})
    assert tracker.pending.keys() == {"a"} and not tracker.latencies
    tracker.observe({"endpoints": [{"targetRef": {"name": "a"}, "conditions": {"ready": False}}]})
    assert not tracker.pending and len(tracker.latencies) == 1 and tracker.latencies[0] >= 0


def test_populate_creates_the_scenario_with_right_slices() -> None:
    store = Store()
    scenario = Scenario(
        services=3,
        pods_per_service=150,
        other_services=2,
        other_pods_per_service=4,
        nodes=5,
        slices=True,
    )
    created = populate(store, scenario)
    assert store.count("pods", "bench") == 3 * 150 + 2 * 4
    assert store.count("services", "bench") == 5
    slices = store.list("endpointslices", "bench")
    # 150 endpoints per Service at 100 per slice: two slices for each opted-in Service.
    assert len(slices) == 6
    assert {s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] for s in slices} == {
        MANAGED_BY
    }
    assert sum(len(s["endpoints"]) for s in slices) == 450
    assert created == 1 + 5 + 5 + 458 + 6


def test_minimal_controller_endpoint() -> None:
    pod = {
        "metadata": {"namespace": "bench", "name": "p", "uid": "u"},
        "spec": {"nodeName": "n"},
        "status": {"podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "False"}]},
    }
    assert endpoint(pod) == {
        "addresses": ["10.0.0.1"],
        "conditions": {"ready": False, "serving": False, "terminating": False},
        "targetRef": {"kind": "Pod", "namespace": "bench", "name": "p", "uid": "u"},
        "nodeName": "n",
    }
    assert endpoint({"metadata": pod["metadata"], "status": {}}) is None


async def test_emulator_process_control_api_and_cleanup(tmp_path: Path) -> None:
    scenario = Scenario(services=2, pods_per_service=2, nodes=2)
    async with aiohttp.ClientSession() as session:
        async with emulator_process(scenario, tmp_path) as emulator:
            pid = emulator.pid
            assert rss_bytes(pid) > 0
            assert emulator.kubeconfig.is_file()
            assert await slice_writes(session, emulator.control) == 0
            slices_url = f"{emulator.url}/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices"
            body = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "s",
                    "labels": {"endpointslice.kubernetes.io/managed-by": "someone"},
                },
                "addressType": "IPv4",
                "endpoints": [],
            }
            async with session.post(slices_url, json=body) as response:
                assert response.status == 201
            assert await get_json(session, f"{emulator.control}/writes") == {
                "create": 1,
                "update": 0,
                "patch": 0,
                "delete": 0,
            }
            assert await get_json(session, f"{emulator.control}/slices?managed_by=someone") == {
                "count": 1
            }
            # Churn flips readiness through the store.
            async with session.post(f"{emulator.control}/churn?count=4&start=0") as response:
                assert (await response.json())["count"] == 4
            pods = await get_json(session, f"{emulator.url}/api/v1/namespaces/bench/pods")
            readiness = {
                p["metadata"]["name"]: p["status"]["conditions"][0]["status"] for p in pods["items"]
            }
            assert set(readiness.values()) == {"False"}
            await flip_ready(session, emulator.url, "bench", "svc-00000-000", True)
            pod = await get_json(
                session, f"{emulator.url}/api/v1/namespaces/bench/pods/svc-00000-000"
            )
            assert pod["status"]["conditions"][0]["status"] == "True"
    # The process has been stopped and reaped once the block is left.
    assert not os.path.exists(f"/proc/{pid}")
