"""A randomized referee: generated Services and pods, then random changes, each published by
kube-controller-manager (``<name>-kcm``, ``spec.selector``) and by the operator (``<name>-eso``,
selectorless, opted in with the same selector), compared on every field
kube-controller-manager writes once both agree (issue 34).

The seed is printed; ``ESO_PARITY_SEED=<seed>`` replays a run, ``ESO_PARITY_SCENARIOS=<n>``
runs more scenarios (CI: 2, each with up to ``ESO_PARITY_MAX_PODS`` pods, 60 by default; 250
gives several slices per port group).

Compared, per address type: the number of slices; each slice's ports **in order**; the set of
endpoints with every field (addresses, conditions, hostname, nodeName, zone, targetRef without
its resourceVersion, hints); each slice's labels and annotations, apart from managed-by,
service-name and the trigger-time annotation. Which endpoints share a slice is not compared:
upstream packs in the order of a Go map walk (random), so only the count of slices is.

Not generated, by construction of the twins: ``hostname`` with ``subdomain`` (an endpoint gets
its hostname only when the pod's subdomain is the Service's name, and the twins' names
differ), and IPv6 (the session's control plane has an IPv4 service range;
``test_canonical_ips.py`` runs dual-stack planes).
"""

from __future__ import annotations

import functools
import os
import random
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from tests.e2e.harness import pod_body
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster, assets_dir
from tests.realcluster.kube import JSON, KCM, OURS, ApiFailure, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess, running
from tests.realcluster.parity import Twins

pytestmark = [pytest.mark.realcluster, pytest.mark.k8s_min("1.35")]

FORCE = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
IGNORED_LABELS = {"endpointslice.kubernetes.io/managed-by", "kubernetes.io/service-name"}
IGNORED_ANNOTATIONS = {"endpoints.kubernetes.io/last-change-trigger-time"}
PROTOCOLS = ("TCP", "UDP", "SCTP")
NODES = ("node-a", "node-b", "node-gone")  # node-gone does not exist
PACKING = "packing"


@pytest.fixture(autouse=True)
def needs_kcm(cluster: Cluster) -> None:
    if not cluster.has_kcm:
        pytest.skip("parity needs kube-controller-manager")


def _seed() -> int:
    given = os.environ.get("ESO_PARITY_SEED")
    return int(given) if given else random.SystemRandom().randrange(1, 2**31)


def _count(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def random_ports(rng: random.Random) -> list[JSON]:
    count = rng.choice((0, 1, 1, 2, 3, 6)) if rng.random() < 0.9 else rng.randint(0, 6)
    ports = []
    for i in range(count):
        protocol = rng.choice(PROTOCOLS)
        target: int | str = rng.choice((8080 + i, "http", "metrics"))
        port: JSON = {"port": 8000 + i, "targetPort": target, "protocol": protocol}
        if count > 1 or rng.random() < 0.5:
            port["name"] = f"p{rng.randint(0, 99)}-{i}"
        if rng.random() < 0.3:
            port["appProtocol"] = rng.choice(("http", "kubernetes.io/h2c", "example.com/x"))
        ports.append(port)
    return ports


def random_spec(rng: random.Random) -> tuple[JSON, dict[str, str]]:
    spec: JSON = {"ports": random_ports(rng)}
    if not spec["ports"] or rng.random() < 0.2:
        spec["clusterIP"] = "None"
    if rng.random() < 0.3:
        spec["publishNotReadyAddresses"] = True
    if rng.random() < 0.4:
        spec["trafficDistribution"] = rng.choice(
            ("PreferClose", "PreferSameZone", "PreferSameNode")
        )
    labels = {f"l{i}": rng.choice(("a", "b", "")) for i in range(rng.randint(0, 3))}
    return spec, labels


def container_ports(rng: random.Random) -> list[JSON]:
    """``http`` resolves to 8080 or 9090 per pod, ``metrics`` only on some pods, and each is
    declared for one protocol only: named targets resolve differently per pod."""
    ports = [{"name": "http", "containerPort": rng.choice((8080, 9090)), "protocol": "TCP"}]
    if rng.random() < 0.5:
        protocol = rng.choice(PROTOCOLS)
        ports.append({"name": "metrics", "containerPort": 9100, "protocol": protocol})
    return ports


async def add_pod(kube: Kube, ns: str, rng: random.Random, index: int, scenario: int) -> str:
    name = f"web-{index}"
    labels = {"app": "web", "scenario": str(scenario)}
    node = rng.choice(NODES)
    ports = container_ports(rng)
    if rng.random() < 0.05:  # no IP yet: created, its sandbox not up
        body = pod_body(name, "10.0.0.1", labels=labels, node_name=node, container_ports=ports)
        body.pop("status")
        body["metadata"]["namespace"] = ns
        await kube.create(f"/api/v1/namespaces/{ns}/pods", body)
        return name
    ip = f"10.{100 + scenario}.{index // 250}.{index % 250 + 1}"
    ready = rng.random() < 0.75
    await o.pod(
        kube, ns, name, ip, labels=labels, ready=ready, node_name=node, container_ports=ports
    )
    roll = rng.random()
    if roll < 0.05:
        await o.set_status(kube, ns, name, {"phase": rng.choice(("Failed", "Succeeded"))})
    elif roll < 0.12:
        await kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}")  # Terminating: no kubelet
    return name


