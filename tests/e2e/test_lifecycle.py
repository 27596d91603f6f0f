"""Service lifecycle: opt-out, deletion, foreign slices, conflicts, bad selectors, restarts."""

from __future__ import annotations

from functools import partial
from typing import Any

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    ENABLED,
    NS,
    SELECTOR,
    addresses,
    cluster,
    events,
    eventually,
    foreign_slice,
    namespace,
    pod,
    running_operator,
    service,
    settle,
    slices,
    writes,
)

UPSTREAM = "endpointslice-controller.k8s.io"


def update_service(emu: Any, name: str, change: Any) -> None:
    current = emu.store.get("services", NS, name)
    assert current is not None
    change(current)
    emu.store.update(current)


async def test_opt_out_deletes_our_slices() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "by-annotation", selector={"app": "web"})
        service(emu, "to-external", selector={"app": "web"})
        service(emu, "to-selectorless", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu):
            for name in ("by-annotation", "to-external", "to-selectorless"):
                await eventually(partial(lambda n: addresses(emu, n) == {"10.1.0.1"}, name))
            update_service(
                emu, "by-annotation", lambda s: s["metadata"]["annotations"].pop(ENABLED)
            )

            def to_external(s: dict[str, Any]) -> None:
                s["spec"] = {"type": "ExternalName", "externalName": "example.com"}

            update_service(emu, "to-external", to_external)
            update_service(emu, "to-selectorless", lambda s: s["spec"].pop("selector"))
            for name in ("by-annotation", "to-external", "to-selectorless"):
                await eventually(partial(lambda n: slices(emu, n) == [], name))


async def test_service_deletion_leaves_cleanup_to_the_garbage_collector() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            emu.store.delete("services", NS, "web")
            await eventually(lambda: slices(emu, "web") == [])  # ownerReference GC
            await settle(op)
            assert writes(emu)["delete"] == 0  # we never deleted them ourselves
            assert op.syncer is not None
            assert op.syncer.writes.tracker.generations(NS, "web") is None


async def test_foreign_slices_are_untouched_and_conflicts_reported_once() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        service(emu, "selectorless", annotations={SELECTOR: "app=web"})
        pod(emu, "web-0", "10.1.0.1")
        other = foreign_slice(emu, "web-by-someone", "web", "someone-else")
        upstream = foreign_slice(emu, "web-upstream", "web", UPSTREAM)
        foreign_slice(emu, "selectorless-upstream", "selectorless", UPSTREAM)
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await eventually(lambda: addresses(emu, "selectorless") == {"10.1.0.1"})
            await eventually(lambda: len(events(emu, "ConflictingController")) == 1)
            # more syncs of the Service do not repeat the warning
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            conflict = events(emu, "ConflictingController")
            assert len(conflict) == 1
            assert conflict[0]["involvedObject"]["name"] == "web"  # not the selectorless one
            assert conflict[0]["type"] == "Warning"
            for original in (other, upstream):
                now = emu.store.get("endpointslices", NS, original["metadata"]["name"])
                assert now is not None
                assert now["metadata"]["resourceVersion"] == original["metadata"]["resourceVersion"]


async def test_selector_annotation_beside_spec_selector_is_reported_once() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"}, annotations={SELECTOR: "app=other"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "other-0", "10.1.0.9", labels={"app": "other"})
        async with running_operator(emu) as op:
            # spec.selector wins
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await eventually(lambda: len(events(emu, "SelectorAnnotationIgnored")) == 1)
            pod(emu, "web-1", "10.1.0.2")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1", "10.1.0.2"})
            await settle(op)
            (event,) = events(emu, "SelectorAnnotationIgnored")
            assert event["type"] == "Warning"
            assert event["involvedObject"]["name"] == "web"
            assert SELECTOR in event["message"]


async def test_invalid_selector_gets_an_event_and_no_writes() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "bad", annotations={SELECTOR: "app in (web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: events(emu, "InvalidSelector"))
            await settle(op)
            assert writes(emu) == {"create": 0, "update": 0, "delete": 0}
            assert (
                "endpointslice-operator.io/selector" in events(emu, "InvalidSelector")[0]["message"]
            )
            # fixing it publishes the slice
            update_service(
                emu,
                "bad",
                lambda s: s["metadata"]["annotations"].update({SELECTOR: "app in (web)"}),
            )
            await eventually(lambda: addresses(emu, "bad") == {"10.1.0.1"})


async def test_restart_with_slices_already_right_writes_nothing() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        service(emu, "empty", selector={"app": "nothing"})
        for i in range(3):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu) as op:
            await eventually(lambda: len(addresses(emu, "web")) == 3)
            await eventually(lambda: len(slices(emu, "empty")) == 1)  # the placeholder
            await settle(op)
        before = writes(emu)
        async with running_operator(emu) as op:
            await settle(op)
            # both Services were synced, with nothing to write
            assert (
                op.metrics.sample_value("endpoint_slice_controller_syncs", {"result": "success"})
                == 2
            )
        assert writes(emu) == before


