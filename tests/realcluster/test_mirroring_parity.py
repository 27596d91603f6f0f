"""Parity of our mirroring with kube-controller-manager's mirroring controller.

Twin selectorless Services: ``db-kcm`` (not opted in) and ``db-eso`` (opted in with
``<prefix>/source: endpoints``), each with an Endpoints object of the same content; ``db-eso``'s
carries ``endpointslice.kubernetes.io/skip-mirror: "true"`` so that only the operator mirrors it
(our mirroring ignores that label). The operator runs with ``--max-endpoints-per-slice 1000``,
upstream's packing. Both sets of slices must agree on every endpoint (address, ready, hostname,
nodeName, targetRef), the ports and address type of each slice, the packing, and the labels and
annotations copied from the Endpoints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import JSON, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running

pytestmark = pytest.mark.realcluster

KCM_MIRRORING = "endpointslicemirroring-controller.k8s.io"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SOURCE = "endpointslice-operator.io/source"
RESERVED = {"kubernetes.io/service-name", "endpointslice.kubernetes.io/managed-by"}


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


@pytest.fixture
async def mirroring_operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    async with running(
        kube.kubeconfig,
        log_dir / "operator.log",
        "--namespace",
        ns,
        "--max-endpoints-per-slice",
        "1000",
    ) as op:
        yield op


def view(slices: list[JSON]) -> dict[str, Any]:
    endpoints: dict[tuple[str, str], tuple[Any, ...]] = {}
    for s in slices:
        for ep in s.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            for address in ep["addresses"]:
                endpoints[(s["addressType"], address)] = (
                    (ep.get("conditions") or {}).get("ready"),
                    ep.get("hostname"),
                    ep.get("nodeName"),
                    ref.get("kind"),
                    ref.get("name"),
                )
    metadata = [s["metadata"] for s in slices]
    return {
        "endpoints": endpoints,
        "sizes": sorted(Counter(len(s.get("endpoints") or []) for s in slices).items()),
        "ports": sorted(
            (
                s["addressType"],
                tuple(
                    sorted(
                        (p.get("name"), p.get("port"), p.get("protocol"))
                        for p in s.get("ports") or []
                    )
                ),
            )
            for s in slices
        ),
        "labels": sorted(
            {
                tuple(
                    sorted((k, v) for k, v in (m.get("labels") or {}).items() if k not in RESERVED)
                )
                for m in metadata
            }
        ),
        "annotations": sorted(
            {tuple(sorted((m.get("annotations") or {}).items())) for m in metadata}
        ),
        "owners": sorted({r["kind"] for m in metadata for r in m.get("ownerReferences") or []}),
    }


class MirrorTwins:
    def __init__(self, kube: Kube, ns: str) -> None:
        self.kube, self.ns = kube, ns
        self.base = f"/api/v1/namespaces/{ns}/endpoints"

    async def create(self, subsets: list[JSON], labels: dict[str, str]) -> None:
        await o.service(self.kube, self.ns, "db-kcm", opt_in=False)
        await o.service(self.kube, self.ns, "db-eso", annotations={SOURCE: "endpoints"})
        for name, extra in (("db-kcm", {}), ("db-eso", {SKIP_MIRROR: "true"})):
            await self.kube.create(
                self.base,
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {
                        "name": name,
                        "labels": {**labels, **extra},
                        "annotations": {"note": "by hand"},
                    },
                    "subsets": subsets,
                },
            )

    async def set_subsets(self, subsets: list[JSON]) -> None:
        for name in ("db-kcm", "db-eso"):
            current = await self.kube.get(f"{self.base}/{name}")
            current["subsets"] = subsets
            await self.kube.request("PUT", f"{self.base}/{name}", current)

    async def agree(self, addresses: set[str], timeout: float = 60) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def same() -> bool:
            kcm = view(await self.kube.slices(self.ns, "db-kcm", manager=KCM_MIRRORING))
            ours = view(await self.kube.slices(self.ns, "db-eso", manager=OURS))
            assert {a for _, a in kcm["endpoints"]} == addresses, sorted(kcm["endpoints"])
            assert kcm == ours, f"kcm={kcm}\nours={ours}"
            seen.update(kcm)
            return True

        await eventually(same, timeout=timeout)
        return seen


def subset(
    ready: list[str],
    not_ready: tuple[str, ...] | list[str] = (),
    ports: tuple[int, ...] | list[int] = (80,),
) -> JSON:
    body: JSON = {"ports": [{"name": f"p{p}", "port": p, "protocol": "TCP"} for p in ports]}
    if ready:
        body["addresses"] = [
            {"ip": ip, "hostname": f"h{i}", "nodeName": "node-a"} for i, ip in enumerate(ready)
        ]
    if not_ready:
        body["notReadyAddresses"] = [{"ip": ip} for ip in not_ready]
    return body


async def test_mirrored_slices_equal_kube_controller_managers(
    kube: Kube, ns: str, mirroring_operator: OperatorProcess
) -> None:
    twins = MirrorTwins(kube, ns)
    await twins.create([subset(["10.5.0.1", "10.5.0.2"])], {"team": "db"})
    first = await twins.agree({"10.5.0.1", "10.5.0.2"})
    assert first["owners"] == ["Endpoints"]
    assert first["annotations"] == [(("note", "by hand"),)]
    # arrivals, a flip to not ready, a second subset with other ports, an IPv6 address
    await twins.set_subsets(
        [
            subset(["10.5.0.1", "10.5.0.3"], ["10.5.0.2"]),
            subset(["10.5.1.1", "fd00::1"], ports=[5432, 5433]),
        ]
    )
    second = await twins.agree({"10.5.0.1", "10.5.0.2", "10.5.0.3", "10.5.1.1", "fd00::1"})
    assert len(second["ports"]) == 3
    # deletions and a port change
    await twins.set_subsets([subset(["10.5.0.3"], ports=[8080])])
    third = await twins.agree({"10.5.0.3"})
    assert third["ports"] == [("IPv4", (("p8080", 8080, "TCP"),))]


def _many(count: int, third: int = 6) -> list[str]:
    return [f"10.{third}.{i // 250}.{i % 250 + 1}" for i in range(count)]


def over_cap(shape: dict[str, Any]) -> dict[str, Any]:
    """The view without which not-ready addresses filled the cap: kube-controller-manager v1.24
    orders a repacked subset's addresses otherwise than v1.36 (which the port follows), so
    past the cap it mirrors other not-ready ones; their count must still agree."""
    endpoints = shape["endpoints"]
    ready = {key: value for key, value in endpoints.items() if value[0]}
    return {**shape, "endpoints": ready, "not_ready": len(endpoints) - len(ready)}


async def test_large_endpoints_are_packed_as_kube_controller_manager_packs_them(
    kube: Kube, ns: str, log_dir: Path
) -> None:
    """Past ``--max-endpoints-per-slice`` (100 by default, which upstream's mirroring does not
    read) and past 1,000 addresses per subset (``--max-endpoints-per-subset``): one slice per
    port set, of at most 1,000 endpoints, ready addresses first, as kube-controller-manager's.
    Before the port, ours split 250 addresses into slices of 100, 100 and 50."""
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns):
        twins = MirrorTwins(kube, ns)
        large = _many(250)
        await twins.create([subset(large)], {"team": "db"})
        first = await twins.agree(set(large))
        assert first["sizes"] == [(250, 1)]
        ready, not_ready = _many(700), _many(500, third=7)
        await twins.set_subsets([subset(ready, not_ready)])

        async def same() -> bool:
            kcm = over_cap(view(await kube.slices(ns, "db-kcm", manager=KCM_MIRRORING)))
            ours = over_cap(view(await kube.slices(ns, "db-eso", manager=OURS)))
            assert kcm["sizes"] == [(1000, 1)], kcm["sizes"]
            assert kcm == ours, f"kcm={kcm}\nours={ours}"
            return True

        await eventually(same, timeout=90)
        kcm = over_cap(view(await kube.slices(ns, "db-kcm", manager=KCM_MIRRORING)))
        assert len(kcm["endpoints"]) == 700 and kcm["not_ready"] == 300
