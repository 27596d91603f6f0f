"""docs/examples/upstream_file.py, run as documented against the emulator: the upstream file
follows the Service's endpoints."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import eventually
from tests.view.objects import NS, endpoint, endpoint_slice, service

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "upstream_file.py"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENDPOINTSLICE_OPERATOR_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


async def test_the_upstream_file_follows_the_service(tmp_path: Path) -> None:
    output = tmp_path / "web-upstream.conf"
    marker = tmp_path / "reloads"
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.create(service("web", [("http", 80), ("metrics", 9090)], annotated=False))
        emu.store.create(
            endpoint_slice(
                "web-1",
                "web",
                [endpoint("10.1.0.2"), endpoint("10.1.0.10"), endpoint("10.1.0.3", ready=False)],
                ports=[("http", 8080), ("metrics", 9100)],
            )
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--namespace",
            NS,
            "--service",
            "web",
            "--port",
            "http",
            "--output",
            str(output),
            "--on-change",
            f"sh -c 'echo reload >> {marker}'",
            stdout=asyncio.subprocess.PIPE,
            env=_env(),
        )
        try:
            await eventually(output.exists, timeout=30)
            assert output.read_text() == (
                f"# web.{NS}, service port http: 2 endpoints\n"
                "upstream web {\n"
                "    server 10.1.0.2:8080;\n"
                "    server 10.1.0.10:8080;\n"
                "}\n"
            )
            # Another manager's slice adds one; the not-ready one turns ready.
            emu.store.create(
                endpoint_slice(
                    "web-2", "web", [endpoint("10.1.0.1")], managed_by="endpointslice-operator.io"
                )
            )
            emu.store.patch(
                "endpointslices",
                NS,
                "web-1",
                {
                    "endpoints": [
                        endpoint("10.1.0.2"),
                        endpoint("10.1.0.10"),
                        endpoint("10.1.0.3"),
                    ]
                },
            )
            await eventually(lambda: "4 endpoints" in output.read_text(), timeout=30)
            assert "    server 10.1.0.1:8080;\n    server 10.1.0.2:8080;\n    server 10.1.0.3" in (
                output.read_text()
            )
            # Every slice gone: the placeholder keeps the block valid for nginx.
            emu.store.delete("endpointslices", NS, "web-1")
            emu.store.delete("endpointslices", NS, "web-2")
            await eventually(lambda: "0 endpoints" in output.read_text(), timeout=30)
            assert "    server 127.0.0.1:1 down;" in output.read_text()
            await eventually(lambda: marker.exists() and len(marker.read_text().split()) >= 3)
        finally:
            process.terminate()
            await process.wait()


async def test_once_writes_and_exits(tmp_path: Path) -> None:
    output = tmp_path / "upstream.conf"
    async with run_emulator() as emu:
        emu.store.create_namespace(NS)
        emu.store.create(service("api", annotated=False))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--namespace",
            NS,
            "--service",
            "api",
            "--port",
            "80",
            "--upstream",
            "backend",
            "--output",
            str(output),
            "--once",
            stdout=asyncio.subprocess.PIPE,
            env=_env(),
        )
        out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode == 0
        assert out.decode() == f"wrote {output} (0 endpoints)\n"
        assert output.read_text() == (
            f"# api.{NS}, service port 80: 0 endpoints\n"
            "upstream backend {\n    server 127.0.0.1:1 down;  # no endpoints\n}\n"
        )
