"""The randomized referee for core/v1 Endpoints and for mirroring (issue 34), beside the
EndpointSlice one of ``test_parity_random.py``, with its generators and seeds
(``ESO_PARITY_SEED``, ``ESO_PARITY_SCENARIOS``, ``ESO_PARITY_MAX_PODS``).

**Endpoints.** The twins live in two namespaces under one name, so that a pod's ``subdomain``
can name both Services (upstream gives an address its hostname only then): in the test's
namespace the Service has ``spec.selector`` and kube-controller-manager's Endpoints controller
writes its Endpoints; in ``<ns>-e`` the Service is selectorless, opted in with the same selector
and ``<prefix>/endpoints: "true"``, and the operator writes it. Every pod exists in both, with
the same name, IP and spec. Compared once both agree: the labels (each side's managed-by and
our skip-mirror aside, checked per side) and annotations (the trigger time aside); the subsets
as a multiset, each with its ready and not-ready addresses **in order** (ip, hostname, nodeName,
targetRef kind, name and fieldPath: the namespace and UID differ by construction, the
resourceVersion is ignored as upstream ignores it) and its ports in order. The order of the
subsets is not compared: upstream sorts them by a hash of each subset's whole Go dump, pod UIDs
and resourceVersions included, which is random from one run to the next.

**Mirroring.** Twin selectorless Services in the test's namespace with Endpoints of the same
generated content: ``m<i>-kcm`` (not opted in: kube-controller-manager's mirroring controller
mirrors it) and ``m<i>-eso`` (opted in with ``<prefix>/source: endpoints``; its Endpoints
labelled ``endpointslice.kubernetes.io/skip-mirror: "true"`` so that only the operator mirrors
it). Generated: 1-4 subsets of 0-3 ports each (a port with an appProtocol in one subset only,
see ``UPSTREAM_APP_PROTOCOL``), addresses ready and not ready drawn from one pool (so the same
address recurs across subsets and within one), IPv4 or IPv6 (one family per scenario, see
``UPSTREAM_RECYCLING``), IPv6 also written out longhand (both publish it short), hostname,
nodeName and targetRef, now and then a subset of more than 1000 addresses (upstream mirrors at
most ``--mirroring-max-endpoints-per-subset``, 1000, of each subset), labels and annotations on the
Endpoints; then random changes. Compared per address type: each slice's ports in order, its
endpoints with every field (as a set: upstream's order within a mirrored slice follows a Go
map walk), its labels and annotations (managed-by, service-name and the trigger time aside),
and the number of slices. Not generated: the skip-mirror label on kube-controller-manager's
twin (it would only stop upstream's mirroring; ours ignores the label by design).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import pod_body
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import JSON, OURS, ApiFailure, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.parity import endpoints_of
from tests.realcluster.test_parity_random import (
    FORCE,
    IGNORED_ANNOTATIONS,
    IGNORED_LABELS,
    NODES,
    _count,
    _seed,
    container_ports,
    random_ports,
    random_spec,
)

pytestmark = [pytest.mark.realcluster, pytest.mark.k8s_min("1.35")]

ENDPOINTS_OPT_IN = "endpointslice-operator.io/endpoints"
SOURCE = "endpointslice-operator.io/source"
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
ADDRESS_FIELDS = ("addresses", "notReadyAddresses")
KCM_MIRRORING = "endpointslicemirroring-controller.k8s.io"
STEP = "step"
"""A Service label (Endpoints) or Endpoints annotation (mirroring) naming the last change: the
referee compares once both sides carry it, so that agreeing on the state before a change does
not pass for agreeing on the change."""
SIDE_LABELS = {ENDPOINTS_MANAGED_BY, SKIP_MIRROR, "endpointslice.kubernetes.io/managed-by"}
"""Labels naming who wrote an Endpoints object: checked per side, not compared."""
KCM_SIDE = {ENDPOINTS_MANAGED_BY: "endpoint-controller"}
OUR_SIDE = {
    ENDPOINTS_MANAGED_BY: OURS,
    "endpointslice.kubernetes.io/managed-by": OURS,
    SKIP_MIRROR: "true",
}


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


# ---------------------------------------------------------------------------------------------
# Endpoints


@pytest.fixture
async def twin_ns(kube: Kube, ns: str) -> AsyncIterator[str]:
    """The operator's namespace of the Endpoints twins."""
    name = f"{ns}-e"
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await kube.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
async def two_ns_operator(
    kube: Kube, ns: str, twin_ns: str, log_dir: Path
) -> AsyncIterator[OperatorProcess]:
    await o.node(kube, "node-a", "zone-a")
    await o.node(kube, "node-b", "zone-b")
    args = ("--namespace", ns, "--namespace", twin_ns)
    async with running(kube.kubeconfig, log_dir / "operator.log", *args) as op:
        yield op


