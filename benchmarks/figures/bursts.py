"""Bursts on the emulator: the operator beside a KCM-like baseline, on the same pods.

The scenario of ``--real``'s bursts (:mod:`benchmarks.lib.bursts`), for quick runs without a
real control plane: Service pairs, one Service of each pair written by the operator, the other
by the same operator code with kube-controller-manager's write policy
(:mod:`benchmarks.lib.kcm_like`); both with kube-controller-manager's defaults (client-side
budget 20/s, burst 30; batch period 0 for the baseline as upstream, the operator's default for
the operator). Figures per phase: ``writes_burst_<phase>`` (ours, baseline: KCM-like) and
``converge_burst_<phase>_s``; and over all phases ``writes_burst_ratio_vs_kcm_policy`` and
``converge_burst_ratio_vs_kcm_policy`` (the worst phase's ratio). The baseline is the operator's
own code under kube-controller-manager's write policy, not kube-controller-manager: figures
named ``..._vs_kcm`` come only from ``--real``, beside the real one.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from endpointslice_operator.settings import Settings
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube

from ..figure import Figure
from ..lib.bursts import Pairs, PhaseResult, Sizes, recording
from ..lib.cluster import Scenario
from ..lib.processes import emulator_process, operator_process

NS = "bursts"
OURS = "endpointslice-operator.io"
BASELINE = "kcm-like.example.com"
CONTROLLER_LABEL = "service.kubernetes.io/endpoint-controller-name"
DEFAULT_BATCH_PERIOD: float = Settings.model_fields["batch_period"].default
"""The operator's default (the benchmark helper passes a batch period explicitly)."""
SIZES = {
    "tiny": Sizes(pairs=4, pods_per_pair=5, flips=20, deletions=6),
    "quick": Sizes(pairs=40, pods_per_pair=10, flips=600, deletions=100),
    "full": Sizes(pairs=200, pods_per_pair=10, flips=3000, deletions=500),
}


def figures(results: dict[str, PhaseResult], ours: str, baseline: str, versus: str) -> list[Figure]:
    """The per-phase and overall figures of a bursts run (emulator or real); the overall ones
    are named ``..._ratio_vs_<versus>``: ``kcm`` beside the real kube-controller-manager only,
    ``kcm_policy`` beside its write policy in the operator's code."""
    out: list[Figure] = []
    write_ratios, converge_ratios = [], []
    for phase, result in results.items():
        w_ours, w_base = result.writes[ours], result.writes[baseline]
        c_ours, c_base = result.converge_s[ours], result.converge_s[baseline]
        out.append(Figure(f"writes_burst_{phase}", float(w_ours), "writes", float(w_base)))
        out.append(Figure(f"converge_burst_{phase}_s", c_ours, "s", c_base))
        write_ratios.append(w_ours / max(w_base, 1))
        converge_ratios.append(c_ours / max(c_base, 0.001))
    worst = "ratio (worst phase)"
    out.append(Figure(f"writes_burst_ratio_vs_{versus}", max(write_ratios), worst))
    out.append(Figure(f"converge_burst_ratio_vs_{versus}", max(converge_ratios), worst))
    return out


async def _run(mode: str, workdir: Path) -> list[Figure]:
    sizes = SIZES.get(mode, SIZES["quick"])
    empty = Scenario(services=0, pods_per_service=0, nodes=0)
    async with (
        emulator_process(empty, workdir) as emu,
        await Kube.load(emu.kubeconfig) as kube,
    ):
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        )
        await o.node(kube, "node-a", "zone-a")
        await o.node(kube, "node-b", "zone-b")
        services = []
        for pair in range(sizes.pairs):
            names = (f"p{pair:04d}-eso", f"p{pair:04d}-kcm")
            for name, manager in zip(names, (OURS, BASELINE), strict=True):
                await o.service(kube, NS, name, selector={"pair": f"p{pair:04d}"},
                                opt_in=False, labels={CONTROLLER_LABEL: manager})  # fmt: skip
            services.append(names)
        common = ["--namespace", NS]
        async with (
            operator_process(emu.kubeconfig, batch_period=DEFAULT_BATCH_PERIOD, extra=common),
            operator_process(emu.kubeconfig, extra=[*common, f"--managed-by={BASELINE}"],
                             module="benchmarks.lib.kcm_like"),
        ):  # fmt: skip
            path = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
            async with recording(kube, path) as recorder:
                pairs = Pairs(kube, NS, (OURS, BASELINE), services, sizes)
                results = await pairs.run(recorder)
    return figures(results, OURS, BASELINE, "kcm_policy")


def collect(mode: str) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="eso-bench-bursts-") as workdir:
        return asyncio.run(_run(mode, Path(workdir)))
