"""What ends up in the slices: opt-in, selectors, sizes, conditions, ports and families."""

from __future__ import annotations

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    CONTROLLER_NAME_LABEL,
    NS,
    SELECTOR,
    addresses,
    cluster,
    conditions,
    endpoints,
    eventually,
    pod,
    running_operator,
    service,
    set_ready,
    settle,
    slices,
    writes,
)


async def test_opt_in_by_annotation_and_by_label_and_not_otherwise() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "annotated", selector={"app": "web"})
        service(
            emu,
            "labelled",
            selector={"app": "web"},
            opt_in=False,
            labels={CONTROLLER_NAME_LABEL: "endpointslice-operator.io"},
        )
        service(emu, "plain", selector={"app": "web"}, opt_in=False)
        service(
            emu,
            "not-true",
            selector={"app": "web"},
            annotations={"endpointslice-operator.io/enabled": "yes"},
        )
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu) as op:
            await eventually(lambda: addresses(emu, "annotated") == {"10.1.0.1"})
            await eventually(lambda: addresses(emu, "labelled") == {"10.1.0.1"})
            await settle(op)
            assert slices(emu, "plain", managed_by=None) == []
            assert slices(emu, "not-true", managed_by=None) == []
            assert writes(emu) == {"create": 2, "update": 0, "delete": 0}
            only = slices(emu, "annotated")[0]
            assert only["metadata"]["generateName"] == "annotated-"
            assert only["metadata"]["ownerReferences"][0]["kind"] == "Service"
            assert only["metadata"]["annotations"][
                "endpoints.kubernetes.io/last-change-trigger-time"
            ]


async def test_selector_annotation_with_set_based_requirements() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "canary", annotations={SELECTOR: "app in (web, api), track notin (stable)"})
        pod(emu, "web-0", "10.1.0.1", labels={"app": "web", "track": "canary"})
        pod(emu, "api-0", "10.1.0.2", labels={"app": "api"})
        pod(emu, "web-1", "10.1.0.3", labels={"app": "web", "track": "stable"})
        pod(emu, "db-0", "10.1.0.4", labels={"app": "db"})
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "canary") == {"10.1.0.1", "10.1.0.2"})
            # a label change moves a pod in
            moved = emu.store.get("pods", NS, "db-0")
            assert moved is not None
            moved["metadata"]["labels"] = {"app": "api"}
            emu.store.update(moved)
            await eventually(
                lambda: addresses(emu, "canary") == {"10.1.0.1", "10.1.0.2", "10.1.0.4"}
            )


async def test_scale_up_and_down_across_the_100_boundary() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(5):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu) as op:
            await eventually(lambda: len(endpoints(emu, "web")) == 5)
            for i in range(5, 130):
                pod(emu, f"web-{i}", f"10.1.{i // 200}.{i % 200 + 1}")
            await eventually(lambda: len(endpoints(emu, "web")) == 130)
            await settle(op)
            # How the 130 spread depends on how the pod events were batched into syncs (the
            # fill keeps unchanged slices as they are); never more than 100 per slice.
            sizes = [len(s["endpoints"]) for s in slices(emu, "web")]
            assert len(sizes) == 2
            assert max(sizes) <= 100
            for i in range(40, 130):
                emu.store.delete("pods", NS, f"web-{i}")
            await eventually(lambda: len(endpoints(emu, "web")) == 40)
            await settle(op)
            assert all(len(s["endpoints"]) <= 100 for s in slices(emu, "web"))
            assert sum(len(s["endpoints"]) for s in slices(emu, "web")) == 40


async def test_readiness_flip_costs_exactly_one_put() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        for i in range(3):
            pod(emu, f"web-{i}", f"10.1.0.{i + 1}")
        async with running_operator(emu) as op:
            await eventually(lambda: len(endpoints(emu, "web")) == 3)
            await settle(op)
            before = writes(emu)
            set_ready(emu, "web-1", False)
            await eventually(lambda: conditions(emu, "web")["10.1.0.2"] == (False, False, False))
            await settle(op)
            after = writes(emu)
            assert after["update"] - before["update"] == 1
            # the written slice carries the pod's Ready transition as its trigger time
            (written,) = slices(emu, "web")
            trigger = written["metadata"]["annotations"][
                "endpoints.kubernetes.io/last-change-trigger-time"
            ]
            assert trigger == "2026-01-01T00:01:00Z"
            assert after["create"] == before["create"]
            assert after["delete"] == before["delete"]