class NamespaceTwins:
    """The same Service name, pods and changes in two namespaces (``kcm``, ``ours``)."""

    def __init__(self, kube: Kube, kcm: str, ours: str, name: str, selector: dict[str, str]):
        self.kube, self.kcm, self.ours, self.name, self.selector = kube, kcm, ours, name, selector

    @property
    def both(self) -> tuple[str, str]:
        return self.kcm, self.ours

    async def create(self, labels: dict[str, str], **spec: Any) -> None:
        if spec.get("clusterIP") == "None":  # as parity.Twins: the same families on both
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("ipFamilies", ["IPv4"])
        text = ",".join(f"{k}={v}" for k, v in sorted(self.selector.items()))
        await o.service(
            self.kube,
            self.kcm,
            self.name,
            selector=self.selector,
            opt_in=False,
            labels=labels,
            **spec,
        )
        annotations = {o.SELECTOR: text, ENDPOINTS_OPT_IN: "true"}
        await o.service(
            self.kube, self.ours, self.name, annotations=annotations, labels=labels, **spec
        )

    async def patch_service(self, body: JSON) -> None:
        for namespace in self.both:
            await self.kube.patch(f"/api/v1/namespaces/{namespace}/services/{self.name}", body)


async def add_pod_pair(
    kube: Kube, twins: NamespaceTwins, rng: random.Random, index: int, scenario: int
) -> str:
    """One generated pod, the same in both namespaces."""
    name = f"web-{index}"
    labels = {"app": "web", "scenario": str(scenario)}
    node = rng.choice(NODES)
    ports = container_ports(rng)
    spec: JSON = {}
    if rng.random() < 0.3:
        spec["hostname"] = f"h{index}"
    if rng.random() < 0.4:
        spec["subdomain"] = rng.choice((twins.name, twins.name, "other"))
    no_ip = rng.random() < 0.05
    ip = f"10.{100 + scenario}.{index // 250}.{index % 250 + 1}"
    ready = rng.random() < 0.75
    roll = rng.random()
    for ns in twins.both:
        if no_ip:  # created, its sandbox not up
            body = pod_body(name, ip, labels=labels, node_name=node, container_ports=ports)
            body.pop("status")
            body["metadata"]["namespace"] = ns
            body["spec"].update(spec)
            await kube.create(f"/api/v1/namespaces/{ns}/pods", body)
            continue
        await o.pod(
            kube,
            ns,
            name,
            ip,
            labels=labels,
            ready=ready,
            node_name=node,
            container_ports=ports,
            **spec,
        )
        if roll < 0.05:
            phase = "Failed" if roll < 0.025 else "Succeeded"
            await o.set_status(kube, ns, name, {"phase": phase})
        elif roll < 0.12:
            await kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")  # Terminating: no kubelet
    return name


def _address(address: JSON, ns: str) -> tuple[Any, ...]:
    ref = dict(address.get("targetRef") or {})
    assert ref.get("namespace") in (None, ns), (ns, address)
    return (
        address.get("ip"),
        address.get("hostname"),
        address.get("nodeName"),
        ref.get("kind"),
        ref.get("name"),
        ref.get("fieldPath"),
        tuple(sorted(set(address) - {"ip", "hostname", "nodeName", "targetRef"})),
    )


