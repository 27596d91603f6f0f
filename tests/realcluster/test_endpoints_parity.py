"""Parity of the core/v1 Endpoints with kube-controller-manager's Endpoints controller.

The twins of ``parity.py``: ``<name>-kcm`` has ``spec.selector`` (kube-controller-manager writes
its Endpoints), ``<name>-eso`` is selectorless with the selector annotation, and the operator
runs with ``--write-endpoints``. Both Endpoints objects must hold the same subsets (as sets:
upstream orders them by a hash, we by content; targetRef resourceVersions ignored, which
upstream's own comparison ignores too) and the same labels and capacity annotation, apart from
the two labels the operator adds (managed-by and skip-mirror). The trigger-time annotation is
not compared: each controller sets it from the changes its own sync saw and removes it on an
update whose sync saw none, so it depends on when each one syncs (a latency hint, as upstream
says), not on what it publishes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import JSON, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.parity import Twins, endpoints_of

pytestmark = pytest.mark.realcluster

FORCE = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
OUR_LABELS = {
    "endpointslice.kubernetes.io/managed-by": OURS,
    "endpoints.kubernetes.io/managed-by": OURS,
    "endpointslice.kubernetes.io/skip-mirror": "true",
}
UPSTREAM_MARKER = "endpoints.kubernetes.io/managed-by"
"""kube-controller-manager v1.33+ marks its Endpoints ``endpoint-controller`` (KEP-4974); ours
carry the same key with our name. Each side's value names its own controller, so the key is
left out of the comparison and checked on each side."""
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


@pytest.fixture
async def writing_operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    await o.node(kube, "node-a", "zone-a")
    await o.node(kube, "node-b", "zone-b")
    async with running(
        kube.kubeconfig, log_dir / "operator.log", "--namespace", ns, "--write-endpoints"
    ) as op:
        yield op


def _address(address: JSON) -> tuple[Any, ...]:
    ref = address.get("targetRef") or {}
    return (
        address.get("ip"),
        address.get("hostname"),
        address.get("nodeName"),
        ref.get("kind"),
        ref.get("name"),
        ref.get("uid"),
    )


def endpoints_view(obj: JSON | None) -> dict[str, Any]:
    if obj is None:
        return {"missing": True}
    metadata = obj["metadata"]
    labels = {
        k: v
        for k, v in (metadata.get("labels") or {}).items()
        if k not in OUR_LABELS and k != UPSTREAM_MARKER
    }
    annotations = dict(metadata.get("annotations") or {})
    annotations.pop(TRIGGER, None)
    subsets = sorted(
        (
            tuple(sorted(_address(a) for a in s.get("addresses") or [])),
            tuple(sorted(_address(a) for a in s.get("notReadyAddresses") or [])),
            tuple(
                sorted(
                    (p.get("name", ""), p.get("port"), p.get("protocol"), p.get("appProtocol"))
                    for p in s.get("ports") or []
                )
            ),
        )
        for s in obj.get("subsets") or []
    )
    return {
        "labels": labels,
        "annotations": annotations,
        "subsets": subsets,
    }


async def agree(
    kube: Kube,
    ns: str,
    twins: Twins,
    pods: set[str],
    *,
    ready: set[str] | None = None,
    timeout: float = 60,
    expect: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Wait until both Endpoints objects hold the same, with exactly ``pods`` in them (and, if
    given, exactly ``ready`` among the ready addresses: agreeing on the state before a change
    is not agreeing on the change)."""
    seen: dict[str, Any] = {}

    async def same() -> bool:
        kcm = await endpoints_of(kube, ns, twins.kcm)
        ours = await endpoints_of(kube, ns, twins.ours)
        assert ours is not None, "ours not written yet"
        assert ours["metadata"]["labels"].items() >= OUR_LABELS.items()
        assert kcm is None or (kcm["metadata"].get("labels") or {}).get(UPSTREAM_MARKER) in (
            None,  # before v1.33
            "endpoint-controller",
        )
        a, b = endpoints_view(kcm), endpoints_view(ours)
        named = {
            address[4]
            for subset in a.get("subsets", [])
            for group in subset[:2]
            for address in group
        }
        assert named == pods, sorted(named)
        if ready is not None:
            ready_named = {address[4] for subset in a["subsets"] for address in subset[0]}
            assert ready_named == ready, sorted(ready_named)
        if expect is not None:
            expect(a)
        assert a == b, f"kcm={a}\nours={b}"
        seen.update(a)
        return True

    await eventually(same, timeout=timeout)
    return seen


async def test_arrivals_flips_deletions_and_port_changes(
    kube: Kube, ns: str, writing_operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(
        ports=[
            {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
            {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"},
        ]
    )
    names: set[str] = set()
    for i in range(8):
        name = f"web-{i}"
        port = 8080 if i % 3 else 9090  # "http" resolves differently on some pods
        await o.pod(
            kube,
            ns,
            name,
            f"10.1.0.{i + 1}",
            node_name=("node-a", "node-b")[i % 2],
            ready=i % 4 != 3,
            container_ports=[{"name": "http", "containerPort": port, "protocol": "TCP"}],
        )
        names.add(name)
        await agree(kube, ns, twins, names)
    for i in (0, 3):  # readiness flips
        await o.set_ready(kube, ns, f"web-{i}", i == 3, at="2026-01-01T00:01:00Z")
    ready = {f"web-{i}" for i in range(8) if i % 4 != 3} - {"web-0"} | {"web-3"}
    await agree(kube, ns, twins, names, ready=ready)
    for i in (1, 2):  # graceful: Terminating (no kubelet) leaves Endpoints at once
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-{i}")
        names.discard(f"web-{i}")
    await agree(kube, ns, twins, names)
    for i in (1, 2):
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-{i}", FORCE)
    await agree(kube, ns, twins, names)
    await twins.patch_spec(
        {"ports": [{"name": "http", "port": 80, "targetPort": 7070, "protocol": "TCP"}]}
    )

    def one_port_set(view: dict[str, Any]) -> None:
        assert [s[2] for s in view["subsets"]] == [(("http", 7070, "TCP", None),)], view

    await agree(kube, ns, twins, names, expect=one_port_set)


async def test_headless_without_ports_publishes_not_ready(
    kube: Kube, ns: str, writing_operator: OperatorProcess
) -> None:
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(clusterIP="None", ports=[], publishNotReadyAddresses=True)
    for i in range(4):
        await o.pod(kube, ns, f"web-{i}", f"10.1.0.{i + 1}", ready=i % 2 == 0)
    view = await agree(kube, ns, twins, {f"web-{i}" for i in range(4)})
    assert view["labels"] == {"service.kubernetes.io/headless": ""}
    assert [len(s[0]) for s in view["subsets"]] == [4], "all published as ready"
    assert [s[2] for s in view["subsets"]] == [()], "no ports"
