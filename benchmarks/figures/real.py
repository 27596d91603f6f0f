"""``--real``: the operator beside kube-controller-manager on a real control plane.

Needs ``KUBEBUILDER_ASSETS`` with etcd, kube-apiserver and kube-controller-manager (without
them the area says why on stderr and reports nothing). It starts its own control plane and the
operator as a process (``endpointslice-operator run``), creates twin Services on the same pods
(``tests/realcluster/parity.py``: one with ``spec.selector``, written by kube-controller-
manager, one selectorless with the selector annotation, written by the operator) and drives
phases of pod changes, one change at a time, waiting after each until both publish the same.

* writes: EndpointSlice ADDED / MODIFIED / DELETED events of each manager on one watch of the
  namespace, per phase; the figure is ours with kube-controller-manager's as the baseline;
* flip latency: from the response to a pod's status PATCH to the watch event of the slice that
  shows the new readiness, for each controller;
* bursts (:mod:`benchmarks.lib.bursts`): Service pairs in a namespace of their own, pods
  created, flipped and deleted as fast as 16 parallel API calls go; writes and convergence of
  each controller per phase (``writes_burst_<phase>``, ``converge_burst_<phase>_s``, and the
  worst phase's ratios ``writes_burst_ratio_vs_kcm`` and ``converge_burst_ratio_vs_kcm``).
  Both run with their defaults: kube-controller-manager's client budget (``--kube-api-qps`` 20,
  ``--kube-api-burst`` 30) and batch period 0, the operator's same budget and its 1 s bound.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

from endpointslice_operator.testing.controlplane import ControlPlane, missing_assets
from tests.realcluster import objects as o
from tests.realcluster.kube import KCM, OURS, Kube
from tests.realcluster.operator_process import running
from tests.realcluster.parity import Twins

from ..figure import Figure
from ..lib.bursts import Pairs, Recorder, Sizes, recording
from .bursts import figures as burst_figures

NS = "bench"
BURST_NS = "bursts"
SIZES = {"tiny": (3, 4, 2), "quick": (20, 40, 10), "full": (100, 300, 50)}
"""Pods arriving, readiness flips, deletions: per mode."""
BURST_SIZES = {
    "tiny": Sizes(pairs=3, pods_per_pair=4, flips=12, deletions=4),
    "quick": Sizes(pairs=40, pods_per_pair=10, flips=600, deletions=100),
    "full": Sizes(pairs=200, pods_per_pair=10, flips=3000, deletions=500),
}
"""Service pairs, pods per pair, flips, deletions of the burst phases (the issue's: full)."""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _run(mode: str, workdir: Path) -> list[Figure]:
    arrivals, flips, deletions = SIZES.get(mode, SIZES["quick"])
    assets = Path(os.environ["KUBEBUILDER_ASSETS"])
    with ControlPlane(assets=assets, workdir=workdir / "plane") as plane:
        async with await Kube.load(plane.kubeconfig) as kube:
            await kube.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            )
            await o.node(kube, "node-a", "zone-a")
            await o.node(kube, "node-b", "zone-b")
            await kube.create(
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": BURST_NS}},
            )
            sizes = BURST_SIZES.get(mode, BURST_SIZES["quick"])
            services = []
            for pair in range(sizes.pairs):
                twins = Twins(kube, BURST_NS, f"p{pair:04d}", {"pair": f"p{pair:04d}"})
                await twins.create()
                services.append((twins.ours, twins.kcm))
            namespaces = ("--namespace", NS, "--namespace", BURST_NS)
            async with running(plane.kubeconfig, workdir / "operator.log", *namespaces):
                path = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
                async with recording(kube, path) as recorder:
                    figures = await _phases(kube, recorder, arrivals, flips, deletions)
                path = f"/apis/discovery.k8s.io/v1/namespaces/{BURST_NS}/endpointslices"
                async with recording(kube, path) as burst_recorder:
                    pairs = Pairs(kube, BURST_NS, (OURS, KCM), services, sizes)
                    results = await pairs.run(burst_recorder)
                return figures + burst_figures(results, OURS, KCM, "kcm")
    raise AssertionError("unreachable")  # pragma: no cover


async def _phases(
    kube: Kube, recorder: Recorder, arrivals: int, flips: int, deletions: int
) -> list[Figure]:
    path = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
    loop = asyncio.get_running_loop()
    twins = Twins(kube, NS, "web", {"app": "web"})
    await twins.create()
    names: set[str] = set()
    writes: dict[str, tuple[int, int]] = {}

    mark = len(recorder.events)
    for i in range(arrivals):
        await o.pod(kube, NS, f"web-{i}", f"10.1.{i // 200}.{i % 200 + 1}", node_name="node-a")
        names.add(f"web-{i}")
        await twins.agree(names)
    await recorder.caught_up(kube, path)
    writes["arrivals"] = (recorder.writes(OURS, mark), recorder.writes(KCM, mark))

    mark = len(recorder.events)
    latency: dict[str, list[float]] = {OURS: [], KCM: []}
    for flip in range(flips):
        pod, ready = f"web-{flip % arrivals}", flip % (2 * arrivals) >= arrivals
        await o.set_ready(
            kube, NS, pod, ready, at=f"2026-01-01T01:{flip // 60:02d}:{flip % 60:02d}Z"
        )
        sent = loop.time()
        await twins.agree(names, ready=(pod, ready))
        await recorder.caught_up(kube, path)
        for manager, values in latency.items():
            shown = recorder.shown(manager, pod, ready, sent)
            if shown is not None:
                values.append((shown - sent) * 1000)
    writes["flips"] = (recorder.writes(OURS, mark), recorder.writes(KCM, mark))

    mark = len(recorder.events)
    for i in range(deletions):
        await kube.delete(
            f"/api/v1/namespaces/{NS}/pods/web-{i}",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
        )
        names.discard(f"web-{i}")
        await twins.agree(names)
    await recorder.caught_up(kube, path)
    writes["deletions"] = (recorder.writes(OURS, mark), recorder.writes(KCM, mark))

    figures = [
        Figure(f"real_writes_{phase}", float(ours), "writes", float(kcm))
        for phase, (ours, kcm) in writes.items()
    ]
    total_ours = sum(w[0] for w in writes.values())
    total_kcm = sum(w[1] for w in writes.values())
    figures.append(
        Figure("real_writes_ratio_vs_kcm", float(total_ours), "writes", float(total_kcm))
    )
    if latency[OURS] and latency[KCM]:
        for name, q in (("p50", 0.5), ("p99", 0.99)):
            figures.append(
                Figure(
                    f"real_flip_{name}_ms",
                    _percentile(latency[OURS], q),
                    "ms",
                    _percentile(latency[KCM], q),
                )
            )
        figures.append(
            Figure("real_flip_mean_ms", statistics.fmean(latency[OURS]), "ms",
                   statistics.fmean(latency[KCM]))
        )  # fmt: skip
    return figures


def collect(mode: str) -> list[Figure]:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    reason = missing_assets(Path(assets) if assets else None)
    if reason is None and assets and not (Path(assets) / "kube-controller-manager").is_file():
        reason = "kube-controller-manager not found in KUBEBUILDER_ASSETS"
    if reason is not None:
        print(f"real: skipped ({reason})", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory(prefix="eso-bench-real-") as workdir:
        return asyncio.run(_run(mode, Path(workdir)))
