"""Leftover slices of ours on a real control plane: labelled managed-by the operator but
claimed by no Service (the Service does not exist and nothing owns them, or there is no
``kubernetes.io/service-name`` label) are deleted once the caches are in; anyone else's stay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.realcluster.kube import JSON, KCM, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, OURS, Kube
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster

SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"


def slice_body(name: str, labels: dict[str, str]) -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": labels},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}],
    }


async def names(kube: Kube, ns: str) -> set[str]:
    body = await kube.get(SLICES.format(ns=ns))
    return {item["metadata"]["name"] for item in body["items"]}


async def create(kube: Kube, ns: str, name: str, labels: dict[str, str]) -> None:
    await kube.create(SLICES.format(ns=ns), slice_body(name, labels))


async def test_leftovers_of_ours_are_deleted_and_nobody_elses(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    await create(kube, ns, "gone-ours", {LABEL_SERVICE_NAME: "gone", LABEL_MANAGED_BY: OURS})
    await create(kube, ns, "gone-kcm", {LABEL_SERVICE_NAME: "gone", LABEL_MANAGED_BY: KCM})
    await create(kube, ns, "nameless-ours", {LABEL_MANAGED_BY: OURS})
    await create(kube, ns, "nameless-other", {LABEL_MANAGED_BY: "someone-else.example"})
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns) as op:
        await _gone(kube, ns, {"gone-ours", "nameless-ours"}, op)
        # one that appears while the operator leads
        await create(kube, ns, "nameless-later", {LABEL_MANAGED_BY: OURS})
        await _gone(kube, ns, {"nameless-later"}, op)
        assert {"gone-kcm", "nameless-other"} <= await names(kube, ns)
        text = op.log()
        assert "deleted leftover EndpointSlice" in text and "does not exist" in text


async def _gone(kube: Kube, ns: str, wanted: set[str], op: OperatorProcess) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while (left := wanted & await names(kube, ns)) and loop.time() < deadline:
        await asyncio.sleep(0.2)
    assert not left, f"still there: {left}\n{op.log()[-2000:]}"
