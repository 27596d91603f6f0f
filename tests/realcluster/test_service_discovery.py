"""A real service-discovery consumer reads the slices: VictoriaMetrics' implementation of
Prometheus' ``kubernetes_sd_configs`` ``role: endpointslice`` (an independent one, Debian's
``victoria-metrics``), pointed at the real control plane.

Twin Services on the same pods (one with ``spec.selector``, whose slices kube-controller-manager
writes; one opted in, whose slices the operator writes) must be discovered as the same targets:
the same addresses and ports, the same endpoint conditions, node, zone and pod. Discovery only:
every target's address is relabelled to a closed port on loopback, so nothing is scraped
anywhere else.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.deadline import Deadline, slowdown
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess
from tests.realcluster.parity import Twins

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

#: Discovered labels that name who wrote the slice or which twin it is, not what it holds.
WRITER_LABELS = (
    "__meta_kubernetes_endpointslice_name",
    "__meta_kubernetes_endpointslice_label_",
    "__meta_kubernetes_endpointslice_labelpresent_",
    "__meta_kubernetes_endpointslice_annotation",
    "__meta_kubernetes_service_",
)


SLICE_NAME = "__meta_kubernetes_endpointslice_name"
RELABEL = [
    # What a user's job keeps (the address, the Service, the pod); then, discovery only:
    # every target's address is replaced by a closed port on loopback, never scraped.
    {"source_labels": ["__address__"], "target_label": "instance"},
    {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "svc"},
    {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
    {"target_label": "__address__", "replacement": "127.0.0.1:9"},
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def discovery(cluster: Cluster, ns: str, tmp_path: Path) -> Iterator[int]:
    """VictoriaMetrics discovering the slices of ``ns``; yields its HTTP port."""
    binary = shutil.which("victoria-metrics")
    if binary is None:
        pytest.skip("needs victoria-metrics (Debian package `victoria-metrics`)")
    config = {
        "scrape_configs": [
            {
                "job_name": "slices",
                "scrape_interval": "1h",
                "kubernetes_sd_configs": [
                    {
                        "role": "endpointslice",
                        "kubeconfig_file": str(cluster.kubeconfig),
                        "namespaces": {"names": [ns]},
                    }
                ],
                # A user's job: targets with equal labels are one target (VictoriaMetrics
                # starts one scraper per label set and skips the others), so two slices listing
                # one endpoint make one target here.
                "relabel_configs": RELABEL,
            },
            {
                # The same, one target per slice and endpoint: who lists what, in the handover.
                "job_name": "by-slice",
                "scrape_interval": "1h",
                "kubernetes_sd_configs": [
                    {
                        "role": "endpointslice",
                        "kubeconfig_file": str(cluster.kubeconfig),
                        "namespaces": {"names": [ns]},
                    }
                ],
                "relabel_configs": [
                    *RELABEL[:-1],
                    {"source_labels": [SLICE_NAME], "target_label": "slice"},
                    RELABEL[-1],
                ],
            },
        ]
    }
    (tmp_path / "scrape.json").write_text(json.dumps(config), encoding="utf-8")
    port = _free_port()
    log = (tmp_path / "victoria-metrics.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"-promscrape.config={tmp_path / 'scrape.json'}",
            f"-httpListenAddr=127.0.0.1:{port}",
            f"-storageDataPath={tmp_path / 'data'}",
            "-promscrape.kubernetesSDCheckInterval=1s",
            "-loggerLevel=WARN",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                targets(port)
                break
            except OSError:
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def targets(port: int, job: str = "by-slice") -> list[dict[str, str]]:
    """The discovered labels of every active target of ``job``."""
    url = f"http://127.0.0.1:{port}/api/v1/targets"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body: dict[str, Any] = json.load(answer)
    return [
        target["discoveredLabels"]
        for target in body["data"]["activeTargets"]
        if target["labels"]["job"] == job
    ]


def discovered(port: int, service: str) -> set[tuple[tuple[str, str], ...]]:
    """The targets of ``service``, without the labels that name the writer or the twin."""
    found = set()
    for labels in targets(port):
        if labels.get("__meta_kubernetes_service_name") != service:
            continue
        kept = {k: v for k, v in labels.items() if not k.startswith(WRITER_LABELS)}
        found.add(tuple(sorted(kept.items())))
    return found


async def test_twin_services_are_discovered_alike(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, discovery: int
) -> None:
    if not cluster.has_kcm:
        pytest.skip("the twin's slices are kube-controller-manager's")
    twins = Twins(kube, ns, "web", {"app": "web"})
    await twins.create(
        ports=[
            {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
            {"name": "metrics", "port": 9100, "targetPort": 9100, "protocol": "TCP"},
        ]
    )
    names = set()
    for i in range(5):
        await o.pod(
            kube,
            ns,
            f"web-{i}",
            f"10.1.0.{i + 1}",
            node_name=("node-a", "node-b")[i % 2],
            ready=i != 3,
            container_ports=[{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        )
        names.add(f"web-{i}")
    await twins.agree(names)

    async def alike() -> bool:
        kcm, ours = discovered(discovery, twins.kcm), discovered(discovery, twins.ours)
        assert len(kcm) == 10, kcm  # 5 pods x 2 ports
        assert ours == kcm, ours ^ kcm
        return True

    await eventually(alike, timeout=60)
    ready = {
        dict(target)["__meta_kubernetes_pod_name"]
        for target in discovered(discovery, twins.ours)
        if dict(target)["__meta_kubernetes_endpointslice_endpoint_conditions_ready"] == "true"
    }
    assert ready == names - {"web-3"}


# --- No stale target during and after a migration ---------------------------------------------

SAMPLE = 0.2
"""Seconds between two looks at VictoriaMetrics' targets."""
GONE_WITHIN = 5.0
"""Idle-machine seconds within which a deleted pod's address leaves the targets (its slices'
update, then VictoriaMetrics' next regeneration of targets, ``kubernetesSDCheckInterval`` 1 s),
stretched by the load measured during the run as the realcluster deadlines are."""
MIGRATED_PODS = {f"web-{i}": f"10.1.0.{i + 1}" for i in range(4)}
REMOVED = "web-3"