async def test_pod_ip_change() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            current = emu.store.get("pods", NS, "web-0")
            assert current is not None
            current["status"]["podIP"] = "10.1.0.9"
            current["status"]["podIPs"] = [{"ip": "10.1.0.9"}]
            emu.store.update(current, subresource="status")
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.9"})
            assert len(slices(emu, "web")) == 1


async def test_named_ports_resolving_differently_make_two_slices() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "web",
            selector={"app": "web"},
            ports=[{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        )
        pod(
            emu,
            "web-0",
            "10.1.0.1",
            container_ports=[{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        )
        pod(
            emu,
            "web-1",
            "10.1.0.2",
            container_ports=[{"name": "http", "containerPort": 9090, "protocol": "TCP"}],
        )
        pod(emu, "web-2", "10.1.0.3", container_ports=[])
        async with running_operator(emu):

            def by_port() -> dict[int | None, set[str]]:
                return {
                    s["ports"][0]["port"] if s["ports"] else None: {
                        a for ep in s["endpoints"] for a in ep["addresses"]
                    }
                    for s in slices(emu, "web")
                }

            # A pod whose container has no port of that name still gets an endpoint, in a
            # slice without ports (upstream drops the unresolvable port for that pod only).
            await eventually(
                lambda: by_port() == {8080: {"10.1.0.1"}, 9090: {"10.1.0.2"}, None: {"10.1.0.3"}}
            )
            assert all(s["ports"][0]["name"] == "http" for s in slices(emu, "web") if s["ports"])


async def test_dual_stack() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(
            emu,
            "web",
            selector={"app": "web"},
            ipFamilies=["IPv4", "IPv6"],
            ipFamilyPolicy="RequireDualStack",
        )
        pod(emu, "web-0", ["10.1.0.1", "fd00::1"])
        pod(emu, "web-1", ["10.1.0.2"])
        async with running_operator(emu):

            def families() -> dict[str, set[str]]:
                return {
                    s["addressType"]: {a for ep in s["endpoints"] for a in ep["addresses"]}
                    for s in slices(emu, "web")
                }

            await eventually(
                lambda: families() == {"IPv4": {"10.1.0.1", "10.1.0.2"}, "IPv6": {"fd00::1"}}
            )


async def test_headless_service() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "db", selector={"app": "web"}, clusterIP="None", ports=[])
        pod(emu, "web-0", "10.1.0.1")
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "db") == {"10.1.0.1"})
            for s in slices(emu, "db"):
                assert s["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
                assert s["ports"] is None  # an empty list reads back as null (v1.24)


async def test_publish_not_ready_addresses() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"}, publishNotReadyAddresses=True)
        pod(emu, "web-0", "10.1.0.1", ready=False)
        async with running_operator(emu):
            await eventually(lambda: conditions(emu, "web") == {"10.1.0.1": (True, False, False)})


async def test_terminating_pods() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        body = pod(emu, "web-0", "10.1.0.1")
        pod(emu, "web-1", "10.1.0.2")
        async with running_operator(emu):
            await eventually(lambda: len(endpoints(emu, "web")) == 2)
            # A graceful deletion leaves the pod terminating (deletionTimestamp set).
            emu.store.delete("pods", NS, "web-0", grace_period_seconds=30)
            terminating = emu.store.get("pods", NS, "web-0")
            assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
            assert terminating["metadata"]["uid"] == body["metadata"]["uid"]
            await eventually(lambda: conditions(emu, "web").get("10.1.0.1") == (False, True, True))
            emu.store.delete("pods", NS, "web-0", grace_period_seconds=0)
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.2"})


async def test_selector_change_moves_the_endpoints() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        pod(emu, "api-0", "10.1.0.2", labels={"app": "api"})
        async with running_operator(emu):
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"})
            current = emu.store.get("services", NS, "web")
            assert current is not None
            current["spec"]["selector"] = {"app": "api"}
            emu.store.update(current)
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.2"})
            assert len(slices(emu, "web")) == 1
