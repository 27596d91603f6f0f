"""ImportSyncer against two API emulators (this cluster and a peer, real HTTP): the
ServiceImport, its derived Service, the imported slices of each source cluster, and the status
and Events of this cluster's ServiceExport."""

from __future__ import annotations

import asyncio
import logging

import pytest

from endpointslice_operator.controller.mcs.clusters import API_TIMEOUT
from endpointslice_operator.controller.mcs.imports import ImportSyncer, MulticlusterSyncError
from endpointslice_operator.controller.work.budget import WriteBudget
from endpointslice_operator.reconciler.config import ReconcilerConfig
from endpointslice_operator.testing.faults import FaultConfig
from tests.controller.mcs_world import (
    DERIVED,
    KEY,
    MCS,
    ME,
    NS,
    SOURCE,
    export,
    gone_peer,
    load,
    service,
    source_slice,
    unknown_peer,
    world,
)


async def test_a_sync_before_ready_waits_and_keys_are_given_once_ready() -> None:
    async with world() as w:
        w.syncer = ImportSyncer(
            w.api, w.cache, [w.peer], w.leases, ReconcilerConfig(controller_name=ME)
        )
        assert not w.syncer.ready  # until this cluster's listings are in
        w.syncer.keys = lambda: ["serviceimport:b/x", "serviceimport:a/y"]
        assert w.syncer.all_keys() == []
        w.exported_both()
        await w.sync()
        assert w.syncer.waiting == {KEY} and w.imported() is None
        w.syncer.start_term()
        assert w.syncer.waiting == set()
        w.syncer.ready = True
        assert w.syncer.all_keys() == ["serviceimport:a/y", "serviceimport:b/x"]
        with pytest.raises(ValueError, match="not a ServiceImport key"):
            await w.syncer.sync(f"service:{NS}/web")