@dataclass
class Sample:
    """One look at the targets of one Service."""

    at: float
    """When (``time.monotonic()``)."""
    scraped: list[str]
    """The ``instance`` (pod IP and port) of each target of the user's job ("slices")."""
    listed: list[tuple[str, str]]
    """(slice, address) of each target of the "by-slice" job: one per slice listing it."""


def sample(port: int, service: str) -> Sample:
    url = f"http://127.0.0.1:{port}/api/v1/targets"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body: dict[str, Any] = json.load(answer)
    mine = [t["labels"] for t in body["data"]["activeTargets"] if t["labels"]["svc"] == service]
    return Sample(
        time.monotonic(),
        [t["instance"] for t in mine if t["job"] == "slices"],
        [(t["slice"], t["instance"]) for t in mine if t["job"] == "by-slice"],
    )


def stale_targets(
    samples: list[Sample], addresses: set[str], removed: str, removed_at: float, grace: float
) -> list[str]:
    """What is wrong in ``samples`` of one Service whose pods have ``addresses`` (``ip:port``),
    one of which (``removed``) was deleted at ``removed_at``: a target (in either job) whose
    address is no endpoint of the Service (for the deleted pod's, once ``grace`` seconds have
    passed), a ready endpoint without a target (at any sample: the migration keeps one complete
    set of slices at every moment), or one endpoint scraped twice by the user's job."""
    wrong = []
    for s in samples:
        t = f"{s.at - removed_at:+.2f} s"
        current = addresses if s.at < removed_at + grace else addresses - {removed}
        for address in sorted({a for _, a in s.listed} - current):
            wrong.append(f"{t}: {address} listed, no endpoint of the Service")
        for address in sorted(set(s.scraped) - current):
            wrong.append(f"{t}: {address} scraped, no endpoint of the Service")
        required = addresses if s.at < removed_at else addresses - {removed}
        for address in sorted(required - set(s.scraped)):
            wrong.append(f"{t}: the ready endpoint {address} is not scraped")
        doubles = sorted(a for a in set(s.scraped) if s.scraped.count(a) > 1)
        if doubles:
            wrong.append(f"{t}: {doubles} scraped twice")
    return wrong


