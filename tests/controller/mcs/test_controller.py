"""MulticlusterController against API emulators (this cluster and a peer, real HTTP, virtual
time): standbys watch and queue nothing, the leader queues every import key once this cluster
is listed, then each change, and every key again when a peer's standing changes; its gauges."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

from endpointslice_operator.controller.mcs.controller import MulticlusterController
from endpointslice_operator.metrics import MulticlusterMetrics
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.faults import FaultConfig
from tests.controller.mcs.test_clusters import stopped, until
from tests.controller.mcs_world import (
    LEASE_LABEL,
    LEASES_NS,
    MANAGED_BY,
    MCS_NAME,
    ME,
    NS,
    SOURCE,
    api_client,
    export,
    name_cluster,
    serve_mcs,
    service,
    source_slice,
)

pytestmark = pytest.mark.looptime

PEER_TIMEOUT = 6.0  # probes every 2 s


def key(name: str, namespace: str = NS) -> str:
    return f"serviceimport:{namespace}/{name}"


class Queued:
    """What the controller queued, call by call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, keys: list[str]) -> None:
        self.calls.append(list(keys))

    def take(self) -> list[list[str]]:
        taken, self.calls = self.calls, []
        return taken


def imported_slice(source: str, name: str) -> dict[str, Any]:
    body = source_slice(name, "10.9.0.1", service_name="derived-x")
    body["metadata"]["labels"] = {
        "kubernetes.io/service-name": "derived-x",
        MCS_NAME: "old",
        SOURCE: source,
        MANAGED_BY: ME,
    }
    return body


def ready(controller: MulticlusterController) -> bool:
    """Whether its syncer syncs (read afresh: the controller's tasks change it meanwhile)."""
    return controller.syncer.ready


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"endpointslice_operator_mcs_{name}", labels)


def expire(emu: Emulator, cluster: str) -> None:
    """The cluster's Lease here, last renewed a minute ago (read at the next probe period)."""
    stored = emu.store.get("leases", LEASES_NS, f"eso-mcs-{cluster}")
    assert stored is not None
    moment = datetime.now(UTC) - timedelta(seconds=60)
    stored["spec"]["renewTime"] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    emu.store.update(stored)


async def clusters(local: Emulator, remote: Emulator) -> None:
    for emu, cluster in ((local, "west"), (remote, "east")):
        serve_mcs(emu)
        emu.store.create_namespace(NS)
        name_cluster(emu, cluster)
    local.store.create_namespace(LEASES_NS)


def controller_of(
    api: ApiClient,
    peers: tuple[Path, ...],
    queued: Queued,
    metrics: MulticlusterMetrics | None = None,
) -> MulticlusterController:
    """The controller of the tests: our name, Leases in LEASES_NS, PEER_TIMEOUT."""
    return MulticlusterController(
        api,
        peers=peers,
        config=ReconcilerConfig(controller_name=ME),
        lease_namespace=LEASES_NS,
        lease_prefix="eso",
        lease_label=LEASE_LABEL,
        peer_timeout=PEER_TIMEOUT,
        requeue=queued,
        metrics=metrics,
    )


async def test_the_leader_queues_every_key_once_listed_then_changes_then_standing_changes(
    tmp_path: Path,
) -> None:
    async with run_emulator() as local, run_emulator() as remote:
        await clusters(local, remote)
        local.store.create(service())
        local.store.create(export())
        local.store.create(source_slice("web-w", "10.1.0.1"))
        remote.store.create(service())
        remote.store.create(export())
        remote.store.create(source_slice("web-e", "10.2.0.1"))
        remote.store.create(export("api"))
        remote.store.create_namespace("later")
        remote.store.create({**export(), "metadata": {"name": "x", "namespace": "later"}})
        kubeconfig = tmp_path / "east.kubeconfig"
        kubeconfig.write_text(remote.kubeconfig_path.read_text())
        queued = Queued()
        registry = CollectorRegistry()
        async with await api_client(local) as api:
            controller = controller_of(
                api,
                (kubeconfig, tmp_path / "missing.kubeconfig"),
                queued,
                MulticlusterMetrics(registry),
            )
            assert controller.probe_every == PEER_TIMEOUT / 3
            syncer = controller.syncer
            peer = controller.peers[0]
            # a standby: warm caches, nothing queued
            watching = asyncio.create_task(controller.watch())
            try:
                await until(lambda: controller.local.complete and peer.cache.complete)
                remote.store.create(export("new"))
                await until(lambda: (NS, "new") in peer.cache.exports)
                assert queued.take() == [] and not ready(controller)
                client = peer.api_client
                assert client is not None
            finally:
                await stopped(watching)
            # stopped: every watch ended, the peer's connections closed
            assert peer.api_client is None and client.rest_client.pool_manager.closed
            controller.syncer.waiting.add(key("waiting"))
            running = asyncio.create_task(controller.run())
            try:
                await until(lambda: bool(queued.calls))
                first = queued.take()[0]
                assert first == [
                    key("x", "later"),
                    key("api"),
                    key("new"),
                    key("web"),
                    key("waiting"),
                ]
                assert ready(controller) and syncer.waiting == set()
                await until(lambda: "east" in controller.leases.renewed)
                await asyncio.sleep(PEER_TIMEOUT)  # the peer listed, its Lease renewed
                queued.take()
                # The peer whose kubeconfig never loaded has not been listed for longer than
                # the peer timeout: it counts as gone now (it no longer holds back removals),
                # a change of standing that queues every key once.
                await until(lambda: any(len(call) > 1 for call in queued.calls))
                queued.take()
                await asyncio.sleep(PEER_TIMEOUT)  # standing the same: nothing queued
                assert queued.take() == []
                # a change: its key
                remote.store.delete("serviceexports", NS, "api")
                await until(lambda: [key("api")] in queued.calls)
                # a namespace appears here: the peer's exports in it
                local.store.create_namespace("later")
                await until(lambda: [key("x", "later")] in queued.calls)
                assert [key("api"), key("x", "later")] not in queued.calls
                # the leader's syncer writes, its Events come from the multi-cluster controller
                await controller.syncer.sync(key("web"))
                (event,) = local.store.list("events", NS)
                assert event["source"]["component"] == "multicluster-controller"
                assert event["reason"] == "Ready"
                # gauges
                await asyncio.sleep(controller.probe_every)
                # Peers are named by their kubeconfig from the first scrape on.
                assert sample(registry, "peer_reachable", peer=str(kubeconfig)) == 1.0
                assert (
                    sample(registry, "peer_reachable", peer=str(tmp_path / "missing.kubeconfig"))
                    == 0.0
                )
                age = sample(registry, "peer_last_sync_age_seconds", peer=str(kubeconfig))
                assert age is not None and 0.0 <= age <= controller.probe_every * 2
                assert sample(registry, "imported_slices", source_cluster="east") == 1.0
                assert sample(registry, "imported_slices", source_cluster="west") == 1.0
                assert sample(registry, "exports", condition="Ready", status="True") == 1.0
                assert sample(registry, "exports", condition="Valid", status="True") == 1.0
                # the peer stops answering: once its Lease expires, every key again
                queued.take()
                remote.faults = FaultConfig(
                    fail_rate=1.0, fault_verbs={"list"}, fault_resources={"serviceexports"}
                )
                await until(lambda: not peer.reachable)
                expire(local, "east")
                await until(lambda: any(len(call) > 1 for call in queued.calls))
                assert controller.leases.expired("east")
                assert sample(registry, "peer_reachable", peer=str(kubeconfig)) == 0.0
            finally:
                await stopped(running)
            assert not ready(controller)
            assert all(p.api_client is None for p in controller.peers)
            queued.take()
            controller.local.handler("serviceexports")("ADDED", export("after"))
            assert queued.take() == []  # no longer leading: nothing queued