def _endpoint(endpoint: JSON) -> str:
    ref = dict(endpoint.get("targetRef") or {})
    ref.pop("resourceVersion", None)
    return repr(sorted({**endpoint, "targetRef": ref}.items()))


def _meta(item: JSON, key: str, ignored: set[str]) -> tuple[tuple[str, str], ...]:
    values = (item.get("metadata") or {}).get(key) or {}
    return tuple(sorted((k, v) for k, v in values.items() if k not in ignored))


def referee_view(slices: list[JSON]) -> dict[str, Any]:
    """What the referee compares, per address type."""
    view: dict[str, Any] = {}
    for item in slices:
        family = view.setdefault(
            item["addressType"],
            {"slices": 0, "ports": Counter(), "endpoints": set(), "meta": Counter()},
        )
        family["slices"] += 1
        family["ports"][repr(item.get("ports") or [])] += 1
        family["endpoints"].update(_endpoint(e) for e in item.get("endpoints") or [])
        family["meta"][
            (_meta(item, "labels", IGNORED_LABELS), _meta(item, "annotations", IGNORED_ANNOTATIONS))
        ] += 1
    return view


async def agree(kube: Kube, ns: str, twins: Twins, seed: int, step: str) -> None:
    async def same() -> bool:
        kcm = referee_view(await kube.slices(ns, twins.kcm, manager=KCM))
        ours = referee_view(await kube.slices(ns, twins.ours, manager=OURS))
        assert kcm == ours, f"seed {seed}, {step}:\nkcm={kcm}\nours={ours}"
        return True

    await eventually(same, timeout=90)


async def change(
    kube: Kube, ns: str, rng: random.Random, twins: Twins, names: list[str], headless: bool
) -> None:
    """One random change: readiness flips, deletions (graceful or forced), a spec change."""
    roll = rng.random()
    if roll < 0.4 and names:
        for name in rng.sample(names, k=min(len(names), rng.randint(1, 5))):
            try:
                await o.set_ready(kube, ns, name, rng.random() < 0.5, at="2026-01-01T00:02:00Z")
            except (ApiFailure, KeyError, TypeError):
                pass  # a pod without IPs or already gone: nothing to flip
    elif roll < 0.7 and names:
        for name in rng.sample(names, k=min(len(names), rng.randint(1, 5))):
            await kube.delete(f"/api/v1/namespaces/{ns}/pods/{name}", FORCE)
            names.remove(name)
    else:
        spec, _ = random_spec(rng)
        patch: JSON = {"ports": spec["ports"] or None}
        patch["publishNotReadyAddresses"] = spec.get("publishNotReadyAddresses", False)
        patch["trafficDistribution"] = spec.get("trafficDistribution")
        if patch["ports"] is None and not headless:
            patch["ports"] = random_ports(rng) or [{"port": 80, "protocol": "TCP"}]
        await twins.patch_spec(patch)