async def test_no_stale_target_during_and_after_a_migration(
    cluster: Cluster,
    kube: Kube,
    ns: str,
    operator: OperatorProcess,
    discovery: int,
    tmp_path: Path,
) -> None:
    """``endpointslice-operator migrate`` moves "web" from kube-controller-manager to the
    operator while VictoriaMetrics discovers its targets (looked at every 0.2 s); a pod is
    deleted right after the selector moved (kube-controller-manager's slices no longer follow
    the pods then, and still exist until ``migrate`` deletes them). At no sample is a target
    stale, missing or scraped twice (:func:`stale_targets`); in the handover two slices list
    each endpoint (the "by-slice" job sees both writers) and the user's job still has one
    target per endpoint; afterwards the targets are those of the twin "web-kcm", which
    kube-controller-manager keeps publishing."""
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    ports = [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
    for name in ("web", "web-kcm"):
        await o.service(kube, ns, name, selector={"app": "web"}, opt_in=False, ports=ports)
    for name, ip in MIGRATED_PODS.items():
        await o.pod(kube, ns, name, ip)
    addresses = {f"{ip}:8080" for ip in MIGRATED_PODS.values()}
    left = addresses - {f"{MIGRATED_PODS[REMOVED]}:8080"}

    async def discovered_both() -> bool:
        for name in ("web", "web-kcm"):
            assert sorted(sample(discovery, name).scraped) == sorted(addresses), name
        return True

    await eventually(discovered_both, timeout=60)
    migrate = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "migrate",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "-n",
        ns,
        "web",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    removed_at = float("inf")
    lines: list[str] = []

    handover = asyncio.Event()

    async def opted_in() -> None:
        waiting = Deadline(30)
        while not waiting.expired():
            service = await kube.get(f"/api/v1/namespaces/{ns}/services/web")
            if (service["metadata"].get("annotations") or {}).get(o.ENABLED) == "true":
                return
            await asyncio.sleep(0.01)

    async def follow() -> None:
        nonlocal removed_at
        assert migrate.stdout is not None
        async for raw in migrate.stdout:
            lines.append(raw.decode())
            if lines[-1].startswith("annotated service"):
                # Once the Service is opted in, `migrate` waits for our slices (polling every
                # 0.5 s). Held there until the consumer has seen both writers' slices: on an
                # idle machine the overlap can be shorter than VictoriaMetrics' 1 s
                # regeneration of targets (a slow `migrate` is the case to show).
                await opted_in()
                migrate.send_signal(signal.SIGSTOP)
                try:
                    held = Deadline(60)
                    while not handover.is_set() and not held.expired():
                        await asyncio.sleep(0.1)
                finally:
                    migrate.send_signal(signal.SIGCONT)
            if lines[-1].startswith("moved spec.selector") and removed_at == float("inf"):
                await kube.delete(
                    f"/api/v1/namespaces/{ns}/pods/{REMOVED}", {"gracePeriodSeconds": 0}
                )
                removed_at = time.monotonic()

    following = asyncio.create_task(follow())
    samples: list[Sample] = []
    slowest = 1.0
    settled_since = 0.0
    deadline: Deadline | None = None
    while not settled_since or time.monotonic() - settled_since < 3:
        samples.append(await asyncio.to_thread(sample, discovery, "web"))
        slowest = max(slowest, slowdown())
        if len({name for name, _ in samples[-1].listed}) > 1:
            handover.set()
        if following.done():
            # `migrate` is done: sample on until the targets are the twin's for 3 s.
            deadline = deadline or Deadline(20)
            twin = await asyncio.to_thread(sample, discovery, "web-kcm")
            if set(samples[-1].scraped) == set(twin.scraped) == left:
                settled_since = settled_since or time.monotonic()
            else:
                settled_since = 0.0
            if deadline.expired():
                break
        await asyncio.sleep(SAMPLE)
    await following
    (tmp_path / "samples.json").write_text(
        json.dumps([vars(s) for s in samples] + [removed_at]), encoding="utf-8"
    )
    assert await migrate.wait() == 0, lines
    assert lines[-1].startswith("only EndpointSlices of"), lines
    wrong = stale_targets(
        samples, addresses, f"{MIGRATED_PODS[REMOVED]}:8080", removed_at, GONE_WITHIN * slowest
    )
    assert not wrong, wrong
    # The handover was seen: two slices listed every endpoint at once, and the user's job
    # still had one target per endpoint (checked in every sample above).
    both = [s for s in samples if len({n for n, _ in s.listed}) > 1 and s.at < removed_at]
    assert both and all(len(s.listed) == 2 * len(addresses) for s in both), samples
    assert discovered(discovery, "web") == discovered(discovery, "web-kcm")