def endpoints_view(obj: JSON | None, side: dict[str, str]) -> dict[str, Any]:
    """What the referee compares of one Endpoints object (``side``: the labels its writer
    must have put, checked here and then left out)."""
    if obj is None:
        return {"missing": True}
    metadata = obj["metadata"]
    ns = metadata["namespace"]
    labels = dict(metadata.get("labels") or {})
    for key, value in side.items():
        assert labels.get(key) == value, (key, labels)
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k not in IGNORED_ANNOTATIONS
    }
    subsets = sorted(
        repr(
            (
                [_address(a, ns) for a in s.get("addresses") or []],
                [_address(a, ns) for a in s.get("notReadyAddresses") or []],
                s.get("ports") or [],
                sorted(set(s) - {"addresses", "notReadyAddresses", "ports"}),
            )
        )
        for s in obj.get("subsets") or []
    )
    if annotations.get(OVER_CAPACITY) and len(subsets) > 1:
        # Truncated: each subset keeps its share of the 1000 but the one ordered last, which
        # gets what is left; upstream's subset order is a hash with pod UIDs in it (random),
        # so only the ports and the number of addresses kept are compared.
        subsets = sorted(repr(s.get("ports") or []) for s in obj.get("subsets") or [])
        kept = sum(len(s.get(f) or []) for s in obj["subsets"] for f in ADDRESS_FIELDS)
        subsets.append(f"{kept} addresses")
    return {
        "labels": {k: v for k, v in labels.items() if k not in SIDE_LABELS},
        "annotations": annotations,
        "subsets": subsets,
    }


async def endpoints_agree(
    kube: Kube, twins: NamespaceTwins, seed: int, step: str, marker: str
) -> None:
    """Wait until both Endpoints carry the Service's ``step`` label ``marker`` (each side has
    synced after the change) and agree."""

    async def same() -> bool:
        kcm = endpoints_view(await endpoints_of(kube, twins.kcm, twins.name), KCM_SIDE)
        ours = endpoints_view(await endpoints_of(kube, twins.ours, twins.name), OUR_SIDE)
        for view in (kcm, ours):
            assert view.get("labels", {}).get(STEP) == marker, (step, view)
        assert kcm == ours, f"seed {seed}, {step}:\nkcm={kcm}\nours={ours}"
        return True

    await eventually(same, timeout=60)


async def change_endpoints(
    kube: Kube, rng: random.Random, twins: NamespaceTwins, names: list[str], headless: bool
) -> str:
    """One random change on both twins; returns what it was, for the failure message."""
    roll = rng.random()
    if roll < 0.3 and names:
        picked = rng.sample(names, k=min(len(names), rng.randint(1, 5)))
        flips = {name: rng.random() < 0.5 for name in picked}
        for ns in twins.both:
            for name, ready in flips.items():
                try:
                    await o.set_ready(kube, ns, name, ready, at="2026-01-01T00:02:00Z")
                except (ApiFailure, KeyError, TypeError):
                    pass  # a pod without IPs or already gone: nothing to flip
        return f"readiness {flips}"
    if roll < 0.55 and names:
        picked = rng.sample(names, k=min(len(names), rng.randint(1, 5)))
        graceful = rng.random() < 0.4
        for ns in twins.both:
            for name in picked:
                await kube.delete(
                    f"/api/v1/namespaces/{ns}/pods/{name}", None if graceful else FORCE
                )
        if not graceful:
            for name in picked:
                names.remove(name)
        return f"{'graceful' if graceful else 'forced'} deletion of {picked}"
    if roll < 0.65:
        labels = {f"l{i}": rng.choice(("a", "b", "")) for i in range(rng.randint(0, 3))}
        current = await kube.get(f"/api/v1/namespaces/{twins.kcm}/services/{twins.name}")
        patch: dict[str, str | None] = {
            k: None for k in current["metadata"].get("labels") or {} if k != STEP
        }
        patch.update(labels)
        await twins.patch_service({"metadata": {"labels": patch}})
        return f"Service labels {labels}"
    spec, _ = random_spec(rng)
    body: JSON = {"ports": spec["ports"] or None}
    body["publishNotReadyAddresses"] = spec.get("publishNotReadyAddresses", False)
    if body["ports"] is None and not headless:
        body["ports"] = random_ports(rng) or [{"port": 80, "protocol": "TCP"}]
    await twins.patch_service({"spec": body})
    return f"Service spec {body}"