async def test_malformed_pod_is_skipped_with_an_event_and_others_unaffected() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        service(emu, "other", selector={"app": "other"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "other-0", "10.1.0.7", labels={"app": "other"})
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            broken = emu.store.get("pods", NS, "web-0")
            assert broken is not None
            # The emulator validates like the API server, so the bad IP is injected into the
            # operator's index directly, as a watch event from a misbehaving server would.
            assert op.router is not None
            broken["status"]["podIPs"] = [{"ip": "not-an-ip"}]
            broken["metadata"]["resourceVersion"] = "999999"
            op.router.on_pod("MODIFIED", broken)
            invalid = await eventually(lambda: events(emu, "InvalidInput"))
            assert "not-an-ip" in invalid[0]["message"]
            await settle(op)
            assert addresses(emu, "web") == set()
            assert addresses(emu, "other") == {"10.1.0.7"}
            assert (
                op.metrics.sample_value("endpoint_slice_controller_syncs", {"result": "error"})
                is None
            )


async def test_only_the_configured_namespaces_are_watched() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        namespace(emu, "elsewhere")
        service(emu, "web", selector={"app": "web"})
        service(emu, "web", selector={"app": "web"}, namespace="elsewhere")
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-0", "10.2.0.1", namespace="elsewhere")
        async with running_operator(emu, namespaces=(NS,)) as op:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            await settle(op)
            assert slices(emu, "web", namespace="elsewhere") == []
            assert op.indexes.counts()["pods"] == 1


async def test_near_misses_of_the_opt_in_get_one_warning_naming_the_fix() -> None:
    prefix = ENABLED.rsplit("/", 1)[0]
    async with run_emulator() as emu:
        cluster(emu)
        pod(emu, "web-0", "10.1.0.1")
        service(
            emu, "capital", selector={"app": "web"}, annotations={ENABLED: "True"}, opt_in=False
        )
        service(emu, "yes", selector={"app": "web"}, annotations={ENABLED: "yes"}, opt_in=False)
        service(
            emu,
            "enable",
            selector={"app": "web"},
            annotations={f"{prefix}/enable": "true"},
            opt_in=False,
        )
        service(emu, "selectorless")  # opted in, no selector annotation
        service(emu, "mirrored", annotations={f"{prefix}/source": "endpoints"})
        service(emu, "plain", selector={"app": "web"}, opt_in=False)
        service(emu, "off", selector={"app": "web"}, annotations={ENABLED: "false"}, opt_in=False)
        async with running_operator(emu) as op:
            await eventually(lambda: len(events(emu, "OptInIgnored")) == 4)
            # later syncs of the same Services do not repeat the warning
            update_service(emu, "capital", lambda s: s["metadata"]["labels"].update(x="y"))
            update_service(emu, "selectorless", lambda s: s["metadata"]["labels"].update(x="y"))
            await settle(op)
            by_name = {e["involvedObject"]["name"]: e for e in events(emu, "OptInIgnored")}
            assert sorted(by_name) == ["capital", "enable", "selectorless", "yes"]
            assert all(e["type"] == "Warning" and e["count"] == 1 for e in by_name.values())
            assert f"{ENABLED} is 'True'" in by_name["capital"]["message"]
            assert f'Set {ENABLED}: "true"' in by_name["capital"]["message"]
            assert f"rename it to {ENABLED}" in by_name["enable"]["message"]
            assert SELECTOR in by_name["selectorless"]["message"]
            # nothing was written for any of them, and Services without our annotations (or
            # with a plain "false") cost no sync
            assert writes(emu) == {"create": 0, "update": 0, "delete": 0}
            syncs = op.metrics.sample_value(
                "endpoint_slice_controller_syncs", {"result": "success"}
            )
            # five Services at the start (the mirrored one again once Endpoints are listed), two
            # updates: none for "plain" and "off"
            assert syncs == 8, syncs
            # fixing the mistake publishes, and a new mistake is reported again
            update_service(
                emu, "capital", lambda s: s["metadata"]["annotations"].update({ENABLED: "true"})
            )
            await eventually(lambda: addresses(emu, "capital") == {"10.1.0.1"})
            update_service(
                emu, "capital", lambda s: s["metadata"]["annotations"].update({ENABLED: "1"})
            )
            await eventually(lambda: len(events(emu, "OptInIgnored")) == 5)
