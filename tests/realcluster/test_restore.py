"""A kube-apiserver killed mid-watch, and an etcd copy restored under load (issue 28, items 6
and 2): a watch resumes from the last version it delivered, and no write and no Event from the
old state reaches the restored cluster.

The operator syncs a Service whose pods keep changing (readiness flips from the test, pods
added and deleted) when a copy of etcd is taken (a clean stop of the control plane, the data
folder copied, started again: an outage that is *not* a reset), then more changes, then
kube-apiserver is killed (SIGKILL, by PID) and etcd's data replaced by the copy. The restored
cluster lacks every pod and slice made after the copy, and its resourceVersions are below
what the operator saw.

What reaches the restored cluster is read from kube-apiserver's own audit log (every write to
EndpointSlices, Endpoints and Events, with the request and response bodies). A write from the
old caches shows as one of: an address of a pod that exists only after the copy, a write
refused as 404/409 (a slice or version the restored state never had), or a Warning Event.
The test prints the time from the restored server being up to the operator's ``/readyz``
turning false (the reset detected), and the number of stale writes.

Each test here starts a control plane of its own (the shared one must not be restored).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.controller.api.client import OperatorApiClient
from endpointslice_operator.controller.watch.list_watch import ListWatcher
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.conftest import assets_dir
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.test_write_path import load as load_configuration

pytestmark = pytest.mark.realcluster

NS = "restore"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "RequestResponse",
            "verbs": ["create", "update", "patch", "delete"],
            "resources": [
                {"group": "discovery.k8s.io", "resources": ["endpointslices"]},
                {"group": "", "resources": ["endpoints", "events"]},
            ],
        },
        {
            "level": "Metadata",
            "verbs": ["watch"],
            "resources": [{"group": "", "resources": ["pods"]}],
        },
        {"level": "None"},
    ],
}
OPERATOR_AGENT = "OpenAPI-Generator"
"""The operator's requests carry kubernetes-asyncio's User-Agent; the test's carry aiohttp's."""


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test restores a control plane of its own")
    workdir = Path(tempfile.mkdtemp(prefix="eso-restore-"))
    policy = workdir / "audit-policy.json"
    policy.write_text(json.dumps(AUDIT_POLICY))
    control_plane = ControlPlane(
        assets=assets,
        workdir=workdir,
        with_kcm=False,  # nothing here needs it, and it would write into the restored state
        apiserver_args=(
            f"--audit-policy-file={policy}",
            f"--audit-log-path={workdir / 'audit.log'}",
            "--audit-log-format=json",
        ),
    )
    with control_plane:
        yield control_plane
    shutil.rmtree(workdir, ignore_errors=True)


def audit_size(plane: ControlPlane) -> int:
    path = plane.workdir / "audit.log"
    return path.stat().st_size if path.exists() else 0


def audit_entries(plane: ControlPlane, since: int) -> list[dict[str, Any]]:
    with (plane.workdir / "audit.log").open("rb") as log:
        log.seek(since)
        return [json.loads(line) for line in log if line.strip()]


def kill_apiserver(plane: ControlPlane) -> None:
    """SIGKILL by the PID the control plane started it with: connections break mid-stream."""
    os.kill(plane.pids["kube-apiserver"], signal.SIGKILL)
    time.sleep(0.5)  # ControlPlane.stop() reaps it


def copy_etcd(plane: ControlPlane, copy: Path) -> None:
    """A consistent copy of etcd's data: stopped cleanly, copied, started again."""
    plane.stop()
    shutil.copytree(plane.workdir / "etcd-data", copy)
    plane.start()


def restore_etcd(plane: ControlPlane, copy: Path) -> None:
    plane.stop()  # the killed kube-apiserver is gone already; etcd stops cleanly
    shutil.rmtree(plane.workdir / "etcd-data")
    shutil.copytree(copy, plane.workdir / "etcd-data")
    plane.start()