async def test_random_endpoints_agree_with_kube_controller_manager(
    kube: Kube, ns: str, twin_ns: str, two_ns_operator: OperatorProcess
) -> None:
    seed = _seed()
    print(f"ESO_PARITY_SEED={seed}")  # replays this run
    rng = random.Random(seed)
    for scenario in range(_count("ESO_PARITY_SCENARIOS", 2)):
        spec, labels = random_spec(rng)
        spec.pop("trafficDistribution", None)  # no bearing on Endpoints
        selector = {"app": "web", "scenario": str(scenario)}
        twins = NamespaceTwins(kube, ns, twin_ns, f"s{scenario}", selector)
        headless = spec.get("clusterIP") == "None"
        await twins.create({**labels, STEP: "created"}, **spec)
        count = rng.randint(0, _count("ESO_PARITY_MAX_PODS", 60))
        names = [
            await add_pod_pair(kube, twins, rng, scenario * 2000 + index, scenario)
            for index in range(count)
        ]
        # A Service change makes both sync every pod as it is now: upstream's pod handler
        # ignores a phase change alone (a pod turned Failed with its Ready condition still
        # True stays published until the Service's next sync), so without it the comparison
        # would depend on when each controller last synced.
        await twins.patch_service({"metadata": {"labels": {STEP: "pods"}}})
        step = f"scenario {scenario} created: {spec}, {count} pods"
        await endpoints_agree(kube, twins, seed, step, "pods")
        for round_ in range(3):
            what = await change_endpoints(kube, rng, twins, names, headless)
            marker = f"change-{round_}"
            await twins.patch_service({"metadata": {"labels": {STEP: marker}}})
            step = f"scenario {scenario} change {round_}: {what}"
            await endpoints_agree(kube, twins, seed, step, marker)


# ---------------------------------------------------------------------------------------------
# Mirroring


@pytest.fixture
async def mirroring_operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    args = ("--namespace", ns, "--max-endpoints-per-slice", "1000")  # upstream's packing
    async with running(kube.kubeconfig, log_dir / "operator.log", *args) as op:
        yield op


def _ip(rng: random.Random, index: int, scenario: int, ipv6: bool, block: int = 0) -> str:
    if not ipv6:
        return f"10.{200 + 10 * block + scenario}.{index // 250}.{index % 250 + 1}"
    if rng.random() < 0.8:
        return f"fd00:{scenario}:{block}::{index + 1:x}"
    return f"fd00:{scenario}:{block}:0:0:0:0:{index + 1:x}"  # longhand: accepted, published short


UPSTREAM_RECYCLING = "one address family per Endpoints object"
"""Why each mirroring scenario keeps to one family: kube-controller-manager v1.36's mirroring
turns creates into updates of slices it would delete (``recycleSlices``), and removes each
recycled create from its list by *name*, which every slice to create has empty: with creates
of both families in one sync and a delete in one of them, it may drop a create of the other
family and send the recycled slice as a create with a name, refused as existing; which one
depends on Go's map order, so the sync fails or not at random and retries with a growing
back-off. The operator creates them all; the referee compares only what upstream reaches."""


UPSTREAM_APP_PROTOCOL = "a port with an appProtocol in one subset only"
"""Upstream's RepackSubsets keys ports by the Go struct, whose appProtocol is a pointer: the
same port with an appProtocol in two subsets is two ports, packed apart, so after repacking
two subsets may offer the same port list and the same address, ready in one and not ready in
the other. Mirroring then keeps the readiness of the subset ordered last, by a hash of its Go
debug dump (``SubsetsByHash``), which the operator does not port (it orders subsets by content):
the referee does not generate that case."""


