"""ServiceSyncer against the API emulator (real HTTP), with indexes fed by hand.

Feeding the indexes by hand (instead of through watches) makes the cache exactly as stale as
each test needs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.sync.apply import SyncError
from endpointslice_operator.controller.sync.events import EventRecorder
from endpointslice_operator.controller.sync.service import ServiceSyncer
from endpointslice_operator.reconciler.tracking.tracker import StaleInformerCache
from endpointslice_operator.testing import FaultConfig

from ..sync_world import ME, NS, SyncWorld, emulated, pod_json


class World(SyncWorld):
    @property
    def syncer(self) -> ServiceSyncer:
        return self.services


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with emulated() as (emu, api):
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "web",
                    "namespace": NS,
                    "annotations": {f"{ME}/enabled": "true"},
                },
                "spec": {
                    "selector": {"app": "web"},
                    "ports": [{"port": 80, "targetPort": 8080}],
                },
            }
        )
        emu.store.create(pod_json("web-0", "10.0.0.1"))
        yield World(emu, api)


async def test_sync_writes_then_refuses_a_stale_cache(world: World) -> None:
    world.load()
    await world.syncer.sync(f"{NS}/web")
    assert world.writes("create") == 1
    assert world.synced("success") == 1
    # The index has not seen our create yet: acting now could duplicate the slice.
    with pytest.raises(StaleInformerCache):
        await world.syncer.sync(f"{NS}/web")
    assert world.synced("stale") == 1
    assert world.writes("create") == 1
    world.load()
    await world.syncer.sync(f"{NS}/web")  # caught up: nothing to do
    assert world.writes("create") + world.writes("update") == 1


async def test_first_failure_stops_the_remaining_writes(world: World) -> None:
    world.emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "web-legacy",
                "namespace": NS,
                "labels": {
                    "kubernetes.io/service-name": "web",
                    "endpointslice.kubernetes.io/managed-by": ME,
                },
            },
            "addressType": "FQDN",
            "endpoints": [],
        }
    )
    world.load()
    world.emu.faults = FaultConfig(fail_rate=1.0, fault_verbs={"create"}, fail_codes=(500,))
    with pytest.raises(SyncError):
        await world.syncer.sync(f"{NS}/web")
    assert world.writes("create") == 1
    assert world.writes("delete") == 0  # never reached after the failed create
    assert world.synced("error") == 1
    world.emu.faults = FaultConfig()
    await world.syncer.sync(f"{NS}/web")
    assert world.writes("delete") == 1
    assert world.emu.store.get("endpointslices", NS, "web-legacy") is None


async def test_failures_are_one_aggregated_event(world: World) -> None:
    world.load()
    world.emu.faults = FaultConfig(fail_rate=1.0, fault_verbs={"create"}, fail_codes=(500,))
    for _ in range(3):
        with pytest.raises(SyncError):
            await world.syncer.sync(f"{NS}/web")
    events = [
        e
        for e in world.emu.store.list("events", NS)
        if e["reason"] == "FailedToUpdateEndpointSlices"
    ]
    assert len(events) == 1
    assert events[0]["count"] == 3
    assert events[0]["source"]["component"] == "endpoint-slice-controller"
    assert events[0]["involvedObject"]["name"] == "web"


async def test_terminating_namespace_is_not_an_error(world: World) -> None:
    world.emu.store.create_namespace("going")
    namespace = world.emu.store.get("namespaces", None, "going")
    assert namespace is not None
    namespace["metadata"]["finalizers"] = ["example.com/hold"]
    world.emu.store.update(namespace)
    world.emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "web",
                "namespace": "going",
                "annotations": {f"{ME}/enabled": "true"},
            },
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        }
    )
    for svc in world.emu.store.list("services", "going"):
        world.indexes.services.upsert(svc)
    world.emu.store.delete("namespaces", None, "going")
    await world.syncer.sync("going/web")  # the placeholder create is refused: no error
    assert world.synced("success") == 1
    assert world.emu.requests.count(verb="create", resource="endpointslices", code=403) == 1


async def test_deleted_service_state_is_dropped_without_api_calls(world: World) -> None:
    world.load()
    await world.syncer.sync(f"{NS}/web")
    world.load()
    world.indexes.services.remove(NS, "web")
    before = len(world.emu.requests)
    await world.syncer.sync(f"{NS}/web")
    assert len(world.emu.requests) == before
    assert world.syncer.writes.tracker.generations(NS, "web") is None
    assert world.metrics.sample_value("endpoint_slice_controller_endpoints_desired") == 0


async def test_many_different_messages_are_combined_into_one_event(world: World) -> None:
    moment = [datetime(2026, 1, 1, tzinfo=UTC)]
    service = world.emu.store.get("services", NS, "web")
    assert service is not None
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(world.emu.kubeconfig_path), client_configuration=configuration
    )
    async with ApiClient(configuration) as api:
        recorder = EventRecorder(api, clock=lambda: moment[0])
        for i in range(14):
            await recorder.record(service, "Warning", "Flaky", f"attempt {i} failed")
        events = [e for e in world.emu.store.list("events", NS) if e["reason"] == "Flaky"]
        assert len(events) == 11  # ten distinct ones, then one combined Event
        combined = [e for e in events if e["message"].startswith("(combined from similar events)")]
        assert len(combined) == 1
        assert combined[0]["count"] == 4
        assert combined[0]["message"].endswith("attempt 13 failed")
        # after the 10-minute window, messages stand on their own again
        moment[0] += timedelta(minutes=11)
        await recorder.record(service, "Warning", "Flaky", "fresh")
        fresh = [e for e in world.emu.store.list("events", NS) if e["message"] == "fresh"]
        assert len(fresh) == 1


async def test_a_family_dropped_by_the_service_leaves_the_gauges(world: World) -> None:
    svc = world.emu.store.get("services", NS, "web")
    assert svc is not None
    svc["spec"]["ipFamilies"] = ["IPv4", "IPv6"]
    svc["spec"]["ipFamilyPolicy"] = "RequireDualStack"
    world.emu.store.update(svc)
    pod = world.emu.store.get("pods", NS, "web-0")
    assert pod is not None
    pod["status"]["podIPs"] = [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]
    world.emu.store.update(pod, subresource="status")
    world.load()
    await world.syncer.sync(f"{NS}/web")
    assert world.metrics.sample_value("endpoint_slice_controller_num_endpoint_slices", {}) == 2
    assert world.metrics.sample_value("endpoint_slice_controller_endpoints_desired", {}) == 2

    svc = world.emu.store.get("services", NS, "web")
    assert svc is not None
    svc["spec"]["ipFamilies"] = ["IPv4"]
    svc["spec"]["ipFamilyPolicy"] = "SingleStack"
    world.emu.store.update(svc)
    world.load()
    await world.syncer.sync(f"{NS}/web")
    assert world.metrics.sample_value("endpoint_slice_controller_num_endpoint_slices", {}) == 1
    assert world.metrics.sample_value("endpoint_slice_controller_endpoints_desired", {}) == 1
