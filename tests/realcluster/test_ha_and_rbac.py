"""Two replicas with leader election on a real Lease, and the operator under the chart's own
RBAC through a ServiceAccount token."""

from __future__ import annotations

import asyncio
import re
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scripts.render_manifests import render_objects
from tests.realcluster import objects as o
from tests.realcluster.chart_rbac import chart_account, published
from tests.realcluster.conftest import Cluster
from tests.realcluster.deadline import slowdown
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster

LEADER = "endpointslice_operator_leader"


async def leaders(*replicas: OperatorProcess) -> list[OperatorProcess]:
    return [r for r in replicas if await r.metric(LEADER) == 1]


async def test_two_replicas_one_leader_and_failover_after_kill_9(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    await o.node(kube, "node-a", "zone-a")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", "10.1.0.1")
    args = ("--namespace", ns, "--lease-namespace", ns)
    async with running(kube.kubeconfig, log_dir / "a.log", *args, leader_election=True) as a:
        async with running(kube.kubeconfig, log_dir / "b.log", *args, leader_election=True) as b:

            async def one_leader() -> OperatorProcess:
                found = await leaders(a, b)
                assert len(found) == 1, "exactly one leader"
                return found[0]

            leader = await eventually(one_leader, timeout=60)
            await eventually(lambda: published(kube, ns, {"10.1.0.1"}), timeout=60)
            lease = await kube.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/endpointslice-operator"
            )
            holder = lease["spec"]["holderIdentity"]

            await leader.kill()  # no release: the standby waits for the lease to expire
            standby = b if leader is a else a
            await o.pod(kube, ns, "web-1", "10.1.0.2")

            async def took_over() -> bool:
                assert await standby.metric(LEADER) == 1
                return True

            await eventually(took_over, timeout=60)
            await eventually(lambda: published(kube, ns, {"10.1.0.1", "10.1.0.2"}), timeout=60)
            lease = await kube.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/endpointslice-operator"
            )
            assert lease["spec"]["holderIdentity"] != holder
            assert int(lease["spec"].get("leaseTransitions") or 0) >= 1


async def test_two_operators_of_one_managed_by_with_leases_in_two_namespaces_one_writes(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    """The chart's pod (Lease in its namespace) and `make run` on a workstation (Lease in
    `default`): one leads the cluster, the other says why and what to change, and takes over
    within a lease period when the leader dies."""
    other = f"{ns[:50]}-ws"
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    )
    try:
        await o.node(kube, "node-a", "zone-a")
        await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
        await o.pod(kube, ns, "web-0", "10.1.0.1")
        first = ("--namespace", ns, "--lease-namespace", ns)
        second = ("--namespace", ns, "--lease-namespace", other)
        async with running(kube.kubeconfig, log_dir / "a.log", *first, leader_election=True) as a:
            await eventually(lambda: published(kube, ns, {"10.1.0.1"}), timeout=60)
            async with running(
                kube.kubeconfig, log_dir / "b.log", *second, leader_election=True
            ) as b:

                async def b_stands_by() -> bool:
                    assert "Not leading" in b.log(), b.log()[-2000:]
                    assert await b.metric("endpointslice_operator_leader_deferred") == 1
                    return True

                await eventually(b_stands_by, timeout=60)
                await o.pod(kube, ns, "web-1", "10.1.0.2")
                await eventually(lambda: published(kube, ns, {"10.1.0.1", "10.1.0.2"}), timeout=60)
                assert await leaders(a, b) == [a]
                assert await b.metric(r"endpoint_slice_controller_changes\{.*\}") == 0
                said = [line for line in b.log().splitlines() if "Not leading" in line]
                assert len(said) == 1, said
                assert f"Lease {ns}/endpointslice-operator" in said[0]
                assert "--managed-by" in said[0] and f"--lease-namespace {ns}" in said[0]
                lease = await kube.get(
                    f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/endpointslice-operator"
                )
                assert lease["metadata"]["labels"] == {
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io"
                }

                await a.kill()  # no release: the other waits for the Lease to expire
                killed = time.monotonic()
                await o.pod(kube, ns, "web-2", "10.1.0.3")

                async def took_over() -> bool:
                    assert await b.metric(LEADER) == 1
                    return True

                await eventually(took_over, timeout=60)
                # The lease duration (15 s) from the last change the standby saw (up to one of
                # its retries, 4.4 s, after the last renewal), its next retry (4.4 s), its own
                # Lease taken and checked and the first scrape (slack that grows with the load).
                took = time.monotonic() - killed
                print(f"takeover after kill -9 of the other namespace's leader: {took:.1f} s")
                assert took <= 15 + 2 * 2 * 2.2 + 5 * slowdown(), took
                assert await b.metric("endpointslice_operator_leader_deferred") == 0
                await eventually(
                    lambda: published(kube, ns, {"10.1.0.1", "10.1.0.2", "10.1.0.3"}),
                    timeout=60,
                )
    finally:
        await kube.delete(f"/api/v1/namespaces/{other}")