PORT_CATALOGUE: tuple[JSON, ...] = (
    {"name": "http", "port": 80, "protocol": "TCP"},
    {"name": "https", "port": 443, "protocol": "TCP", "appProtocol": "https"},
    {"name": "dns", "port": 53, "protocol": "UDP"},
    {"name": "sctp", "port": 9000, "protocol": "SCTP"},
    {"name": "pg", "port": 5432, "protocol": "TCP", "appProtocol": "kubernetes.io/h2c"},
    {"port": 8080, "protocol": "TCP"},
)
"""The ports the mirroring scenarios draw from, each name for one port only. Repacking merges
the ports of subsets that share their addresses into one slice, and kube-apiserver refuses a
slice with two ports of the same name (or two unnamed ones): kube-controller-manager then
retries that Endpoints forever (its sync fails on the update), which is not a state to
compare."""


def random_address(rng: random.Random, ip: str, index: int) -> JSON:
    address: JSON = {"ip": ip}
    if rng.random() < 0.3:
        address["hostname"] = f"h{index}"
    if rng.random() < 0.5:
        address["nodeName"] = rng.choice(NODES)
    if rng.random() < 0.4:
        address["targetRef"] = {
            "kind": "Pod",
            "name": f"pod-{index}",
            "namespace": "elsewhere",
            "uid": f"00000000-0000-0000-0000-{index:012d}",
        }
    return address


def random_subsets(rng: random.Random, scenario: int) -> list[JSON]:
    """Addresses of one family per scenario (its index decides): see UPSTREAM_RECYCLING."""
    ipv6 = scenario % 2 == 1
    pool_size = rng.choice((3, 10, 40))
    pool = [_ip(rng, i, scenario, ipv6) for i in range(pool_size)]
    subsets = []
    catalogue = list(PORT_CATALOGUE)
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        subset: JSON = {}
        ports = rng.sample(catalogue, k=min(len(catalogue), rng.choice((0, 1, 1, 2, 3))))
        # A port with an appProtocol in one subset only: see UPSTREAM_APP_PROTOCOL.
        catalogue = [p for p in catalogue if "appProtocol" not in p or p not in ports]
        if len(ports) > 1:  # the server wants every port of a subset named, but a lone one
            ports = [p for p in ports if "name" in p]
        if ports:
            subset["ports"] = ports
        big = rng.random() < 0.08
        for field, share in (("addresses", 0.7), ("notReadyAddresses", 0.3)):
            if big:
                count = int(1100 * share) + rng.randint(0, 100)
                block = 3 if field == "addresses" else 4
                ips = [_ip(rng, i, scenario, ipv6, block) for i in range(count)]
            else:
                ips = [rng.choice(pool) for _ in range(rng.randint(0, 6))]
            if ips:
                subset[field] = [
                    random_address(rng, ip, pool.index(ip) if ip in pool else i)
                    for i, ip in enumerate(ips)
                ]
        if subset.get("addresses") or subset.get("notReadyAddresses"):
            subsets.append(subset)
    return subsets


def random_meta(rng: random.Random) -> tuple[dict[str, str], dict[str, str]]:
    labels = {f"team{i}": rng.choice(("db", "x", "")) for i in range(rng.randint(0, 2))}
    annotations = {f"note{i}": rng.choice(("by hand", "")) for i in range(rng.randint(0, 2))}
    return labels, annotations


