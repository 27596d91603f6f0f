"""``--real``: Multi-Cluster Services on two real control planes ("east", "west").

Needs ``KUBEBUILDER_ASSETS`` (etcd, kube-apiserver; without them the area says why on stderr
and reports nothing). Two control planes, the CRDs of ``deploy/crds/``, a cluster id each, and
one operator per cluster (``--multicluster``, the other as its peer).

* ``mcs_propagation_p50_ms`` / ``_p99_ms``: a pod's readiness flipped in east, from the
  response to its status PATCH to the watch event of west's imported slice showing it; the
  baseline is the same flip reaching east's own slice (written by the same operator's slice
  controller), measured on the same flips. The flips start once both operators went through
  their imports and their write budgets refilled, one every ``FLIP_PACE`` seconds (within the
  default budget: a figure of propagation, not of the budget).
* ``mcs_restart_resync_s``: N exported Services imported in west; west's operator restarted
  with nothing changed: seconds from the process start until its import queue has gone
  through every key and is idle; the baseline is the same process's readiness (its own
  listings in). ``mcs_restart_writes``: the writes that restart cost (goal 0); baseline: the
  writes of the first, cold import of the same Services.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from endpointslice_operator.settings import Settings
from endpointslice_operator.testing.controlplane import ControlPlane, missing_assets
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_crds import install_crds
from tests.realcluster.operator_process import OperatorProcess, running

from ..figure import Figure
from ..lib.bursts import recording

NS = "mcs-bench"
SIZES = {"tiny": (4, 5), "quick": (20, 100), "full": (100, 1000)}
"""Readiness flips, exported Services: per mode."""
BUDGET = (
    Settings.model_fields["kube_api_burst"].default / Settings.model_fields["kube_api_qps"].default
)
"""Seconds the default write budget takes to refill from empty (burst / qps)."""
FLIP_PACE = 0.2
"""Seconds between two flips: a flip costs east two writes (its slice, its own import's), so
10 writes/s, inside the default budget of 20/s. Flipping back to back would measure the budget
(and its coalescing holds), not how far a change travels."""
MCS = "/apis/multicluster.x-k8s.io/v1beta1"
SOURCE = "multicluster.kubernetes.io/source-cluster"
WRITES = r"endpointslice_operator_mcs_writes_total\{.*\}"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _shows(event: Any, imported: bool, ip: str, ready: bool) -> bool:
    obj = event.get("object") or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if (SOURCE in labels) != imported:
        return False
    return any(
        ip in e.get("addresses", []) and (e.get("conditions") or {}).get("ready") is ready
        for e in obj.get("endpoints") or []
    )


def _first(events: list[tuple[float, Any]], after: float, **match: Any) -> float | None:
    for at, event in events:
        if at >= after and _shows(event, **match):
            return at
    return None


async def _cluster(kube: Kube, cluster: str) -> None:
    await install_crds(kube)
    await kube.status_of(
        "POST",
        "/apis/about.k8s.io/v1beta1/clusterproperties",
        {
            "apiVersion": "about.k8s.io/v1beta1",
            "kind": "ClusterProperty",
            "metadata": {"name": "cluster.clusterset.k8s.io"},
            "spec": {"value": cluster},
        },
    )
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    )
    await o.node(kube, "node-a", "zone-a")


async def _export(kube: Kube, name: str) -> None:
    body = {"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceExport"}
    body["metadata"] = {"name": name, "namespace": NS}  # type: ignore[assignment]
    await kube.create(f"{MCS}/namespaces/{NS}/serviceexports", body)


async def _settled(op: OperatorProcess, keys: int) -> bool:
    adds = await op.metric(r'workqueue_adds_total\{name="endpoint_slice"\}')
    depth = await op.metric(r'workqueue_depth\{name="endpoint_slice"\}')
    busy = await op.metric(r'workqueue_unfinished_work_seconds\{name="endpoint_slice"\}')
    assert adds >= keys and depth == 0 and busy == 0, (adds, depth, busy)
    return True


async def _run(mode: str, workdir: Path) -> list[Figure]:
    flips, services = SIZES.get(mode, SIZES["quick"])
    assets = Path(os.environ["KUBEBUILDER_ASSETS"])
    east_plane = ControlPlane(assets=assets, workdir=workdir / "east", with_kcm=False)
    west_plane = ControlPlane(assets=assets, workdir=workdir / "west", with_kcm=False)
    with east_plane, west_plane:
        async with (
            await Kube.load(east_plane.kubeconfig) as east,
            await Kube.load(west_plane.kubeconfig) as west,
        ):
            await _cluster(east, "east")
            await _cluster(west, "west")
            sem = asyncio.Semaphore(16)

            async def one(i: int) -> None:
                async with sem:
                    name = f"svc-{i:04d}"
                    await o.service(east, NS, name, annotations={o.SELECTOR: f"app={name}"})
                    ip = f"10.1.{i // 250}.{i % 250 + 1}"
                    await o.pod(east, NS, f"{name}-0", ip, labels={"app": name})
                    await _export(east, name)

            await asyncio.gather(*(one(i) for i in range(services)))
            args = ("--multicluster", "--namespace", NS, "--log-level", "warning")
            east_op = running(
                east_plane.kubeconfig,
                workdir / "east.log",
                *args,
                "--mcs-peer",
                str(west_plane.kubeconfig),
            )
            west_args = (*args, "--mcs-peer", str(east_plane.kubeconfig))
            async with east_op as e:
                async with running(west_plane.kubeconfig, workdir / "west.log", *west_args) as w:
                    await eventually(lambda: _settled(w, services), timeout=600, interval=0.5)

                    async def imported() -> bool:
                        body = await west.get(f"{MCS}/namespaces/{NS}/serviceimports")
                        assert len(body["items"]) == services
                        return True

                    await eventually(imported, timeout=600, interval=0.5)
                    await eventually(lambda: _settled(w, services), timeout=600, interval=0.5)
                    # East imports its own exports too, through the same write budget as its
                    # slices: the flips start once that is done, not behind it.
                    await eventually(lambda: _settled(e, services), timeout=600, interval=0.5)
                    cold_writes = await w.metric(WRITES)
                    # The cold imports spent both operators' write budgets: let them refill, so
                    # the flips measure propagation, not the imports' queue.
                    await asyncio.sleep(2 * BUDGET)
                    latency = await _flips(east, west, flips)
                # Restart west's operator with nothing changed.
                loop = asyncio.get_running_loop()
                started = loop.time()
                restart = OperatorProcess(west_plane.kubeconfig, workdir / "west.log", *west_args)
                await restart.start()
                try:
                    await restart.wait_ready(timeout=600)
                    ready_s = loop.time() - started
                    await eventually(lambda: _settled(restart, services), timeout=600, interval=0.1)
                    resync_s = loop.time() - started
                    restart_writes = await restart.metric(WRITES)
                finally:
                    await restart.stop()
    return [
        Figure(
            "mcs_propagation_p50_ms",
            _percentile(latency["imported"], 0.5),
            "ms",
            _percentile(latency["local"], 0.5),
        ),
        Figure(
            "mcs_propagation_p99_ms",
            _percentile(latency["imported"], 0.99),
            "ms",
            _percentile(latency["local"], 0.99),
        ),
        Figure("mcs_restart_resync_s", resync_s, "s", ready_s),
        Figure("mcs_restart_writes", restart_writes, "writes", cold_writes),
        Figure("mcs_exported_services", float(services), "services"),
    ]


async def _flips(east: Kube, west: Kube, flips: int) -> dict[str, list[float]]:
    """Flip svc-0000-0's readiness ``flips`` times; per flip, the delay to east's own slice
    and to west's imported one."""
    loop = asyncio.get_running_loop()
    path = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
    latency: dict[str, list[float]] = {"local": [], "imported": []}
    async with recording(east, path) as east_events, recording(west, path) as west_events:
        for flip in range(flips):
            ready = flip % 2 == 1
            stamp = f"2026-01-01T02:{flip // 60:02d}:{flip % 60:02d}Z"
            await o.set_ready(east, NS, "svc-0000-0", ready, at=stamp)
            sent = loop.time()

            async def both(sent: float = sent, ready: bool = ready) -> bool:
                local = _first(east_events.events, sent, imported=False, ip="10.1.0.1", ready=ready)
                far = _first(west_events.events, sent, imported=True, ip="10.1.0.1", ready=ready)
                assert local is not None and far is not None
                latency["local"].append((local - sent) * 1000)
                latency["imported"].append((far - sent) * 1000)
                return True

            await eventually(both, timeout=120, interval=0.02)
            await asyncio.sleep(max(0.0, sent + FLIP_PACE - loop.time()))
    return latency


def collect(mode: str) -> list[Figure]:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    reason = missing_assets(Path(assets)) if assets else "KUBEBUILDER_ASSETS is not set"
    if reason:
        print(f"mcs: skipped ({reason})", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="eso-mcs-bench-") as tmp:
        return asyncio.run(_run(mode, Path(tmp)))
