"""The multi-cluster controller's connections: list-watches of a cluster into its cache, the
peers' Leases, and a peer's watch and probe, against API emulators (real HTTP; virtual time
where it waits)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.mcs.cache import LOCAL_KINDS, ClusterCache, LocalCache
from endpointslice_operator.controller.mcs.clusters import LeaseBook, Peer, watch_cluster
from endpointslice_operator.testing import run_emulator
from endpointslice_operator.testing.faults import FaultConfig
from tests.controller.mcs_world import (
    LEASE_LABEL,
    LEASES_NS,
    ME,
    NS,
    api_client,
    export,
    name_cluster,
    serve_mcs,
)

pytestmark = pytest.mark.looptime

CLUSTERS = "endpointslice_operator.controller.mcs.clusters"
JUNK_CA_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {{server: "https://127.0.0.1:1", certificate-authority: "{ca}"}}
users:
- name: u
  user: {{token: t}}
contexts:
- name: x
  context: {{cluster: c, user: u}}
current-context: x
"""


async def until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait (virtual time) until ``condition`` holds."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.05)


def state(peer: Peer) -> tuple[bool, bool]:
    """(reachable, has a client), read afresh (the peer's tasks change them meanwhile)."""
    return peer.reachable, peer.api_client is not None


async def stopped(task: asyncio.Task[Any]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def lease(name: str, spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASES_NS, "labels": {LEASE_LABEL: "true"}},
        **({"spec": spec} if spec is not None else {}),
    }


async def test_a_cluster_is_list_watched_into_its_cache_namespaced_kinds_in_its_namespaces() -> (
    None
):
    async with run_emulator() as emu, await api_client(emu) as api:
        serve_mcs(emu)
        name_cluster(emu, "west")
        emu.store.create_namespace(NS)
        emu.store.create_namespace("other")
        emu.store.create(export())
        emu.store.create({**export(), "metadata": {"name": "web", "namespace": "other"}})
        emu.store.create(
            {
                "apiVersion": "multicluster.x-k8s.io/v1beta1",
                "kind": "ServiceImport",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"type": "ClusterSetIP", "ports": []},
            }
        )
        cache = LocalCache(lambda _key: None, ME)
        task = asyncio.create_task(
            watch_cluster(api, cache, namespaces=[NS], skip=("serviceimports",))
        )
        try:
            await until(lambda: cache.listed == set(LOCAL_KINDS) - {"serviceimports"})
            assert cache.cluster_id == "west" and {NS, "other"} <= cache.namespaces
            assert set(cache.exports) == {(NS, "web")}  # namespaced kinds: its namespaces only
            assert cache.imports == {} and not cache.complete  # skipped: never listed here
            emu.store.delete("serviceexports", NS, "web")
            await until(lambda: not cache.exports)  # and watched
        finally:
            await stopped(task)


async def test_service_imports_are_watched_in_the_given_namespaces_only() -> None:
    """Like the exports, Services and EndpointSlices: with namespaces given, no cluster-wide
    list or watch of ServiceImports (which would need cluster-wide RBAC)."""
    async with run_emulator() as emu, await api_client(emu) as api:
        serve_mcs(emu)
        name_cluster(emu, "west")
        for namespace in (NS, "other"):
            emu.store.create_namespace(namespace)
            emu.store.create(
                {
                    "apiVersion": "multicluster.x-k8s.io/v1beta1",
                    "kind": "ServiceImport",
                    "metadata": {"name": "web", "namespace": namespace},
                    "spec": {"type": "ClusterSetIP", "ports": []},
                }
            )
        cache = LocalCache(lambda _key: None, ME)
        task = asyncio.create_task(watch_cluster(api, cache, namespaces=[NS]))
        try:
            await until(lambda: cache.listed == set(LOCAL_KINDS))
            assert set(cache.imports) == {(NS, "web")}
            for kind in ("serviceexports", "serviceimports", "services", "endpointslices"):
                requests = emu.requests.filter(resource=kind)
                assert requests and {r.namespace for r in requests} == {NS}, kind
        finally:
            await stopped(task)


