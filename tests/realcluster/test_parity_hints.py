"""Parity of topology hints with kube-controller-manager on the same pods and nodes: the
``spec.trafficDistribution`` values (``PreferClose``; ``PreferSameZone`` and ``PreferSameNode``,
which write ``hints.forNodes`` too) and ``service.kubernetes.io/topology-mode: Auto`` (or the
deprecated ``service.kubernetes.io/topology-aware-hints: Auto``; hints allocated from the zones'
CPU capacity, removed when a node without a zone appears).

Each case first lets both controllers agree with no hints, then changes only the Service, so
that the hints are added to (and later stripped from) slices whose endpoints do not change: the
path that failed on every sync before (``'CachedSlice' object has no attribute 'setdefault'``).
"""

from __future__ import annotations

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess
from tests.realcluster.parity import Twins, diff

pytestmark = pytest.mark.realcluster

TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
DEPRECATED_TOPOLOGY = "service.kubernetes.io/topology-aware-hints"


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


async def _pods_in_two_zones(kube: Kube, ns: str, twins: Twins, count: int = 6) -> set[str]:
    """``count`` ready pods spread over node-a (zone-a) and node-b (zone-b)."""
    await twins.create()
    names = set()
    for i in range(count):
        name = f"web-{i}"
        await o.pod(kube, ns, name, f"10.1.0.{i + 1}", node_name=("node-a", "node-b")[i % 2])
        names.add(name)
    await twins.agree(names)
    return names


@pytest.mark.k8s_min("1.31")
async def test_prefer_close_hints_added_and_removed(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    names = await _pods_in_two_zones(kube, ns, twins)
    await twins.patch_spec({"trafficDistribution": "PreferClose"})
    await _agree_hinted(twins, names, nodes=False)
    await twins.patch_spec({"trafficDistribution": None})
    await _agree_unhinted(twins, names)


@pytest.mark.k8s_min("1.34")
@pytest.mark.parametrize(
    ("distribution", "nodes"), [("PreferSameZone", False), ("PreferSameNode", True)]
)
async def test_prefer_same_zone_and_node(
    kube: Kube, ns: str, operator: OperatorProcess, distribution: str, nodes: bool
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    names = await _pods_in_two_zones(kube, ns, twins)
    await twins.patch_spec({"trafficDistribution": distribution})
    await _agree_hinted(twins, names, nodes=nodes)
    # A readiness flip and a new pod keep the hints in step.
    await o.set_ready(kube, ns, "web-0", False, at="2026-01-01T00:01:00Z")
    await o.pod(kube, ns, "web-9", "10.1.0.10", node_name="node-b")
    names.add("web-9")
    await twins.agree(names, ready=("web-0", False))
    await twins.patch_spec({"trafficDistribution": None})
    await _agree_unhinted(twins, names)


@pytest.mark.k8s_min("1.27")  # v1.24.0-alpha.2's kube-controller-manager writes no hints
@pytest.mark.parametrize("annotation", [TOPOLOGY_MODE, DEPRECATED_TOPOLOGY])
async def test_topology_mode_auto_allocates_and_removes_hints(
    kube: Kube, ns: str, operator: OperatorProcess, annotation: str
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    names = await _pods_in_two_zones(kube, ns, twins, count=8)
    await _annotate_both(kube, ns, twins, annotation, "Auto")
    await _agree_hinted(twins, names, nodes=False)
    # A Ready node without a zone: neither controller can allocate any more; hints go.
    await o.node(kube, "node-c", None)
    try:
        await _agree_unhinted(twins, names)
    finally:
        await kube.delete("/api/v1/nodes/node-c")
    # Upstream does not queue a Service whose hints it removed when the nodes become
    # sufficient again (GetOverloadedServices knows only Services with hints); its next sync,
    # here a new pod's, allocates them again.
    await o.pod(kube, ns, "web-8", "10.1.0.9", node_name="node-a")
    names.add("web-8")
    await _agree_hinted(twins, names, nodes=False)
    await _annotate_both(kube, ns, twins, annotation, None)
    await _agree_unhinted(twins, names)


async def _annotate_both(
    kube: Kube, ns: str, twins: Twins, annotation: str, mode: str | None
) -> None:
    for name in (twins.kcm, twins.ours):
        await kube.patch(
            f"/api/v1/namespaces/{ns}/services/{name}",
            {"metadata": {"annotations": {annotation: mode}}},
        )


async def _agree_hinted(twins: Twins, names: set[str], *, nodes: bool) -> None:
    await _eventually_shaped(twins, names, hinted=True, nodes=nodes)


async def _agree_unhinted(twins: Twins, names: set[str]) -> None:
    await _eventually_shaped(twins, names, hinted=False, nodes=False)


async def _eventually_shaped(twins: Twins, names: set[str], *, hinted: bool, nodes: bool) -> None:
    """Both agree (endpoints and hints), and the ready endpoints carry hints exactly when
    ``hinted`` (agreeing on the state before the change is not agreeing on the change)."""

    async def shaped() -> bool:
        kcm, ours = await twins.shapes()
        assert set(kcm["endpoints"]) == names, sorted(kcm["endpoints"])
        for pod, state in kcm["endpoints"].items():
            hints = kcm["hints"][pod]
            if hinted and state[1]:  # ready endpoints get hints
                assert hints is not None and hints[0], (pod, hints)
                assert bool(hints[1]) is nodes, (pod, hints)
            if not hinted:
                assert hints is None, (pod, hints)
        problems = diff(kcm, ours)
        assert not problems, "\n".join(problems)
        return True

    await eventually(shaped, timeout=60)