class Load:
    """Flips the readiness of pods while it runs, through outages (errors retried)."""

    def __init__(self, plane: ControlPlane, pods: list[str]) -> None:
        self.plane = plane
        self.pods = pods
        self.flips = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        ready = True
        while True:
            try:
                async with await Kube.load(self.plane.kubeconfig) as kube:
                    while True:
                        ready = not ready
                        for name in self.pods:
                            await o.set_ready(kube, NS, name, ready)
                            self.flips += 1
                        await asyncio.sleep(0.05)
            except Exception:  # the server is away: come back with a fresh connection
                await asyncio.sleep(0.2)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Load]:
        self._task = asyncio.create_task(self._run())
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def stale_writes(entries: list[dict[str, Any]], gone_ips: set[str]) -> list[str]:
    """The operator's writes in ``entries`` that only the old state could explain."""
    stale: list[str] = []
    for entry in entries:
        if entry.get("stage") != "ResponseComplete":
            continue
        if not str(entry.get("userAgent", "")).startswith(OPERATOR_AGENT):
            continue
        ref = entry.get("objectRef") or {}
        code = int((entry.get("responseStatus") or {}).get("code") or 0)
        what = f"{entry['verb']} {ref.get('resource')} {ref.get('name') or ''} -> {code}"
        body = entry.get("requestObject") or {}
        if ref.get("resource") == "events":
            if body.get("type") == "Warning" or entry["verb"] == "patch":
                stale.append(f"{what}: {body.get('reason')} {body.get('message', '')[:200]}")
            continue
        if code in (404, 409):
            stale.append(what)
            continue
        addresses = {
            address
            for endpoint in body.get("endpoints") or ()
            for address in endpoint.get("addresses") or ()
        }
        if addresses & gone_ips:
            stale.append(f"{what}: publishes {sorted(addresses & gone_ips)}")
    return stale


async def ready_addresses(kube: Kube) -> set[str]:
    body = await kube.get(f"/api/v1/namespaces/{NS}/pods", labelSelector="app=web")
    return {
        pod["status"]["podIP"]
        for pod in body["items"]
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in pod["status"].get("conditions") or ()
        )
    }


RESET_LINE = "The API server's state was reset"


def detected_at(operator: OperatorProcess) -> datetime | None:
    """When the operator logged that it detected the reset (its log's UTC timestamps)."""
    for line in operator.log().splitlines():
        if RESET_LINE in line:
            return datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    return None