async def test_leases_are_read_by_label_and_junk_ones_are_skipped() -> None:
    async with run_emulator() as emu, await api_client(emu) as api:
        emu.store.create_namespace(LEASES_NS)
        moment = "2030-01-02T03:04:05.000000Z"
        emu.store.create(lease("a", {"holderIdentity": "east", "renewTime": moment}))
        emu.store.create(lease("b", None))
        emu.store.create(lease("c", {"holderIdentity": "north", "renewTime": "yesterday"}))
        emu.store.create(lease("d", {"renewTime": moment}))
        emu.store.create(lease("e", {"holderIdentity": "south"}))
        other = lease("f", {"holderIdentity": "west", "renewTime": moment})
        other["metadata"]["labels"] = {}
        emu.store.create(other)
        book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=10)
        await book.refresh()
        assert book.renewed == {"east": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)}
        emu.store.delete("leases", LEASES_NS, "a")
        await book.refresh()
        assert book.renewed == {}
        emu.faults = FaultConfig(fail_rate=1.0, fault_verbs={"list"}, fault_resources={"leases"})
        with pytest.raises(ApiError):
            await book.refresh()


async def test_a_lease_expires_only_after_the_timeout() -> None:
    async with run_emulator() as emu, await api_client(emu) as api:
        book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=10)
        moment = datetime(2030, 1, 1, tzinfo=UTC)
        book.renewed["east"] = moment
        assert book.expired("west", moment)  # no Lease at all
        assert not book.expired("east", moment + timedelta(seconds=10))
        assert book.expired("east", moment + timedelta(seconds=10.001))
        assert not book.expired("east", moment - timedelta(seconds=30))
        book.renewed["east"] = datetime.now(UTC)
        assert not book.expired("east")  # now, by default
        book.renewed["east"] = datetime.now(UTC) - timedelta(seconds=11)
        assert book.expired("east")


async def test_a_lease_is_created_then_renewed_keeping_what_others_set() -> None:
    async with run_emulator() as emu, await api_client(emu) as api:
        emu.store.create_namespace(LEASES_NS)
        book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=0.5)
        await book.renew("east")
        made = emu.store.get("leases", LEASES_NS, "eso-mcs-east")
        assert made is not None
        assert made["metadata"]["labels"] == {LEASE_LABEL: "true"}
        assert made["spec"]["holderIdentity"] == "east"
        assert made["spec"]["leaseDurationSeconds"] == 1  # at least a second
        first = book.renewed["east"]
        made["spec"]["acquireTime"] = "2030-01-01T00:00:00.000000Z"
        emu.store.update(made)
        await asyncio.sleep(1)
        await book.renew("east")
        renewed = emu.store.get("leases", LEASES_NS, "eso-mcs-east")
        assert renewed is not None
        assert renewed["spec"]["acquireTime"] == "2030-01-01T00:00:00.000000Z"
        assert renewed["spec"]["renewTime"] != made["spec"]["renewTime"]
        assert book.renewed["east"] >= first
        await book.refresh()
        assert set(book.renewed) == {"east"}
        emu.faults = FaultConfig(fail_rate=1.0, fault_verbs={"get"}, fault_resources={"leases"})
        with pytest.raises(ApiError):
            await book.renew("east")  # only a 404 makes a new one