async def test_random_scenarios_agree_with_kube_controller_manager(
    kube: Kube, ns: str, operator: OperatorProcess
) -> None:
    seed = _seed()
    print(f"ESO_PARITY_SEED={seed}")  # replays this run
    rng = random.Random(seed)
    for scenario in range(_count("ESO_PARITY_SCENARIOS", 2)):
        spec, labels = random_spec(rng)
        twins = Twins(kube, ns, f"s{scenario}", {"app": "web", "scenario": str(scenario)})
        headless = spec.get("clusterIP") == "None"
        await twins.create(labels=labels, **spec)
        names = [
            await add_pod(kube, ns, rng, scenario * 1000 + index, scenario)
            for index in range(rng.randint(0, _count("ESO_PARITY_MAX_PODS", 60)))
        ]
        await agree(kube, ns, twins, seed, f"scenario {scenario} created: {spec}")
        for round_ in range(3):
            await change(kube, ns, rng, twins, names, headless)
            await agree(kube, ns, twins, seed, f"scenario {scenario} change {round_}")


@pytest.fixture
def packing_plane() -> Iterator[ControlPlane]:
    """A control plane whose kube-controller-manager packs 3 endpoints per slice."""
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: the test starts a control plane with its flags")
    control = ControlPlane(
        assets=assets,
        workdir=Path(tempfile.mkdtemp(prefix="eso-pack-")),
        kcm_args=("--max-endpoints-per-slice=3", "--endpointslice-updates-batch-period=5s"),
    )
    try:
        control.start()
        if not control.kcm_running:
            pytest.skip("parity needs kube-controller-manager")
        yield control
    finally:
        control.stop()


async def _sizes(kube: Kube, service: str, manager: str, expected: list[int]) -> list[JSON]:
    slices = await kube.slices(PACKING, service, manager=manager)
    assert sorted(len(s.get("endpoints") or []) for s in slices) == expected, slices
    return slices


async def _pods(kube: Kube, app: str, indexes: range | tuple[int, ...]) -> None:
    for i in indexes:
        await o.pod(kube, PACKING, f"{app}-{i}", f"10.7.{len(app)}.{i + 1}", labels={"app": app})


async def _one_out_of_each(kube: Kube, slices: list[JSON]) -> None:
    for item in slices:
        pod = item["endpoints"][0]["targetRef"]["name"]
        await kube.delete(f"/api/v1/namespaces/{PACKING}/pods/{pod}", FORCE)


async def test_packing_fills_updated_slices_as_kube_controller_manager(
    packing_plane: ControlPlane, tmp_path: Path
) -> None:
    """Issue 35's first hole, scripted: 6 pods in 2 slices of 3; in one sync, one endpoint
    removed from each slice and 2 pods added: the 2 new endpoints fill the 2 updated slices
    (0 creates, 2 updates), as upstream packs. Each controller on pods of its own, so that
    "one of each slice" holds for both; one sync: kube-controller-manager batches pod changes
    (``--endpointslice-updates-batch-period=5s``), the operator is stopped meanwhile and sees
    them all at its start."""
    twins = (("kcm", KCM, "k"), ("eso", OURS, "e"))
    args = ("--namespace", PACKING, "--max-endpoints-per-slice", "3")
    async with await Kube.load(packing_plane.kubeconfig) as kube:
        await kube.create(
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PACKING}},
        )
        await o.node(kube, "node-a", "zone-a")
        await o.service(kube, PACKING, "kcm", selector={"app": "k"}, opt_in=False)
        await o.service(kube, PACKING, "eso", annotations={o.SELECTOR: "app=e"})
        before: dict[str, list[JSON]] = {}
        async with running(kube.kubeconfig, tmp_path / "operator.log", *args):
            for service, manager, app in twins:
                await _pods(kube, app, range(6))
                before[service] = await eventually(
                    functools.partial(_sizes, kube, service, manager, [3, 3]), timeout=60
                )
        for service, _, app in twins:
            await _one_out_of_each(kube, before[service])
            await _pods(kube, app, (6, 7))
        async with running(kube.kubeconfig, tmp_path / "operator-2.log", *args):
            for service, manager, _ in twins:
                after = await eventually(
                    functools.partial(_sizes, kube, service, manager, [3, 3]), timeout=60
                )
                names = {s["metadata"]["name"] for s in before[service]}
                assert {s["metadata"]["name"] for s in after} == names, (service, after)
