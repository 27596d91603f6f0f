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

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.operator_process import OperatorProcess
from tests.realcluster.parity import Twins

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(300)]

#: Discovered labels that name who wrote the slice or which twin it is, not what it holds.
WRITER_LABELS = (
    "__meta_kubernetes_endpointslice_name",
    "__meta_kubernetes_endpointslice_label_",
    "__meta_kubernetes_endpointslice_labelpresent_",
    "__meta_kubernetes_endpointslice_annotation",
    "__meta_kubernetes_service_",
)


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
                # Discovery only: never scrape a pod address. Each target keeps its own
                # `instance` (targets with equal labels would be merged into one).
                "relabel_configs": [
                    {"source_labels": ["__address__"], "target_label": "instance"},
                    {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "svc"},
                    {"target_label": "__address__", "replacement": "127.0.0.1:9"},
                ],
            }
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


def targets(port: int) -> list[dict[str, str]]:
    """The discovered labels of every active target."""
    url = f"http://127.0.0.1:{port}/api/v1/targets"
    with urllib.request.urlopen(url, timeout=10) as answer:
        body: dict[str, Any] = json.load(answer)
    return [target["discoveredLabels"] for target in body["data"]["activeTargets"]]


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