async def test_a_peer_is_watched_once_its_kubeconfig_loads_and_probed_while_it_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with run_emulator() as local, run_emulator() as remote:
        local.store.create_namespace(LEASES_NS)
        serve_mcs(remote)
        remote.store.create_namespace(NS)
        name_cluster(remote, "east")
        kubeconfig = tmp_path / "east.kubeconfig"
        peer = Peer(kubeconfig, ClusterCache("east", lambda _key: None))
        assert state(peer) == (False, False)
        async with await api_client(local) as api:
            book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=30)
            caplog.set_level(logging.INFO, CLUSTERS)
            running = asyncio.create_task(peer.run(book, probe_every=5.0))
            try:
                await asyncio.sleep(12)  # no kubeconfig yet: retried every 5 s, told once
                assert state(peer) == (False, False)
                assert caplog.text.count("cannot load its kubeconfig") == 1
                assert "no file" in caplog.text
                assert "Config not found" not in caplog.text  # the library's own line
                # one whose CA file holds no certificate: no client can be made, tried again
                (tmp_path / "ca.crt").write_text("not a certificate\n")
                kubeconfig.write_text(JUNK_CA_KUBECONFIG.format(ca=tmp_path / "ca.crt"))
                await asyncio.sleep(10)
                assert not running.done() and state(peer) == (False, False)
                assert "no certificate" in caplog.text
                # another error: told once more (one line per change, not per try)
                assert caplog.text.count("cannot load its kubeconfig") == 2
                kubeconfig.write_text(remote.kubeconfig_path.read_text())
                await until(lambda: peer.cache.complete and "east" in book.renewed)
                assert caplog.text.count("its kubeconfig loads now") == 1
                assert state(peer) == (True, True)
                assert local.store.get("leases", LEASES_NS, "eso-mcs-east") is not None
                assert caplog.text.count("answers") == 1
                # it stops answering: unreachable, its Lease no longer renewed
                remote.faults = FaultConfig(
                    fail_rate=1.0, fault_verbs={"list"}, fault_resources={"serviceexports"}
                )
                await until(lambda: not peer.reachable)
                assert caplog.text.count("does not answer") == 1
                renewed = book.renewed["east"]
                await asyncio.sleep(20)
                assert book.renewed["east"] == renewed and not peer.reachable
                assert caplog.text.count("does not answer") == 1
                # slow answers: given up after two probe periods
                remote.faults = FaultConfig(
                    latency=12.0, fault_verbs={"list"}, fault_resources={"serviceexports"}
                )
                await asyncio.sleep(30)
                assert not peer.reachable
                remote.faults = FaultConfig(
                    latency=8.0, fault_verbs={"list"}, fault_resources={"serviceexports"}
                )
                await until(lambda: peer.reachable)
                assert caplog.text.count("answers") == 2
            finally:
                await stopped(running)
            assert not state(peer)[1] and running.cancelled()


async def test_a_peer_whose_listings_are_not_in_gets_no_lease() -> None:
    async with run_emulator() as local, run_emulator() as remote:
        local.store.create_namespace(LEASES_NS)
        serve_mcs(remote)
        async with await api_client(local) as api, await api_client(remote) as remote_api:
            book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=30)
            peer = Peer(Path("unused"), ClusterCache("east", lambda _key: None))
            peer.cache.cluster_id = "east"  # known, but not every kind is listed
            peer.api_client = remote_api
            probing = asyncio.create_task(peer.probe(book, probe_every=5.0))
            try:
                await until(lambda: peer.reachable)
                await asyncio.sleep(20)
                assert book.renewed == {}
                for kind in peer.cache.kinds:
                    peer.cache.listed_callback(kind)(None)
                peer.cache.cluster_id = None  # listed, but no cluster id
                await asyncio.sleep(20)
                assert book.renewed == {}
                peer.cache.cluster_id = "east"
                await until(lambda: "east" in book.renewed)
            finally:
                await stopped(probing)


async def test_a_probe_waits_for_the_watch_to_load_the_kubeconfig() -> None:
    async with run_emulator() as local, await api_client(local) as api:
        book = LeaseBook(api, namespace=LEASES_NS, prefix="eso", label=LEASE_LABEL, timeout=30)
        peer = Peer(Path("unused"), ClusterCache("east", lambda _key: None))
        peer.reachable = True  # stale
        probing = asyncio.create_task(peer.probe(book, probe_every=5.0))
        try:
            await asyncio.sleep(1)
            assert not peer.reachable
            assert not probing.done()
        finally:
            await stopped(probing)
