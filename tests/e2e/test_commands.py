"""The ``run`` and ``demo`` commands, as a user starts them."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.commands import demo
from endpointslice_operator.commands import run as run_command
from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import (
    NS,
    addresses,
    cluster,
    eventually,
    foreign_slice,
    pod,
    service,
    service_body,
)


def test_demo_runs_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([]) == 0
    out, err = capsys.readouterr()
    # The emulator serves the EndpointSelector CRD, as a cluster installed by the README
    # (deploy/crds/ applied first): the operator has nothing to warn about.
    assert "WARNING" not in err and "not served" not in err, err
    steps = out.split("=== ")
    assert "5 ready pods" in steps[1] and "1 create (POST)" in steps[1]
    assert "no longer ready" in steps[2]
    assert "0 create (POST), 1 update (PUT), 0 delete" in steps[2]
    assert "120 pods" in steps[3]
    assert "zone-a" in out and "zone-b" in out and "zone-c" in out
    # the core/v1 Endpoints follow each step; then a mirrored Endpoints object
    assert "Endpoints demo/web (core/v1): 5 ready, 0 not ready" in steps[1]
    assert "Endpoints demo/web (core/v1): 4 ready, 1 not ready" in steps[2]
    assert "Endpoints demo/web (core/v1): 119 ready, 1 not ready" in steps[3]
    assert "source: endpoints" in steps[4]
    assert "192.0.2.12" in steps[4] and "1 create (POST)" in steps[4]
    # The mirrored endpoints set only `ready`: the slice's summary says `-` for serving and
    # terminating as each endpoint row does, not 0.
    (summary,) = [line.split() for line in steps[4].splitlines() if " IPv4 " in line]
    assert summary[-4:] == ["3", "2", "-", "-"], summary
    assert "(-: not set; kube-proxy reads an unset ready or serving as yes" in steps[4]


def test_the_slice_summary_counts_as_the_endpoint_rows_show() -> None:
    def endpoint(ip: str, **conditions: bool) -> dict[str, object]:
        return {"addresses": [ip], "conditions": conditions}

    table = demo.render_slices(
        [
            {
                "metadata": {"name": "web-1"},
                "addressType": "IPv4",
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                "endpoints": [
                    endpoint("10.0.0.1", ready=True, serving=True, terminating=False),
                    endpoint("10.0.0.2", ready=False),
                    endpoint("10.0.0.3", ready=True, serving=True),
                ],
            }
        ]
    )
    header, summary = table.splitlines()[:2]
    assert header.split()[-3:] == ["READY", "SERVING", "TERMINATING"]
    cells = summary.split("  ")
    assert [c.strip() for c in cells if c.strip()][-3:] == ["2", "2 (1 -)", "0 (2 -)"], summary
    assert table.count("(-: not set;") == 1


def test_demo_takes_the_operators_flags(capsys: pytest.CaptureFixture[str]) -> None:
    # `make run ARGS='--log-level debug'` runs the demo when no cluster is configured
    assert demo.main(["--log-level", "debug", "--max-endpoints-per-slice", "50"]) == 0
    captured = capsys.readouterr()
    assert "DEBUG" in captured.err
    scaled = captured.out.split("=== ")[3]
    assert sum(1 for line in scaled.splitlines() if line.startswith("web-") and "IPv4" in line) == 3
    assert demo.main(["--workers", "0", "--qps", "-1"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 2


def test_run_refuses_invalid_settings_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command.main(["--max-endpoints-per-slice", "5000"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "max-endpoints-per-slice" in err or "max_endpoints_per_slice" in err


async def test_run_command_serves_and_stops_on_sigterm() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        service(emu, "web", selector={"app": "web"})
        pod(emu, "web-0", "10.1.0.1")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "endpointslice_operator",
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--no-leader-election",
            "--metrics-port",
            "0",
            "--log-format",
            "json",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            await eventually(lambda: addresses(emu, "web") == {"10.1.0.1"}, timeout=60)
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 0, stderr.decode()[-2000:]


async def test_run_without_any_cluster_configuration_fails_cleanly(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "missing")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "run",
        "--no-leader-election",
        "--metrics-port",
        "0",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 1
    # one line, naming every place looked at and what to do instead
    assert stderr.decode().splitlines() == [
        "endpointslice-operator run: no cluster configured: no --kubeconfig, not running in a "
        f"Pod ($KUBERNETES_SERVICE_HOST unset) and no kubeconfig at {tmp_path / 'missing'}; "
        "try 'endpointslice-operator demo' to see it work without a cluster"
    ]


async def _cli(*argv: str) -> tuple[int, list[str], list[str]]:
    """Run ``endpointslice-operator ARGV...``: its exit code, stdout and stderr lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode().splitlines(), err.decode().splitlines()