def _named(suffix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda item: bool(item["metadata"]["name"].endswith(suffix))


def _not_named(suffix: str) -> Callable[[dict[str, Any]], bool]:
    return lambda item: not item["metadata"]["name"].endswith(suffix)


async def test_the_operator_runs_under_the_charts_rbac_and_nothing_more(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    async with chart_account(cluster, kube, ns) as kubeconfig:
        await o.node(kube, "node-a", "zone-a")
        await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
        await o.pod(kube, ns, "web-0", "10.1.0.1")
        # Leader election on, as the chart runs it, with the Lease in the release namespace.
        async with running(
            kubeconfig, log_dir / "operator.log", "--lease-namespace", ns, leader_election=True
        ) as operator:
            await eventually(lambda: published(kube, ns, {"10.1.0.1"}), timeout=60)
            assert await operator.metric(LEADER) == 1
            # A refused request, not the digits 403 inside the random leader identity.
            assert not re.search(r"\b403\b|Forbidden", operator.log()), operator.log()[-3000:]

        async with await Kube.load(kubeconfig) as restricted:
            beyond: list[tuple[str, str, dict[str, Any] | None]] = [
                ("GET", f"/api/v1/namespaces/{ns}/secrets", None),
                ("GET", f"/api/v1/namespaces/{ns}/configmaps", None),
                ("PATCH", f"/api/v1/namespaces/{ns}/pods/web-0", {"metadata": {"labels": {}}}),
                ("PATCH", f"/api/v1/namespaces/{ns}/services/web", {"metadata": {"labels": {}}}),
                ("DELETE", f"/api/v1/namespaces/{ns}/services/web", None),
                ("PATCH", f"/api/v1/namespaces/{ns}/pods/web-0/status", {"status": {}}),
                ("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/someone-else", None),
                ("GET", "/apis/apps/v1/deployments", None),
            ]
            answers = []
            for method, path, body in beyond:
                if method == "PATCH":
                    try:
                        await restricted.patch(path, body or {})
                        status = 200
                    except AssertionError as failure:
                        status = getattr(failure, "status", 0)
                else:
                    status, _ = await restricted.status_of(method, path, body)
                answers.append((method, path, status))
            assert [a for a in answers if a[2] != 403] == []
            # And what it needs, it has.
            status, _ = await restricted.status_of("GET", "/api/v1/pods?limit=1")
            assert status == 200


async def test_without_the_right_to_list_leases_it_says_so_once_and_elects_on_its_own_lease(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    """The chart's RBAC but its read-only `<fullname>-leases` ClusterRole (an older chart, or
    RBAC made by hand): one warning names the missing rule, and the operator still leads."""
    async with chart_account(cluster, kube, ns, keep=_not_named("-leases")) as kubeconfig:
        await o.node(kube, "node-a", "zone-a")
        await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
        await o.pod(kube, ns, "web-0", "10.1.0.1")
        async with running(
            kubeconfig, log_dir / "operator.log", "--lease-namespace", ns, leader_election=True
        ) as operator:
            await eventually(lambda: published(kube, ns, {"10.1.0.1"}), timeout=60)
            assert await operator.metric(LEADER) == 1
            await asyncio.sleep(10)  # a few renewals, each listing again
            said = [line for line in operator.log().splitlines() if "Cannot list Leases" in line]
            assert len(said) == 1, said
            assert " WARNING " in said[0] and "(403" in said[0]
            assert "Grant list on coordination.k8s.io leases cluster-wide" in said[0]


def _slice(ns: str, name: str, managed_by: str) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": managed_by,
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.9.9.9"]}],
    }


async def test_the_cleanup_hook_deletes_our_slices_under_its_own_rbac(
    cluster: Cluster, kube: Kube, ns: str
) -> None:
    """The chart's cleanupOnUninstall Job, as its pod would run it: its args, its account."""
    release = f"eso-{secrets.token_hex(3)}"
    managed_by = f"{release}.example.com"  # unique: the shared operator's slices stay out of it
    values = {"cleanupOnUninstall": {"enabled": True}, "managedBy": managed_by}
    (job,) = [
        item for item in render_objects(values, name=release, namespace=ns) if item["kind"] == "Job"
    ]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    hook_only = _named("-cleanup")
    async with chart_account(cluster, kube, ns, values, hook_only, release) as kubeconfig:
        slices = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
        for name, owner in (("ours-1", managed_by), ("ours-2", managed_by), ("kcm", "x.k8s.io")):
            await kube.create(slices, _slice(ns, name, owner))
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "endpointslice_operator", *container["command"][1:],
            *container["args"], "--kubeconfig", str(kubeconfig),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        assert (
            out.decode().splitlines()[-1] == f"deleted 2 EndpointSlice(s) managed by {managed_by}"
        )
        left = await kube.get(slices)
        assert [item["metadata"]["name"] for item in left["items"]
                if item["metadata"]["name"] in {"ours-1", "ours-2", "kcm"}] == ["kcm"]  # fmt: skip


async def test_a_lease_refused_by_rbac_is_named_once_with_what_to_set(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    """Issue 28, item 8: the chart's RBAC grants Leases in the release namespace only; with the
    Lease put elsewhere every attempt is refused (403). The log names the Lease and its
    namespace and says what to set, once (then a count a minute), not once per retry."""
    elsewhere = f"{ns}-elsewhere"
    try:
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": elsewhere}},
        )
        async with (
            chart_account(cluster, kube, ns) as kubeconfig,
            running(
                kubeconfig,
                log_dir / "operator.log",
                "--lease-namespace",
                elsewhere,
                leader_election=True,
            ) as operator,
        ):

            async def refused() -> list[str]:
                lines = [line for line in operator.log().splitlines() if "(403)" in line]
                assert lines, operator.log()[-3000:]
                return lines

            (line,) = await eventually(refused, timeout=60)
            assert f"Lease 'endpointslice-operator' in namespace '{elsewhere}'" in line
            assert "--lease-namespace" in line and "POD_NAMESPACE" in line
            assert " WARNING " in line

            # A minute of retries (every 2 s, jittered) later: one line with the count.
            async def counted() -> list[str]:
                lines = await refused()
                assert len(lines) >= 2, lines
                return lines

            first, later, *more = await eventually(counted, timeout=150)
            assert first == line and more == [], more
            attempts = re.search(r"still failing after (\d+) attempts", later)
            assert attempts is not None and int(attempts.group(1)) >= 10, later
            assert await operator.metric(LEADER) == 0
    finally:
        await kube.delete(f"/api/v1/namespaces/{elsewhere}")


async def test_endpoints_refused_by_the_default_rbac_name_the_chart_value(
    cluster: Cluster, kube: Kube, ns: str, log_dir: Path
) -> None:
    """Issue 33: a Service asking for an Endpoints object (``<prefix>/endpoints: "true"``)
    under the chart's default RBAC (get/list/watch on Endpoints only): the API server refuses
    the create, and the Warning Event and the log say what to set (``endpoints.write``),
    beside the server's own words. The slices are published all the same."""
    async with chart_account(cluster, kube, ns) as kubeconfig:
        await o.node(kube, "node-a", "zone-a")
        annotations = {o.SELECTOR: "app=web", "endpointslice-operator.io/endpoints": "true"}
        await o.service(kube, ns, "web", annotations=annotations)
        await o.pod(kube, ns, "web-0", "10.1.0.1")
        async with running(
            kubeconfig, log_dir / "operator.log", "--lease-namespace", ns, leader_election=True
        ) as operator:

            async def warned() -> dict[str, Any]:
                events = await kube.events(ns, "FailedToCreateEndpoint")
                assert events, operator.log()[-3000:]
                return events[-1]

            event = await eventually(warned, timeout=60)
            assert event["type"] == "Warning"
            assert 'cannot create resource "endpoints"' in event["message"], event["message"]
            assert "set the chart value endpoints.write=true" in event["message"]
            assert "set the chart value endpoints.write=true" in operator.log()
            await eventually(lambda: published(kube, ns, {"10.1.0.1"}), timeout=60)
