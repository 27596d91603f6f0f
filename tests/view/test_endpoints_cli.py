"""``endpointslice-operator endpoints`` as a subprocess against the emulator."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from endpointslice_operator.testing import Emulator, run_emulator
from tests.view.objects import NS, endpoint, endpoint_slice
from tests.view.test_watch import populate


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENDPOINTSLICE_OPERATOR_")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    env["KUBECONFIG"] = "/nonexistent"
    return env


async def run_cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "endpointslice_operator",
        "endpoints",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_table_by_default() -> None:
    async with run_emulator() as emu:
        populate(emu)
        code, out, err = await run_cli("--kubeconfig", str(emu.kubeconfig_path))
        assert (code, err) == (0, "")
        rows = [line.split() for line in out.splitlines()]
        assert rows[0] == [
            "NAMESPACE",
            "SERVICE",
            "PORT",
            "ADDRESS",
            "READY",
            "SERVING",
            "TERM",
            "NODE",
        ]
        assert rows[1:] == [
            [NS, "web", "grpc:90/TCP", "10.0.0.2:9090", "true", "true", "false", "node-a"],
            [NS, "web", "grpc:90/TCP", "10.0.0.3:9090", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.1:8080", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.2:8080", "true", "true", "false", "node-a"],
            [NS, "web", "http:80/TCP", "10.0.0.3:8080", "true", "true", "false", "node-a"],
        ]
        code, out, _ = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "-n", NS, "--service", "hidden", "--gather"
        )
        assert code == 0
        assert [line.split() for line in out.splitlines()] == [
            ["NAMESPACE", "SERVICE", "PORT", "ENDPOINTS"],
            [NS, "hidden", "http:80/TCP", "10.0.9.1:8080"],
        ]
        code, out, _ = await run_cli(
            "--kubeconfig", str(emu.kubeconfig_path), "--selector", "app=none"
        )
        assert (code, out) == (0, "No endpoints.\n")


async def _line(stream: asyncio.StreamReader) -> dict[str, object]:
    line = await asyncio.wait_for(stream.readline(), timeout=30)
    assert line.endswith(b"\n"), line
    parsed: dict[str, object] = json.loads(line)
    return parsed


async def test_watch_json_is_one_flushed_line_per_change() -> None:
    async with run_emulator() as emu:
        populate(emu)
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "endpointslice_operator",
            "endpoints",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--service",
            f"{NS}/hidden",
            "--watch",
            "-o",
            "json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=_env(),
        )
        assert process.stdout is not None
        try:
            first = await _line(process.stdout)
            assert first == {
                "type": "added",
                "key": {
                    "namespace": NS,
                    "service": "hidden",
                    "port_name": "http",
                    "port": 80,
                    "protocol": "TCP",
                    "address": "10.0.9.1",
                },
                "endpoint": {
                    "address": "10.0.9.1",
                    "target_port": 8080,
                    "ready": True,
                    "serving": True,
                    "terminating": False,
                    "node": "node-a",
                    "zone": None,
                    "hints": [],
                    "pod": None,
                    "slice": "hidden-1",
                },
            }
            assert await _line(process.stdout) == {"type": "synced"}
            # Each change arrives while the command keeps running (the pipe stays open).
            emu.store.create(endpoint_slice("hidden-2", "hidden", [endpoint("10.0.9.2")]))
            added = await _line(process.stdout)
            assert added["type"] == "added"
            assert added["key"]["address"] == "10.0.9.2"  # type: ignore[index]
            emu.store.delete("endpointslices", NS, "hidden-1")
            removed = await _line(process.stdout)
            assert removed["type"] == "removed"
            assert removed["key"]["address"] == "10.0.9.1"  # type: ignore[index]
        finally:
            process.terminate()
            await process.wait()


async def test_errors_are_one_line(tmp_path: Path) -> None:
    code, out, err = await run_cli("--selector", "a in (")
    assert code == 2 and out == ""
    assert err.startswith("endpointslice-operator endpoints: ") and err.count("\n") == 1
    code, out, err = await run_cli()
    assert code == 1 and err.startswith("endpointslice-operator endpoints: no cluster configured")
    kubeconfig = tmp_path / "kubeconfig"
    emu: Emulator
    async with run_emulator() as emu:
        kubeconfig.write_text(Path(emu.kubeconfig_path).read_text())
    code, out, err = await run_cli("--kubeconfig", str(kubeconfig))
    assert code == 1 and out == ""
    assert err.startswith("endpointslice-operator endpoints: cannot list ") and err.count("\n") == 1


async def test_watch_table_prints_the_view_then_a_line_per_change() -> None:
    async with run_emulator() as emu:
        populate(emu)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "endpointslice_operator", "endpoints",
            "--kubeconfig", str(emu.kubeconfig_path), "--service", "hidden", "--watch",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_env(),
        )  # fmt: skip
        assert process.stdout is not None

        async def line() -> list[str]:
            raw = await asyncio.wait_for(process.stdout.readline(), timeout=30)  # type: ignore[union-attr]
            return raw.decode().split()

        try:
            assert await line() == ["TYPE", "NAMESPACE", "SERVICE", "PORT", "ADDRESS", "READY",
                                    "SERVING", "TERM", "NODE"]  # fmt: skip
            assert (await line())[:5] == ["ADDED", NS, "hidden", "http:80/TCP", "10.0.9.1:8080"]
            emu.store.patch(
                "endpointslices", NS, "hidden-1", {"endpoints": [endpoint("10.0.9.1", node="n2")]}
            )
            updated = await line()
            assert updated[0] == "UPDATED" and updated[-1] == "n2"
        finally:
            process.terminate()
            await process.wait()
