"""Loading manifests and cluster snapshots into the emulator (``emulator --load``)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from endpointslice_operator.commands.emulator import build_parser, serve
from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.seed import load_manifests

SNAPSHOT = """\
apiVersion: v1
kind: List
items:
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata:
    name: web-abc
    namespace: shop
    uid: 11111111-1111-4111-8111-111111111111
    resourceVersion: "812"
    labels: {kubernetes.io/service-name: web}
    ownerReferences:
    - apiVersion: v1
      kind: Service
      name: web
      uid: 22222222-2222-4222-8222-222222222222
      controller: true
  addressType: IPv4
  endpoints: [{addresses: [10.1.0.5], conditions: {ready: true}}]
  ports: [{name: http, port: 8080, protocol: TCP}]
- apiVersion: v1
  kind: Service
  metadata:
    name: web
    namespace: shop
    uid: 22222222-2222-4222-8222-222222222222
    resourceVersion: "700"
    creationTimestamp: "2024-01-01T00:00:00Z"
  spec:
    clusterIP: 10.96.7.7
    clusterIPs: [10.96.7.7]
    selector: {app: web}
    ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: app, image: nginx}]}
status: {phase: Running, podIP: 10.1.0.5, conditions: [{type: Ready, status: "True"}]}
"""


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(SNAPSHOT)
    return path


async def test_a_snapshot_comes_back_with_statuses_and_owners(
    emu: Emulator, snapshot: Path
) -> None:
    created = load_manifests(emu.store, snapshot)
    assert [o["kind"] for o in created] == ["Service", "Pod", "EndpointSlice"]
    service = emu.store.get("services", "shop", "web")
    assert service is not None and service["spec"]["clusterIP"] == "10.96.7.7"
    assert service["metadata"]["uid"] != "22222222-2222-4222-8222-222222222222"
    pod = emu.store.get("pods", "shop", "web-1")
    assert pod is not None and pod["status"]["podIP"] == "10.1.0.5"
    await emu.wait_idle()
    endpoint_slice = emu.store.get("endpointslices", "shop", "web-abc")
    assert endpoint_slice is not None, "collected as an orphan"
    assert endpoint_slice["metadata"]["ownerReferences"][0]["uid"] == service["metadata"]["uid"]


async def test_cli_load_flag(tmp_path: Path, snapshot: Path) -> None:
    args = build_parser().parse_args(
        ["--kubeconfig", str(tmp_path / "kc"), "--load", str(snapshot), "--port", "0"]
    )
    stop = asyncio.Event()
    stop.set()  # serve, then stop at once
    assert await serve(args, stop) == 0
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {}\n")
    bad_args = argparse.Namespace(**{**vars(args), "load": [broken]})
    assert await serve(bad_args, asyncio.Event()) == 1
