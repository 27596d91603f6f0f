"""kubectl 1.32 as an independent client of the emulator (skipped when kubectl is absent)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.testing import Emulator, run_emulator

KUBECTL = shutil.which("kubectl")
pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH"),
]

SERVICE_YAML = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: 8080
"""


async def kubectl(emu: Emulator, *args: str, stdin: str | None = None) -> str:
    """Run kubectl against the emulator without blocking the loop that serves it."""
    assert KUBECTL is not None
    process = await asyncio.create_subprocess_exec(
        KUBECTL, f"--kubeconfig={emu.kubeconfig_path}", *args,
        stdin=asyncio.subprocess.PIPE if stdin is not None else None,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(30):
        out, err = await process.communicate(stdin.encode() if stdin is not None else None)
    assert process.returncode == 0, (args, err.decode())
    return out.decode()


async def get_json(emu: Emulator, *args: str) -> Any:
    return json.loads(await kubectl(emu, "get", *args, "-o", "json"))


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "service.yaml"
    path.write_text(SERVICE_YAML)
    return path


async def test_create_and_get_json(emu: Emulator, manifest: Path) -> None:
    out = await kubectl(emu, "create", "-f", str(manifest), "--validate=false")
    assert out.strip() == "service/web created"
    body = await get_json(emu, "service", "web")
    assert body["spec"]["clusterIP"]
    assert body["spec"]["ports"][0]["targetPort"] == 8080
    assert emu.requests.count(verb="create", resource="services") == 1


async def test_label_annotate_and_three_patch_types(emu: Emulator, manifest: Path) -> None:
    await kubectl(emu, "create", "-f", str(manifest), "--validate=false")
    await kubectl(emu, "label", "service", "web", "tier=front")
    await kubectl(emu, "annotate", "service", "web", "note=hello")
    await kubectl(
        emu, "patch", "service", "web", "--type=merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    await kubectl(
        emu, "patch", "service", "web", "--type=json",
        "-p", '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )  # fmt: skip
    # Strategic: ports merge by port number, so this adds a port instead of replacing the list.
    await kubectl(
        emu, "patch", "service", "web", "-p", '{"spec":{"ports":[{"name":"extra","port":81}]}}'
    )
    await kubectl(
        emu, "patch", "service", "web", "--subresource=status", "--type=merge",
        "-p", '{"status":{"loadBalancer":{"ingress":[{"ip":"192.0.2.1"}]}}}',
    )  # fmt: skip
    body = await get_json(emu, "service", "web")
    assert body["metadata"]["labels"] == {"app": "web", "tier": "front", "m": "1", "j": "2"}
    assert body["metadata"]["annotations"] == {"note": "hello"}
    assert [p["port"] for p in body["spec"]["ports"]] == [80, 81]
    assert body["status"]["loadBalancer"]["ingress"] == [{"ip": "192.0.2.1"}]
    assert emu.requests.count(verb="patch", resource="services", subresource="status") == 1


async def test_client_side_apply(emu: Emulator, manifest: Path) -> None:
    out = await kubectl(emu, "apply", "-f", str(manifest), "--validate=false")
    assert out.strip() == "service/web created"
    manifest.write_text(SERVICE_YAML.replace("8080", "9090"))
    out = await kubectl(emu, "apply", "-f", str(manifest), "--validate=false")
    assert out.strip() == "service/web configured"
    out = await kubectl(emu, "apply", "-f", str(manifest), "--validate=false")
    assert out.strip() == "service/web unchanged"
    body = await get_json(emu, "service", "web")
    assert body["spec"]["ports"][0]["targetPort"] == 9090
    assert "kubectl.kubernetes.io/last-applied-configuration" in body["metadata"]["annotations"]


async def test_delete(emu: Emulator, manifest: Path) -> None:
    await kubectl(emu, "create", "-f", str(manifest), "--validate=false")
    out = await kubectl(emu, "delete", "service", "web")
    assert out.strip() == 'service "web" deleted'
    assert emu.store.get("services", "default", "web") is None


async def test_get_watch_streams_changes(emu: Emulator, manifest: Path) -> None:
    await kubectl(emu, "create", "-f", str(manifest), "--validate=false")
    assert KUBECTL is not None
    process = await asyncio.create_subprocess_exec(
        KUBECTL, f"--kubeconfig={emu.kubeconfig_path}", "get", "services", "-w",
        "-o", "jsonpath={.metadata.name} {.metadata.labels.step}{\"\\n\"}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        async with asyncio.timeout(30):
            first = await process.stdout.readline()
            assert first.decode().split() == ["web"]
            emu.store.patch("services", "default", "web", {"metadata": {"labels": {"step": "two"}}})
            second = await process.stdout.readline()
            assert second.decode().split() == ["web", "two"]
    finally:
        process.kill()
        await process.wait()
    assert emu.requests.count(verb="watch", resource="services") == 1


async def test_api_resources(emu: Emulator) -> None:
    out = await kubectl(emu, "api-resources", "--no-headers")
    rows = {tuple(line.split()[:1] + line.split()[-3:]) for line in out.splitlines()}
    assert ("endpointslices", "discovery.k8s.io/v1", "true", "EndpointSlice") in rows
    assert ("leases", "coordination.k8s.io/v1", "true", "Lease") in rows
    assert ("nodes", "v1", "false", "Node") in rows


async def test_get_endpointslices_by_label(emu: Emulator) -> None:
    emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": "web-a", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}],
            "ports": [{"port": 80}],
        }
    )
    body = await get_json(emu, "endpointslices", "-l", "kubernetes.io/service-name=web")
    assert [item["metadata"]["name"] for item in body["items"]] == ["web-a"]
    body = await get_json(emu, "endpointslices", "-l", "kubernetes.io/service-name!=web")
    assert body["items"] == []


async def test_create_and_delete_a_namespace(emu: Emulator, manifest: Path) -> None:
    # kubectl's generators send protobuf; Namespaces are decoded, and deletion waits for the
    # namespace to be emptied and finalized.
    assert (await kubectl(emu, "create", "namespace", "team")).strip() == "namespace/team created"
    await kubectl(emu, "-n", "team", "create", "-f", str(manifest), "--validate=false")
    out = await kubectl(emu, "delete", "namespace", "team", "--wait=true", "--timeout=20s")
    assert out.strip() == 'namespace "team" deleted'
    assert emu.store.get("namespaces", None, "team") is None
    assert emu.store.get("services", "team", "web") is None


async def test_the_example_app_with_apply_scale_and_rollout_restart() -> None:
    """deploy/examples/web.yaml as a user applies it: validation on, simulated nodes."""
    example = Path(__file__).parents[2] / "deploy" / "examples" / "web.yaml"
    async with run_emulator(nodes=3, pod_start_delay=0.05) as emu:
        out = await kubectl(emu, "apply", "-f", str(example))
        assert out.splitlines() == ["deployment.apps/web created", "service/web created"]
        out = await kubectl(emu, "rollout", "status", "deployment/web", "--timeout=30s")
        assert 'deployment "web" successfully rolled out' in out
        out = await kubectl(emu, "apply", "-f", str(example))
        assert out.splitlines() == ["deployment.apps/web unchanged", "service/web unchanged"]
        table = await kubectl(emu, "get", "deployment", "web")
        assert table.splitlines()[1].split()[:4] == ["web", "3/3", "3", "3"]

        assert (await kubectl(emu, "scale", "deployment/web", "--replicas=5")).strip() == (
            "deployment.apps/web scaled"
        )
        await kubectl(emu, "rollout", "status", "deployment/web", "--timeout=30s")
        assert len(await get_pod_ips(emu)) == 5

        out = await kubectl(emu, "rollout", "restart", "deployment/web")
        assert out.strip() == "deployment.apps/web restarted"
        await kubectl(emu, "rollout", "status", "deployment/web", "--timeout=30s")
        replica_sets = await get_json(emu, "replicasets")
        assert sorted(rs["spec"]["replicas"] for rs in replica_sets["items"]) == [0, 5]


async def get_pod_ips(emu: Emulator) -> set[str]:
    body = await get_json(emu, "pods", "-l", "app=web")
    return {
        p["status"]["podIP"] for p in body["items"] if not p["metadata"].get("deletionTimestamp")
    }