async def test_a_taken_port_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with run_emulator() as emu:
            code, _, err = await _cli(
                "run",
                "--kubeconfig",
                str(emu.kubeconfig_path),
                "--no-leader-election",
                "--metrics-host",
                "127.0.0.1",
                "--metrics-port",
                str(port),
            )
        assert code == 2
        (line,) = [line for line in err if "cannot listen" in line]
        assert f"cannot listen on 127.0.0.1:{port} (--metrics-host / --metrics-port)" in line
        assert not any("Traceback" in line for line in err)

        code, _, err = await _cli(
            "emulator", "--port", str(port), "--kubeconfig", str(tmp_path / "k")
        )
        assert code == 2
        assert err == [
            f"endpointslice-operator emulator: cannot listen on 127.0.0.1:{port} (--port): "
            "address already in use"
        ]


async def test_cleanup_deletes_only_our_slices(tmp_path: Path) -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("other")
        ours = [
            foreign_slice(emu, "web-a", "web", "endpointslice-operator.io"),
            foreign_slice(emu, "web-b", "web", "endpointslice-operator.io", namespace="other"),
        ]
        theirs = [
            foreign_slice(emu, "web-kcm", "web", "endpointslice-controller.k8s.io"),
            foreign_slice(emu, "web-custom", "web", "custom.example.com"),
        ]
        kubeconfig = str(emu.kubeconfig_path)
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig, "--dry-run")
        assert code == 0
        assert out[-1] == "would delete 2 EndpointSlice(s) managed by endpointslice-operator.io"
        assert len(emu.store.list("endpointslices")) == 4

        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig, "--namespace", "other")
        assert (code, out) == (
            0,
            [
                "deleted endpointslice other/web-b",
                "deleted 1 EndpointSlice(s) managed by endpointslice-operator.io",
            ],
        )
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig)
        assert out == [
            f"deleted endpointslice {NS}/web-a",
            "deleted 1 EndpointSlice(s) managed by endpointslice-operator.io",
        ]
        code, out, _ = await _cli(
            "cleanup", "--kubeconfig", kubeconfig, "--managed-by", "custom.example.com"
        )
        assert out[-1] == "deleted 1 EndpointSlice(s) managed by custom.example.com"
        remaining = {s["metadata"]["name"] for s in emu.store.list("endpointslices")}
        assert remaining == {"web-kcm"}
        assert ours and theirs
        assert emu.requests.count(verb="delete", resource="endpointslices") == 3


async def test_cleanup_keeps_the_multicluster_import_side_unless_asked() -> None:
    """Imported slices (label multicluster.kubernetes.io/source-cluster) and derived Services
    are kept by default; ``--multicluster`` deletes them (ServiceImports are not served by the
    emulator: none to delete, no failure)."""
    async with run_emulator() as emu:
        cluster(emu)
        foreign_slice(emu, "web-a", "web", "endpointslice-operator.io")
        imported = foreign_slice(emu, "imp-1", "derived-x", "endpointslice-operator.io")
        imported["metadata"]["labels"]["multicluster.kubernetes.io/service-name"] = "web"
        imported["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"] = "east"
        emu.store.update(imported)
        owner = {"apiVersion": "multicluster.x-k8s.io/v1beta1", "kind": "ServiceImport"}
        ours = {"endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io"}
        derived = service_body("derived-x", selector=None, labels=ours, opt_in=False)
        # The emulator serves no ServiceImports: the owner's uid is one its garbage collector
        # finds (the namespace's), so that it leaves the derived Service alone.
        namespace = emu.store.get("namespaces", None, NS)
        assert namespace is not None
        uid = namespace["metadata"]["uid"]
        derived["metadata"]["ownerReferences"] = [
            {**owner, "name": "web", "uid": uid, "controller": True}
        ]
        emu.store.create(derived)
        service(emu, "mine", labels=ours, opt_in=False)
        kubeconfig = str(emu.kubeconfig_path)
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig)
        assert (code, out) == (
            0,
            [
                f"deleted endpointslice {NS}/web-a",
                "kept 1 imported EndpointSlice(s) (Multi-Cluster Services; --multicluster "
                "deletes them with their ServiceImports and derived Services)",
                "deleted 1 EndpointSlice(s) managed by endpointslice-operator.io",
            ],
        )
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig, "--multicluster")
        assert (code, out) == (
            0,
            [
                f"deleted endpointslice {NS}/imp-1",
                f"deleted service {NS}/derived-x",
                "deleted 2 object(s) of the Multi-Cluster Services import side managed by "
                "endpointslice-operator.io",
                "deleted 0 EndpointSlice(s) managed by endpointslice-operator.io",
            ],
        )
        assert emu.store.list("endpointslices") == []
        assert {s["metadata"]["name"] for s in emu.store.list("services")} >= {"mine"}
        assert "derived-x" not in {s["metadata"]["name"] for s in emu.store.list("services")}


