"""A ServiceImport's ``status.endpointSliceObjects`` (KEP-1645, kubernetes/enhancements PR
#6037) against two API emulators: ``Present`` while this cluster holds imported slices of the
import, ``Absent`` while it holds none, written once per change, after the slices."""

from __future__ import annotations

from tests.controller.mcs_world import NS, World, export, service, source_slice, world


def presence(w: World) -> str | None:
    imported = w.imported()
    assert imported is not None
    return (imported.get("status") or {}).get("endpointSliceObjects")


async def test_present_with_imported_slices_and_one_status_write_on_creation() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert w.slices() == {"east": {"10.2.0.1"}, "west": {"10.1.0.1"}}
        assert presence(w) == "Present"
        assert w.syncer.counts.writes["serviceimports/status"] == 1
        before = w.syncer.counts.total
        await w.sync()
        assert w.syncer.counts.total == before  # in sync: no write


async def test_absent_while_no_exporter_has_an_endpoint_and_present_once_one_has() -> None:
    async with world() as w:
        w.emu.store.create(service())
        w.emu.store.create(export())
        await w.lease()
        await w.sync()
        assert w.slices() == {}
        assert presence(w) == "Absent"
        w.emu.store.create(source_slice("web-w", "10.1.0.1"))
        await w.sync()
        assert presence(w) == "Present"
        # Every endpoint gone in the source: the imported slice is deleted, the import stays.
        w.emu.store.delete("endpointslices", NS, "web-w")
        await w.sync()
        assert w.slices() == {}
        assert presence(w) == "Absent"
        assert w.syncer.counts.writes["serviceimports/status"] == 3


async def test_a_headless_import_with_endpoints_is_present() -> None:
    async with world() as w:
        w.emu.store.create(service(clusterIP="None"))
        w.emu.store.create(export())
        w.emu.store.create(source_slice("web-w", "10.1.0.1"))
        await w.lease()
        await w.sync()
        imported = w.imported()
        assert imported is not None and imported["spec"]["type"] == "Headless"
        assert presence(w) == "Present"


async def test_absent_when_the_derived_name_is_taken_and_its_slices_are_removed() -> None:
    async with world() as w:
        w.exported_both()
        await w.lease()
        await w.sync()
        assert presence(w) == "Present"
        derived = w.derived()
        assert derived is not None
        w.emu.store.delete("services", NS, derived["metadata"]["name"])
        theirs = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": derived["metadata"]["name"], "namespace": NS},
            "spec": {"ports": [{"name": "http", "port": 80}]},
        }
        w.emu.store.create(theirs)
        await w.sync()
        assert w.slices() == {}
        assert presence(w) == "Absent"