async def test_no_write_or_event_from_the_old_state_reaches_a_restored_cluster(
    plane: ControlPlane, log_dir: Path
) -> None:
    before = {f"web-{i}": f"10.1.0.{i + 1}" for i in range(4)}
    after = {f"web-{i}": f"10.9.0.{i + 1}" for i in range(4, 8)}
    async with await Kube.load(plane.kubeconfig) as kube:
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
        await o.node(kube, "node-a", "zone-a")
        await o.service(kube, NS, "web", annotations={o.SELECTOR: "app=web"})
        for name, ip in before.items():
            await o.pod(kube, NS, name, ip, labels={"app": "web"})
    copy = plane.workdir / "etcd-copy"
    load = Load(plane, ["web-0", "web-1"])
    async with running(
        plane.kubeconfig, log_dir / "operator.log", "--max-endpoints-per-slice", "2"
    ) as operator:

        async def converged() -> bool:
            async with await Kube.load(plane.kubeconfig) as kube:
                want = await ready_addresses(kube)
                assert o.ready_addresses(await kube.slices(NS, "web")) == want
            return True

        await eventually(converged, timeout=60)
        async with load.running():
            await asyncio.to_thread(copy_etcd, plane, copy)  # an outage, not a reset
            async with await Kube.load(plane.kubeconfig) as kube:
                for name, ip in after.items():  # only after the copy: more slices
                    await o.pod(kube, NS, name, ip, labels={"app": "web"})
                await kube.delete(
                    f"/api/v1/namespaces/{NS}/pods/web-3",
                    {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
                )

                async def published_after() -> bool:
                    slices = await kube.slices(NS, "web")
                    assert set(after.values()) <= o.addresses(slices)
                    assert before["web-3"] not in o.addresses(slices)
                    return True

                await eventually(published_after, timeout=60)
            await asyncio.sleep(3)  # the load goes on: the operator writes the flips
            assert await operator.metric("endpointslice_operator_state_resets_total") == 0
            assert (await operator.get("/readyz"))[0] == 200

            await asyncio.to_thread(kill_apiserver, plane)
            mark = audit_size(plane)
            await asyncio.to_thread(restore_etcd, plane, copy)
            up = datetime.now(UTC)  # the restored kube-apiserver answers /readyz

            async def noticed() -> datetime:
                moment = detected_at(operator)
                assert moment is not None, "no reset detected yet"
                return moment

            detected = (await eventually(noticed, timeout=60) - up).total_seconds()
            await asyncio.sleep(5)  # the load goes on against the restored state
        await eventually(converged, timeout=90)
        assert await operator.metric("endpointslice_operator_state_resets_total") == 1
        async with await Kube.load(plane.kubeconfig) as kube:
            assert o.addresses(await kube.slices(NS, "web")).isdisjoint(after.values())
        stale = stale_writes(audit_entries(plane, mark), set(after.values()))
        writes = [
            e
            for e in audit_entries(plane, mark)
            if e.get("stage") == "ResponseComplete"
            and str(e.get("userAgent", "")).startswith(OPERATOR_AGENT)
        ]
        print(
            f"\nrestore: reset detected {detected:+.2f} s from the restored kube-apiserver's "
            "/readyz answering 200; "
            f"{len(stale)} stale write(s) of {len(writes)} operator write(s) after the restore; "
            f"{load.flips} flips"
        )
        assert stale == [], "\n".join(stale)
        assert writes, "the operator wrote nothing to the restored cluster: the test saw nothing"


async def test_a_watch_cut_by_a_killed_kube_apiserver_resumes_from_the_last_version(
    plane: ControlPlane,
) -> None:
    """client-go's reflector semantics on a real server: the watch that a SIGKILLed
    kube-apiserver cut mid-stream asks the restarted one for the last version it delivered
    (read from the server's audit log), never for the one it started at; no event twice."""
    async with await Kube.load(plane.kubeconfig) as kube:
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
        await o.node(kube, "node-a", "zone-a")
        await o.pod(kube, NS, "p-0", "10.1.0.1", labels={"app": "p"})
    delivered: list[tuple[str | None, str, str]] = []

    def handler(event_type: str | None, obj: Any) -> None:
        metadata = obj["metadata"]
        delivered.append((event_type, metadata["name"], metadata["resourceVersion"]))

    configuration = await load_configuration(plane.kubeconfig)
    async with OperatorApiClient(configuration) as api:
        watcher = ListWatcher(api, "pods", handler, namespaces=[NS], backoff=0.5)
        task = asyncio.create_task(watcher.run())
        try:

            async def listed() -> bool:
                assert watcher.listings == 1
                return True

            await eventually(listed, timeout=30)
            async with await Kube.load(plane.kubeconfig) as kube:
                for flip in range(6):  # events in the stream after the version it started at
                    await o.set_ready(kube, NS, "p-0", flip % 2 == 1)

            async def streamed() -> bool:
                assert len([e for e in delivered if e[0] == "MODIFIED"]) == 6, delivered
                return True

            await eventually(streamed, timeout=30)
            last = delivered[-1][2]
            started_at = delivered[0][2]
            assert int(last) > int(started_at)
            mark = audit_size(plane)
            await asyncio.to_thread(kill_apiserver, plane)
            await asyncio.to_thread(plane.restart)

            def resumed_at() -> list[str]:
                versions = []
                for entry in audit_entries(plane, mark):
                    uri = str(entry.get("requestURI", ""))
                    if entry.get("verb") == "watch" and f"/namespaces/{NS}/pods" in uri:
                        query = dict(
                            part.split("=", 1) for part in uri.partition("?")[2].split("&")
                        )
                        versions.append(query.get("resourceVersion", ""))
                return versions

            async def resumed() -> list[str]:
                versions = resumed_at()
                assert versions, "no watch of pods reached the restarted kube-apiserver yet"
                return versions

            versions = await eventually(resumed, timeout=60)
            # The first watch after the kill asks for the last version delivered.
            assert versions[0] == last, (versions, last, started_at)
            async with await Kube.load(plane.kubeconfig) as kube:
                await o.pod(kube, NS, "p-1", "10.1.0.2", labels={"app": "p"})

            async def followed() -> bool:
                assert any(e[1] == "p-1" and e[0] in ("ADDED", None) for e in delivered)
                return True

            await eventually(followed, timeout=60)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    typed = [e for e in delivered if e[0] is not None]
    assert len(typed) == len(set(typed)), f"an event was delivered twice: {typed}"
