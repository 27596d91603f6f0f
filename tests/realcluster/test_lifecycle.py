"""The operator as a process against a real kube-apiserver: opt-in, selection, readiness,
graceful deletion, foreign slices, opt-out, restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import (
    JSON,
    KCM,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    OURS,
    Kube,
    eventually,
)
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster


async def test_opt_in_by_annotation_publishes_the_pods(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    await o.pod(kube, ns, "web-1", "10.1.0.2")

    async def published() -> bool:
        slices = await kube.slices(ns, "web")
        assert o.ready_addresses(slices) == {"10.1.0.1", "10.1.0.2"}, slices
        return True

    await eventually(published)
    (only,) = await kube.slices(ns, "web")
    assert only["metadata"]["labels"][LABEL_SERVICE_NAME] == "web"
    assert only["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert only["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    view = o.endpoint_view([only])
    assert view["web-0"] == (("10.1.0.1",), True, True, False, "node-a", "zone-a", None)


async def converge(kube: Kube, ns: str, service: str, check: Any, timeout: float = 60) -> None:
    async def done() -> bool:
        slices = await kube.slices(ns, service)
        check(slices)
        return True

    await eventually(done, timeout=timeout)


async def test_opt_in_by_the_kep_4770_label(kube: Kube, ns: str, operator: OperatorProcess) -> None:
    await o.service(
        kube,
        ns,
        "web",
        opt_in=False,
        labels={o.CONTROLLER_NAME_LABEL: OURS},
        annotations={o.SELECTOR: "app=web"},
    )
    await o.service(kube, ns, "other", opt_in=False, annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")

    def one(slices: list[JSON]) -> None:
        assert o.addresses(slices) == {"10.1.0.1"}

    await converge(kube, ns, "web", one)
    assert await kube.slices(ns, "other", manager=None) == []


async def test_readiness_flips_and_graceful_deletion(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web,tier in (front)"})
    labels = {"app": "web", "tier": "front"}
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels=labels)
    await o.pod(kube, ns, "web-1", "10.1.0.2", labels=labels)
    await o.pod(kube, ns, "canary", "10.1.0.3", labels={"app": "web", "tier": "back"})

    def both_ready(slices: list[JSON]) -> None:
        view = o.endpoint_view(slices)
        assert set(view) == {"web-0", "web-1"}
        assert all(v[1] is True for v in view.values())

    await converge(kube, ns, "web", both_ready)
    await o.set_ready(kube, ns, "web-1", False, at="2026-01-01T00:01:00Z")

    def one_unready(slices: list[JSON]) -> None:
        view = o.endpoint_view(slices)
        assert view["web-1"][1:4] == (False, False, False)
        assert view["web-0"][1:4] == (True, True, False)

    await converge(kube, ns, "web", one_unready)
    await o.set_ready(kube, ns, "web-1", True, at="2026-01-01T00:02:00Z")
    await converge(kube, ns, "web", both_ready)

    # A graceful delete: no kubelet confirms it, so the pod stays Terminating.
    await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-0")

    def terminating(slices: list[JSON]) -> None:
        view = o.endpoint_view(slices)
        assert view["web-0"][1:4] == (False, True, True), view
        assert view["web-1"][1:4] == (True, True, False)

    await converge(kube, ns, "web", terminating)
    await kube.delete(
        f"/api/v1/namespaces/{ns}/pods/web-0",
        {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
    )

    def gone(slices: list[JSON]) -> None:
        assert set(o.endpoint_view(slices)) == {"web-1"}

    await converge(kube, ns, "web", gone)


async def test_foreign_slices_are_never_touched_and_opt_out_cleans_up_ours(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    foreign = await kube.create(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": "web-by-hand",
                "labels": {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: "someone-else.example"},
            },
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}],
        },
    )

    def ours(slices: list[JSON]) -> None:
        assert o.addresses(slices) == {"10.1.0.1"}

    await converge(kube, ns, "web", ours)
    # Opt out: our slices go, the foreign one stays exactly as it was.
    await kube.patch(
        f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"annotations": {o.ENABLED: None}}}
    )

    def none(slices: list[JSON]) -> None:
        assert slices == []

    await converge(kube, ns, "web", none)
    after = await kube.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/web-by-hand")
    assert after["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]


async def test_conflicting_controller_next_to_kube_controller_manager(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await o.service(kube, ns, "web", selector={"app": "web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")

    async def warned() -> bool:
        assert await kube.slices(ns, "web", manager=KCM), "kube-controller-manager's slice"
        events = await kube.events(ns, "ConflictingController")
        assert [e["type"] for e in events] == ["Warning"], events
        assert events[0]["involvedObject"]["name"] == "web"
        # Both publish the same endpoints; ours are written all the same.
        assert o.addresses(await kube.slices(ns, "web")) == {"10.1.0.1"}
        return True

    await eventually(warned, timeout=60)


async def test_a_restart_on_slices_that_are_right_writes_nothing(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    for i in range(150):  # two slices
        await o.pod(kube, ns, f"web-{i}", f"10.1.{i // 200}.{i % 200 + 1}")
    args = ("--namespace", ns)
    async with running(kube.kubeconfig, log_dir / "first.log", *args):

        def all_there(slices: list[JSON]) -> None:
            assert len(o.ready_addresses(slices)) == 150
            assert sorted(len(s["endpoints"]) for s in slices) == [50, 100]

        await converge(kube, ns, "web", all_there)
    before = await kube.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
    version = before["metadata"]["resourceVersion"]
    async with kube.watch(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices", resource_version=version
    ) as events:
        async with running(kube.kubeconfig, log_dir / "second.log", *args) as second:

            async def synced() -> bool:
                return (
                    await second.metric(r'endpoint_slice_controller_syncs\{result="success"\}') >= 1
                )

            await eventually(synced, timeout=60)
            assert await second.metric(r"endpoint_slice_controller_changes\{.*\}") == 0
        assert events == []


async def test_near_misses_of_the_opt_in_are_one_warning_each(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    prefix = o.ENABLED.rsplit("/", 1)[0]
    await o.service(
        kube, ns, "capital", selector={"app": "web"}, annotations={o.ENABLED: "True"}, opt_in=False
    )
    await o.service(
        kube,
        ns,
        "enable",
        selector={"app": "web"},
        annotations={f"{prefix}/enable": "true"},
        opt_in=False,
    )
    await o.service(kube, ns, "selectorless")
    await o.service(kube, ns, "plain", selector={"app": "web"}, opt_in=False)
    await o.pod(kube, ns, "web-0", "10.1.0.1")

    async def warned() -> bool:
        events = await kube.events(ns, "OptInIgnored")
        by_name = {e["involvedObject"]["name"]: e for e in events}
        assert sorted(by_name) == ["capital", "enable", "selectorless"], events
        assert all(e["type"] == "Warning" and e.get("count", 1) == 1 for e in events), events
        assert f'Set {o.ENABLED}: "true"' in by_name["capital"]["message"]
        assert f"rename it to {o.ENABLED}" in by_name["enable"]["message"]
        assert o.SELECTOR in by_name["selectorless"]["message"]
        return True

    await eventually(warned, timeout=60)
    for name in ("capital", "enable", "selectorless", "plain"):
        assert await kube.slices(ns, name) == []