async def test_a_source_cluster_known_only_by_its_imported_slices_is_watched_by_its_lease(
    tmp_path: Path,
) -> None:
    async with run_emulator() as local:
        serve_mcs(local)
        local.store.create_namespace(NS)
        local.store.create_namespace(LEASES_NS)
        name_cluster(local, "west")
        local.store.create(imported_slice("north", "imp-1"))
        local.store.create(imported_slice("north", "imp-2"))
        queued = Queued()
        registry = CollectorRegistry()
        async with await api_client(local) as api:
            controller = controller_of(api, (), queued, MulticlusterMetrics(registry))
            await controller.leases.renew("north")
            running = asyncio.create_task(controller.run())
            try:
                await until(lambda: bool(queued.calls))
                assert queued.take() == [[key("old")]]
                await asyncio.sleep(controller.probe_every * 1.5)
                assert sample(registry, "imported_slices", source_cluster="north") == 2.0
                assert queued.take() == []
                expire(local, "north")
                await until(lambda: bool(queued.calls), PEER_TIMEOUT)
                assert queued.take() == [[key("old")]]
            finally:
                await stopped(running)


async def test_a_leader_waits_for_this_clusters_listings(tmp_path: Path) -> None:
    async with run_emulator() as local:
        local.store.create_namespace(LEASES_NS)  # the MCS CRDs are not installed yet
        queued = Queued()
        async with await api_client(local) as api:
            controller = controller_of(api, (), queued)
            running = asyncio.create_task(controller.run())
            try:
                await asyncio.sleep(30)
                assert queued.calls == [] and not controller.syncer.ready
                serve_mcs(local)
                local.store.create_namespace(NS)
                local.store.create(export())
                await until(lambda: bool(queued.calls), 120)
                assert queued.take() == [[key("web")]]
            finally:
                await stopped(running)


async def test_a_peer_whose_lease_expires_has_every_key_queued_again_and_no_kopf_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with run_emulator() as local, run_emulator() as remote:
        await clusters(local, remote)
        remote.store.create(export())
        kubeconfig = tmp_path / "east.kubeconfig"
        kubeconfig.write_text(remote.kubeconfig_path.read_text())
        queued = Queued()
        caplog.set_level(logging.DEBUG)
        async with await api_client(local) as api:
            controller = controller_of(api, (kubeconfig,), queued)
            peer = controller.peers[0]
            running = asyncio.create_task(controller.run())
            try:
                await until(lambda: "east" in controller.leases.renewed)
                await asyncio.sleep(PEER_TIMEOUT)
                queued.take()
                await asyncio.sleep(PEER_TIMEOUT)
                assert queued.take() == []
                remote.faults = FaultConfig(
                    fail_rate=1.0, fault_verbs={"list"}, fault_resources={"serviceexports"}
                )
                await until(lambda: not peer.reachable)
                expire(local, "east")
                await until(lambda: bool(queued.calls))
                assert queued.take() == [[key("web")]]  # no imported slice of it here
            finally:
                await stopped(running)
        # without a client configuration this cluster is list-watched: no Kopf is started
        assert not [r for r in caplog.records if r.name.startswith("kopf")]