async def test_cleanup_deletes_our_endpoints_objects_too() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        for name, labels in (
            ("web", {"endpointslice.kubernetes.io/managed-by": "endpointslice-operator.io"}),
            ("db", {"hand": "made"}),
        ):
            emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": NS, "labels": labels},
                    "subsets": [],
                }
            )
        kubeconfig = str(emu.kubeconfig_path)
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig, "--dry-run")
        assert (code, out) == (
            0,
            [
                f"would delete endpoints {NS}/web",
                "would delete 1 Endpoints object(s) managed by endpointslice-operator.io",
                "would delete 0 EndpointSlice(s) managed by endpointslice-operator.io",
            ],
        )
        code, out, _ = await _cli("cleanup", "--kubeconfig", kubeconfig)
        assert out[0] == f"deleted endpoints {NS}/web"
        assert {e["metadata"]["name"] for e in emu.store.list("endpoints", NS)} == {"db"}


def _lease(emu: Any, holder: str, renewed: datetime, namespace: str = "ops") -> None:
    emu.store.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "endpointslice-operator", "namespace": namespace},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 15,
                "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            },
        }
    )


async def test_cleanup_warns_while_the_operators_lease_is_held() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("ops")
        foreign_slice(emu, "web-a", "web", "endpointslice-operator.io")
        _lease(emu, "replica-1", datetime.now(UTC))
        kubeconfig = str(emu.kubeconfig_path)
        code, out, err = await _cli("cleanup", "--kubeconfig", kubeconfig, "--dry-run")
        assert code == 0
        assert len(err) == 1, err
        assert "warning: the operator is still running" in err[0]
        assert "ops/endpointslice-operator held by replica-1" in err[0]
        assert "will write the slices again" in err[0]
        assert out[-1] == "would delete 1 EndpointSlice(s) managed by endpointslice-operator.io"
        # named explicitly, in another namespace: nothing held there
        code, out, err = await _cli(
            "cleanup", "--kubeconfig", kubeconfig, "--dry-run", "--lease-namespace", NS
        )
        assert (code, err) == (0, [])


async def test_cleanup_is_quiet_about_a_lease_nobody_renews() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("ops")
        _lease(emu, "replica-1", datetime.now(UTC) - timedelta(minutes=5))
        code, _, err = await _cli("cleanup", "--kubeconfig", str(emu.kubeconfig_path))
        assert (code, err) == (0, [])


async def test_cleanup_deletes_the_operators_lease_once_no_live_holder_has_it() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        for namespace in ("ops", "team"):
            emu.store.create_namespace(namespace)
        _lease(emu, "", datetime.now(UTC), namespace="ops")  # released on shutdown
        _lease(emu, "replica-1", datetime.now(UTC) - timedelta(minutes=5), namespace="team")
        kubeconfig = str(emu.kubeconfig_path)
        code, out, err = await _cli("cleanup", "--kubeconfig", kubeconfig, "--dry-run")
        assert (code, err) == (0, [])
        assert out[:2] == [
            "would delete the leader-election Lease ops/endpointslice-operator (no live holder)",
            "would delete the leader-election Lease team/endpointslice-operator (no live holder)",
        ]
        assert len(emu.store.list("leases")) == 2
        code, out, err = await _cli(
            "cleanup", "--kubeconfig", kubeconfig, "--lease-namespace", "ops"
        )
        assert (code, err) == (0, [])
        assert (
            out[0]
            == "deleted the leader-election Lease ops/endpointslice-operator (no live holder)"
        )
        assert [lease["metadata"]["namespace"] for lease in emu.store.list("leases")] == ["team"]


async def test_cleanup_keeps_a_lease_that_is_held() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("ops")
        _lease(emu, "replica-1", datetime.now(UTC))
        code, out, err = await _cli("cleanup", "--kubeconfig", str(emu.kubeconfig_path))
        assert code == 0 and "still running" in err[0]
        assert not any("Lease" in line for line in out)
        assert len(emu.store.list("leases")) == 1


async def test_cleanup_waits_for_the_operator_to_release_its_lease_then_deletes_it() -> None:
    async with run_emulator() as emu:
        cluster(emu)
        emu.store.create_namespace("ops")
        foreign_slice(emu, "web-a", "web", "endpointslice-operator.io")
        _lease(emu, "replica-1", datetime.now(UTC))

        async def stop_the_operator() -> None:  # as the chart's hook sees it: pods terminating
            await asyncio.sleep(2)
            lease = emu.store.get("leases", "ops", "endpointslice-operator")
            assert lease is not None
            emu.store.update({**lease, "spec": {**lease["spec"], "holderIdentity": ""}})

        stopping = asyncio.create_task(stop_the_operator())
        code, out, err = await _cli(
            "cleanup", "--kubeconfig", str(emu.kubeconfig_path), "--wait-for-operator", "30"
        )
        await stopping
        assert (code, err) == (0, [])
        assert (
            "deleted the leader-election Lease ops/endpointslice-operator (no live holder)" in out
        )
        assert out[-1] == "deleted 1 EndpointSlice(s) managed by endpointslice-operator.io"
        assert emu.store.list("leases") == []
