"""The README's endpoint view commands, run as written against the emulator."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

from endpointslice_operator.testing import run_emulator
from tests.e2e.test_readme_commands import TIMEOUT, VENV_BIN, _command, _environ, bash
from tests.readme_commands import block_commands, blocks, readme, section
from tests.view.objects import KCM, OURS, endpoint, endpoint_slice, service

TITLE = "The endpoint view, for consumers outside Kubernetes"


async def test_the_readme_view_commands(tmp_path: Path) -> None:
    (block,) = blocks(section(readme(), TITLE))
    table, watch = (_command(c) for c in block_commands(block))
    bare = _command("endpointslice-operator endpoints")
    async with run_emulator() as emu:
        emu.store.create(service("web", namespace="default", annotated=False))
        emu.store.create(service("api", namespace="default", annotated=True))
        emu.store.create(
            endpoint_slice("web-kcm", "web", [endpoint("10.1.0.1")], namespace="default")
        )
        emu.store.create(
            endpoint_slice(
                "web-ours",
                "web",
                [endpoint("10.1.0.1"), endpoint("10.1.0.2")],
                namespace="default",
                managed_by=OURS,
            )
        )
        emu.store.create(
            endpoint_slice("api-kcm", "api", [endpoint("10.2.0.1")], namespace="default")
        )
        env = _environ(
            KUBECONFIG=str(emu.kubeconfig_path),
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
            ENDPOINTSLICE_OPERATOR_KUBECONFIG=None,
        )
        code, out, err = await bash(table, cwd=tmp_path, env=env)
        assert code == 0, err
        assert [line.split()[1:4] for line in out.splitlines()[1:]] == [
            ["web", "http:80/TCP", "10.1.0.1:8080"],
            ["web", "http:80/TCP", "10.1.0.2:8080"],
        ]
        # Without --service: the annotated Services.
        code, out, err = await bash(bare, cwd=tmp_path, env=env)
        assert code == 0, err
        assert [line.split()[1:4] for line in out.splitlines()[1:]] == [
            ["api", "http:80/TCP", "10.2.0.1:8080"]
        ]

        process = await asyncio.create_subprocess_exec(
            "bash", "-e", "-c", watch, cwd=tmp_path, env=env, start_new_session=True,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        try:

            async def record() -> dict[str, object]:
                line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)  # type: ignore[union-attr]
                parsed: dict[str, object] = json.loads(line)
                return parsed

            first = [await record() for _ in range(3)]
            assert [r["type"] for r in first] == ["added", "added", "synced"]
            assert first[0]["endpoint"]["slice"] == "web-kcm"  # type: ignore[index]
            # The other manager's slice goes: 10.1.0.1 stays (KCM lists it), 10.1.0.2 goes.
            emu.store.delete("endpointslices", "default", "web-ours")
            removed = await record()
            assert removed["type"] == "removed"
            assert removed["key"]["address"] == "10.1.0.2"  # type: ignore[index]
            emu.store.create(
                endpoint_slice(
                    "web-kcm-2", "web", [endpoint("10.1.0.3")], namespace="default", managed_by=KCM
                )
            )
            added = await record()
            assert added["type"] == "added"
            assert added["key"]["address"] == "10.1.0.3"  # type: ignore[index]
        finally:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in that terminal
            await asyncio.wait_for(process.wait(), 30)