class MirrorTwins:
    def __init__(self, kube: Kube, ns: str, name: str) -> None:
        self.kube, self.ns, self.name = kube, ns, name
        self.base = f"/api/v1/namespaces/{ns}/endpoints"

    @property
    def kcm(self) -> str:
        return f"{self.name}-kcm"

    @property
    def ours(self) -> str:
        return f"{self.name}-eso"

    async def create(
        self, subsets: list[JSON], labels: dict[str, str], notes: dict[str, str]
    ) -> None:
        await o.service(self.kube, self.ns, self.kcm, opt_in=False)
        await o.service(self.kube, self.ns, self.ours, annotations={SOURCE: "endpoints"})
        for name, extra in ((self.kcm, {}), (self.ours, {SKIP_MIRROR: "true"})):
            metadata = {"name": name, "labels": {**labels, **extra}, "annotations": notes}
            body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata}
            await self.kube.create(self.base, {**body, "subsets": subsets})

    async def replace(
        self, subsets: list[JSON], labels: dict[str, str], notes: dict[str, str]
    ) -> None:
        for name, extra in ((self.kcm, {}), (self.ours, {SKIP_MIRROR: "true"})):
            current = await self.kube.get(f"{self.base}/{name}")
            current["subsets"] = subsets
            current["metadata"]["labels"] = {**labels, **extra}
            current["metadata"]["annotations"] = notes
            await self.kube.request("PUT", f"{self.base}/{name}", current)


def _slice_view(item: JSON) -> str:
    metadata = item.get("metadata") or {}
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k not in IGNORED_LABELS}
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k not in IGNORED_ANNOTATIONS
    }
    endpoints = sorted(repr(sorted(e.items())) for e in item.get("endpoints") or [])
    return repr(
        (
            item.get("ports"),
            len(endpoints),
            endpoints,
            sorted(labels.items()),
            sorted(annotations.items()),
        )
    )


def mirrored_view(slices: list[JSON]) -> dict[str, list[str]]:
    """Per address type, the sorted views of its slices."""
    view: dict[str, list[str]] = {}
    for item in slices:
        view.setdefault(item["addressType"], []).append(_slice_view(item))
    return {family: sorted(items) for family, items in view.items()}


async def mirrors_agree(
    kube: Kube, twins: MirrorTwins, seed: int, step: str, marker: str, subsets: list[JSON]
) -> None:
    """Wait until every mirrored slice on both sides carries the ``step`` annotation
    ``marker`` (and there is one, if ``subsets`` hold addresses) and both agree."""

    async def same() -> bool:
        kcm_slices = await kube.slices(twins.ns, twins.kcm, manager=KCM_MIRRORING)
        our_slices = await kube.slices(twins.ns, twins.ours, manager=OURS)
        assert kcm_slices or not subsets, (step, "not mirrored yet")
        for side, items in (("kcm", kcm_slices), ("ours", our_slices)):
            for item in items:
                seen = (item["metadata"].get("annotations") or {}).get(STEP)
                assert seen == marker, (side, step, item)
        kcm, ours = mirrored_view(kcm_slices), mirrored_view(our_slices)
        assert kcm == ours, f"seed {seed}, {step}:\nkcm={kcm}\nours={ours}"
        return True

    await eventually(same, timeout=60)


async def test_random_mirroring_agrees_with_kube_controller_manager(
    kube: Kube, ns: str, mirroring_operator: OperatorProcess
) -> None:
    seed = _seed()
    print(f"ESO_PARITY_SEED={seed}")  # replays this run
    rng = random.Random(seed)
    for scenario in range(_count("ESO_PARITY_SCENARIOS", 2)):
        twins = MirrorTwins(kube, ns, f"m{scenario}")
        subsets = random_subsets(rng, scenario)
        labels, notes = random_meta(rng)
        await twins.create(subsets, labels, {**notes, STEP: "created"})
        step = f"scenario {scenario} created: {subsets}"
        await mirrors_agree(kube, twins, seed, step, "created", subsets)
        for round_ in range(3):
            subsets = random_subsets(rng, scenario)
            if rng.random() < 0.3:
                labels, notes = random_meta(rng)
            marker = f"change-{round_}"
            await twins.replace(subsets, labels, {**notes, STEP: marker})
            step = f"scenario {scenario} change {round_}: {subsets} {labels} {notes}"
            await mirrors_agree(kube, twins, seed, step, marker, subsets)