async def test_an_export_in_two_clusters_is_imported_with_both_clusters_slices() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        imported = w.imported()
        assert imported is not None
        assert imported["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == ME
        assert imported["status"]["clusters"] == [{"cluster": "east"}, {"cluster": "west"}]
        derived = w.derived()
        assert derived is not None
        assert derived["metadata"]["ownerReferences"][0]["uid"] == imported["metadata"]["uid"]
        assert imported["spec"]["ips"] == derived["spec"]["clusterIPs"]  # read back after it
        assert w.slices() == {"east": {"10.2.0.1"}, "west": {"10.1.0.1"}}
        assert w.conditions() == {
            "Valid": ("True", "Valid"),
            "Ready": ("True", "Ready"),
            "Conflict": ("False", "NoConflicts"),
        }
        assert w.events() == [("Normal", "Ready")]
        assert w.syncer.counts.writes == {
            "serviceimports": 2,
            "serviceimports/status": 1,
            "services": 1,
            "endpointslices": 2,
            "serviceexports/status": 1,
        }
        assert w.syncer.counts.total == 7
        assert w.metric("endpointslices") == 2
        for item in w.emu.store.list("endpointslices", NS, label_selector=SOURCE):
            assert w.tracker.has(item) and not w.tracker.should_sync(item)  # echo: no sync
        # in sync: a second sync writes nothing
        before = w.syncer.counts.total
        await w.sync()
        assert w.syncer.counts.total == before
        assert w.events() == [("Normal", "Ready")]


async def test_an_export_of_a_peer_whose_lease_expired_leaves_the_import() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert set(w.slices()) == {"east", "west"}
        await w.lease(age=120)  # the peer stopped renewing: gone
        await w.sync()
        assert w.slices() == {"west": {"10.1.0.1"}}
        imported = w.imported()
        assert imported is not None
        assert imported["status"]["clusters"] == [{"cluster": "west"}]


async def test_a_peer_without_a_lease_is_gone_and_its_slices_are_deleted() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        w.emu.store.delete("leases", "ops", "eso-mcs-east")
        await w.leases.refresh()
        await w.sync()
        assert w.slices() == {"west": {"10.1.0.1"}}


async def test_a_peer_not_listed_yet_keeps_its_slices_and_the_import() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        w.peer.cache.listed.clear()  # a new listing under way: unknown
        w.remote.store.delete("serviceexports", NS, "web")
        w.emu.store.delete("serviceexports", NS, "web")
        w.cache.exports.clear()
        await w.syncer.sync(KEY)
        assert set(w.slices()) == {"east", "west"}  # nothing removed while a peer is unknown
        assert w.imported() is not None


def faults(resource: str, *verbs: str) -> FaultConfig:
    """Every such request fails with 500 (nothing retries it: the key's backoff does)."""
    return FaultConfig(
        fail_rate=1.0, fault_verbs=set(verbs), fault_resources={resource}, fail_codes=(500,)
    )


async def test_peers_before_an_unknown_or_gone_one_do_not_hide_the_live_peer() -> None:
    async with gone_peer() as north, world(others=(unknown_peer(), north)) as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.slices() == {"east": {"10.2.0.1"}, "west": {"10.1.0.1"}}  # north: gone
        imported = w.imported()
        assert imported is not None
        assert imported["status"]["clusters"] == [{"cluster": "east"}, {"cluster": "west"}]


async def test_an_export_of_the_peer_only_is_imported_here() -> None:
    async with world() as w:
        w.exported_both()
        w.emu.store.delete("serviceexports", NS, "web")
        await w.lease()
        await w.sync()
        assert w.slices() == {"east": {"10.2.0.1"}}
        assert w.emu.requests.count(verb="update", resource="serviceexports") == 0


async def test_a_peer_export_in_a_namespace_this_cluster_lacks_writes_nothing() -> None:
    async with world() as w:
        w.exported_both()
        w.emu.store.delete("serviceexports", NS, "web")
        await w.lease()
        w.load()
        w.cache.namespaces.discard(NS)  # as listed before the namespace was made
        await w.syncer.sync(KEY)
        assert w.syncer.counts.total == 0 and w.imported() is None


@pytest.mark.looptime
async def test_a_peer_never_listed_holds_back_removals_only_until_the_peer_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with world(others=(unknown_peer(),)) as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        w.emu.store.delete("serviceexports", NS, "web")
        w.remote.store.delete("serviceexports", NS, "web")
        with caplog.at_level(logging.INFO, "endpointslice_operator.controller.mcs.imports"):
            await w.sync()
            await w.sync()  # told once, naming the peer and the import
            assert caplog.text.count(f"import {NS}/web: no listed cluster exports it") == 1
            assert "kept until peer(s) south.kubeconfig are listed" in caplog.text
            assert w.imported() is not None and set(w.slices()) == {"east", "west"}
            # South was never listed, so it has no Lease to tell how long it has been gone:
            # past --mcs-peer-timeout (60 s here) it counts as gone and holds nothing back.
            await asyncio.sleep(61)
            await w.lease()
            await w.sync()
        assert w.imported() is None and w.slices() == {}


async def test_a_peer_with_a_new_cluster_id_keeps_the_old_ids_slices_until_its_lease_expires(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        prop = w.remote.store.get("clusterproperties", None, "cluster.clusterset.k8s.io")
        assert prop is not None
        prop["spec"]["value"] = "east2"  # no Lease for it yet: not live
        w.remote.store.update(prop)
        w.emu.store.create(source_slice("web-w2", "10.1.0.2"))
        with caplog.at_level(logging.DEBUG, "endpointslice_operator.controller.mcs.imports"):
            await w.sync()
        assert "not listed yet" not in caplog.text
        assert w.slices() == {"east": {"10.2.0.1"}, "west": {"10.1.0.1", "10.1.0.2"}}


async def test_an_export_gone_everywhere_removes_the_import_its_service_and_slices() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        doomed = w.emu.store.list("endpointslices", NS, label_selector=SOURCE)
        w.emu.store.delete("serviceexports", NS, "web")
        w.remote.store.delete("serviceexports", NS, "web")
        before = w.syncer.counts.total
        w.load()
        await w.syncer.sync(KEY)
        assert w.imported() is None and w.slices() == {}
        assert w.emu.requests.count(verb="delete", resource="services") == 1
        assert w.emu.requests.count(verb="delete", resource="serviceimports") == 1
        assert all(w.tracker.handle_deletion(item) for item in doomed)  # ours: expected
        assert w.syncer.counts.total == before + 4
        # before the watch tells: our own writes are known, nothing is written again
        await w.syncer.sync(KEY)
        assert w.syncer.counts.total == before + 4
        # exported again before the watch tells: a new import, a new derived Service
        w.remote.store.create(export())
        load(w.remote, w.peer.cache)
        await w.syncer.sync(KEY)
        imported, derived = w.imported(), w.derived()
        assert imported is not None and derived is not None
        assert derived["metadata"]["ownerReferences"][0]["uid"] == imported["metadata"]["uid"]


async def test_an_import_not_ours_is_left_alone() -> None:
    async with world() as w:
        w.emu.store.create(
            {
                "apiVersion": MCS,
                "kind": "ServiceImport",
                "metadata": {"name": "web", "namespace": NS, "labels": {"team": "a"}},
                "spec": {"type": "ClusterSetIP", "ports": []},
            }
        )
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.derived() is None and w.slices() == {}
        imported = w.imported()
        assert imported is not None and imported["metadata"]["labels"] == {"team": "a"}
        w.emu.store.delete("serviceexports", NS, "web")
        w.remote.store.delete("serviceexports", NS, "web")
        await w.sync()
        assert w.imported() is not None  # not removed either
        assert w.emu.requests.count(verb="delete", resource="serviceimports") == 0


async def test_a_service_not_ours_at_the_derived_name_is_left_alone() -> None:
    async with world() as w:
        w.emu.store.create(service(DERIVED, port=9))
        w.exported_both()
        await w.lease()
        await w.sync()
        imported = w.imported()
        assert imported is not None and "ips" not in imported["spec"]
        derived = w.derived()
        assert derived is not None and derived["spec"]["ports"][0]["port"] == 9
        assert "ownerReferences" not in derived["metadata"]
        # no slice of ours gives that Service the clusterset's endpoints; this cluster's
        # export tells why it is not Ready
        assert w.slices() == {}
        assert w.conditions()["Ready"] == ("False", "Failed")
        (ready,) = [c for c in w.export_here()["status"]["conditions"] if c["type"] == "Ready"]
        assert (
            ready["message"] == f"Service {NS}/{DERIVED} (the derived Service's name) is not ours"
        )
        w.emu.store.delete("serviceexports", NS, "web")
        w.remote.store.delete("serviceexports", NS, "web")
        await w.sync()
        assert w.imported() is None and w.derived() is not None
        assert w.emu.requests.count(verb="delete", resource="services") == 0


async def test_a_port_change_updates_the_import_and_the_derived_service_in_place() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        derived = w.derived()
        assert derived is not None
        derived["spec"]["publishNotReadyAddresses"] = True  # set by someone else: kept
        w.emu.store.update(derived)
        imported = w.imported()
        assert imported is not None
        imported["status"]["note"] = "kept"
        w.emu.store.update(imported, subresource="status")
        for emu in (w.emu, w.remote):
            svc = emu.store.get("services", NS, "web")
            assert svc is not None
            svc["spec"]["ports"] = [{"name": "http", "port": 81}]
            emu.store.update(svc)
        await w.sync()
        after = w.derived()
        assert after is not None and after["metadata"]["uid"] == derived["metadata"]["uid"]
        assert [p["port"] for p in after["spec"]["ports"]] == [81]
        assert after["spec"]["publishNotReadyAddresses"] is True
        imported = w.imported()
        assert imported is not None and [p["port"] for p in imported["spec"]["ports"]] == [81]
        assert w.emu.requests.count(verb="delete", resource="services") == 0
        # the peer leaves (Lease gone): a status write, which keeps what others wrote there
        w.emu.store.delete("leases", "ops", "eso-mcs-east")
        await w.leases.refresh()
        await w.sync()
        imported = w.imported()
        assert imported is not None
        assert imported["status"] == {
            "clusters": [{"cluster": "west"}],
            "endpointSliceObjects": "Present",
            "note": "kept",
        }


async def test_a_headless_change_replaces_the_derived_service() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        derived = w.derived()
        assert derived is not None and derived["spec"]["clusterIP"] != "None"
        for emu in (w.emu, w.remote):
            svc = emu.store.get("services", NS, "web")
            assert svc is not None
            emu.store.delete("services", NS, "web")
            del svc["metadata"]["resourceVersion"], svc["metadata"]["uid"]
            svc["spec"] = {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}
            emu.store.create(svc)
        await w.sync()
        after = w.derived()
        assert after is not None and after["spec"]["clusterIP"] == "None"
        assert after["metadata"]["uid"] != derived["metadata"]["uid"]


async def test_a_failed_create_after_the_derived_service_was_deleted_creates_it_next_time() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        for emu in (w.emu, w.remote):
            svc = emu.store.get("services", NS, "web")
            assert svc is not None
            emu.store.delete("services", NS, "web")
            del svc["metadata"]["resourceVersion"], svc["metadata"]["uid"]
            svc["spec"] = {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}
            emu.store.create(svc)
        w.load()
        w.emu.faults = faults("services", "create")
        with pytest.raises(MulticlusterSyncError, match="writing derived Service"):
            await w.syncer.sync(KEY)
        w.emu.faults = FaultConfig()
        await w.syncer.sync(KEY)  # before the watch tells of the deletion
        assert w.emu.requests.count(verb="delete", resource="services") == 1
        derived = w.derived()
        assert derived is not None and derived["spec"]["clusterIP"] == "None"


async def test_conflicts_and_invalid_exports_are_told_on_the_export() -> None:
    async with world() as w:
        w.exported_both(sessionAffinity="ClientIP")
        await w.lease()
        await w.sync()
        assert w.conditions()["Conflict"][0] == "True"
        (warning,) = [e for e in w.emu.store.list("events", NS) if e["type"] == "Warning"]
        assert warning["reason"] == w.conditions()["Conflict"][1]
        assert "sessionAffinity" in warning["message"] or warning["message"]
        svc = w.remote.store.get("services", NS, "web")
        assert svc is not None
        svc["spec"]["sessionAffinity"] = "None"
        w.remote.store.update(svc)
        await w.sync()
        assert w.conditions()["Conflict"] == ("False", "NoConflicts")
        assert w.events()[-1] == ("Normal", "NoConflicts")
        w.emu.store.delete("services", NS, "web")  # the export names no Service here
        await w.sync()
        assert w.conditions()["Valid"] == ("False", "NoService")
        assert ("Warning", "NoService") in w.events()


async def test_without_a_cluster_id_this_clusters_export_is_failed() -> None:
    async with world(local_id=None) as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.conditions()["Ready"] == ("False", "Failed")
        assert w.slices() == {"east": {"10.2.0.1"}}


async def test_writes_take_budget_tokens() -> None:
    async with world() as w:
        w.syncer.budget = WriteBudget(qps=0.001, burst=7)
        w.exported_both()
        await w.lease()
        assert not w.syncer.budget.pressed()
        await w.sync()
        assert w.syncer.counts.total == 7 and w.syncer.budget.pressed()


class CountingBudget(WriteBudget):
    """A write budget that never makes anyone wait and counts the tokens taken."""

    def __init__(self) -> None:
        super().__init__(qps=1000.0, burst=1000)
        self.taken = 0

    async def acquire(self) -> float:
        self.taken += 1
        return await super().acquire()


async def test_replacing_the_derived_service_takes_a_token_for_its_delete_and_its_create() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        before = dict(w.syncer.counts.writes)
        w.syncer.budget = budget = CountingBudget()
        for emu in (w.emu, w.remote):  # headless now: the derived Service is replaced
            svc = emu.store.get("services", NS, "web")
            assert svc is not None
            emu.store.delete("services", NS, "web")
            del svc["metadata"]["resourceVersion"], svc["metadata"]["uid"]
            svc["spec"] = {"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}
            emu.store.create(svc)
        await w.sync()
        assert (w.count("delete", "services"), w.count("create", "services")) == (1, 2)
        written = {k: n - before.get(k, 0) for k, n in w.syncer.counts.writes.items()}
        assert written["services"] == 2  # the delete and the create
        assert budget.taken == sum(written.values())  # one token per write, each counted


async def test_an_update_of_an_imported_slice_takes_a_token_and_is_counted() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.metric("endpointslices") == 2
        before = dict(w.syncer.counts.writes)
        w.syncer.budget = budget = CountingBudget()
        moved = w.remote.store.get("endpointslices", NS, "web-e")
        assert moved is not None
        moved["endpoints"][0]["addresses"] = ["10.2.0.9"]
        w.remote.store.update(moved)
        await w.sync()
        assert w.slices() == {"east": {"10.2.0.9"}, "west": {"10.1.0.1"}}
        assert w.count("update", "endpointslices") == 1
        written = {k: n - before.get(k, 0) for k, n in w.syncer.counts.writes.items()}
        assert {k: n for k, n in written.items() if n} == {"endpointslices": 1}
        assert w.metric("endpointslices") == 3
        assert budget.taken == 1


async def test_an_unchanged_condition_is_not_announced_again_when_another_changes() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.events() == [("Normal", "Ready")]
        svc = w.remote.store.get("services", NS, "web")
        assert svc is not None
        svc["spec"]["sessionAffinity"] = "ClientIP"  # a conflict: Ready stays True
        w.remote.store.update(svc)
        await w.sync()
        conflict = w.conditions()["Conflict"]
        assert conflict[0] == "True" and w.conditions()["Ready"] == ("True", "Ready")
        assert w.events() == [("Normal", "Ready"), ("Warning", conflict[1])]


@pytest.mark.parametrize(
    ("resource", "verbs", "message"),
    [
        ("serviceimports", ("create",), "creating ServiceImport"),
        ("services", ("create",), "writing derived Service"),
        ("endpointslices", ("create",), "writing imported slices"),
        ("serviceexports", ("update",), "writing serviceexports/status"),
    ],
)
async def test_a_failed_write_is_an_error_for_the_key_backoff(
    resource: str, verbs: tuple[str, ...], message: str
) -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        w.load()
        w.emu.faults = faults(resource, *verbs)
        with pytest.raises(MulticlusterSyncError, match=message):
            await w.syncer.sync(KEY)


async def test_failed_updates_and_removals_are_errors_for_the_key_backoff() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        svc = w.remote.store.get("services", NS, "web")
        assert svc is not None
        svc["spec"]["ports"] = [{"name": "http", "port": 81}]
        w.remote.store.update(svc)
        w.load()
        w.emu.faults = faults("serviceimports", "update")
        with pytest.raises(MulticlusterSyncError, match="updating ServiceImport"):
            await w.syncer.sync(KEY)
        w.emu.faults = FaultConfig()
        w.emu.store.delete("serviceexports", NS, "web")
        w.remote.store.delete("serviceexports", NS, "web")
        await w.sync()
        w.emu.faults = faults("serviceimports", "delete")
        w.remote.store.create(export())
        await w.sync()
        w.remote.store.delete("serviceexports", NS, "web")
        w.load()
        with pytest.raises(MulticlusterSyncError, match="removing ServiceImport"):
            await w.syncer.sync(KEY)


async def test_an_import_created_meanwhile_is_a_conflict_to_retry() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        w.load()
        w.emu.store.create(
            {
                "apiVersion": MCS,
                "kind": "ServiceImport",
                "metadata": {"name": "web", "namespace": NS},
                "spec": {"type": "ClusterSetIP", "ports": []},
            }
        )
        with pytest.raises(MulticlusterSyncError, match="exists"):
            await w.syncer.sync(KEY)


@pytest.mark.looptime
async def test_a_sync_gives_up_after_four_api_timeouts() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        w.load()
        # each write answers within its own timeout; seven of them outlast the sync's
        w.emu.faults = FaultConfig(latency=API_TIMEOUT * 0.8, fault_resources={"*"})
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(TimeoutError):
            await w.syncer.sync(KEY)
        assert loop.time() - started == pytest.approx(API_TIMEOUT * 4, abs=1.0)


async def test_an_export_in_a_namespace_being_deleted_is_no_longer_ready() -> None:
    async with world(others=(unknown_peer(),)) as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.conditions()["Ready"] == ("True", "Ready")
        namespace = w.emu.store.get("namespaces", None, NS)
        assert namespace is not None
        w.cache.handler("namespaces")("DELETED", namespace)  # its exports' events still to come
        await w.syncer.sync(KEY)
        assert w.imported() is not None  # not removed while a peer is unknown
        assert w.conditions()["Ready"] == ("False", "Pending")


async def test_imported_slices_are_deleted_when_a_service_not_ours_takes_the_derived_name() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert set(w.slices()) == {"east", "west"}
        w.emu.store.delete("services", NS, DERIVED)
        w.emu.store.create(service(DERIVED, port=9))  # someone else's, before our next sync
        await w.sync()
        assert w.slices() == {} and w.conditions()["Ready"] == ("False", "Failed")
        await w.sync()  # nothing more to delete
        assert w.emu.requests.count(verb="delete", resource="endpointslices") == 2
        w.emu.store.delete("services", NS, DERIVED)  # gone: ours again
        await w.sync()
        assert set(w.slices()) == {"east", "west"}
        assert w.conditions()["Ready"] == ("True", "Ready")
