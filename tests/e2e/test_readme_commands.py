"""The README's commands, run as written against the emulator (see tests/readme_commands.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import yaml

from endpointslice_operator.testing import run_emulator
from tests.e2e.harness import foreign_slice
from tests.readme_commands import ROOT, RUN_BY, all_commands, block_commands, blocks, readme
from tests.readme_commands import section as readme_section

VENV_BIN = str(Path(sys.executable).parent)
TIMEOUT = 180


def _command(text: str) -> str:
    """A command of the README (as written there), for a test to run."""
    assert text in all_commands(readme()), text
    assert text in RUN_BY, text
    return text


def _environ(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


async def bash(script: str, *, cwd: Path, env: Mapping[str, str]) -> tuple[int, str, str]:
    """Run ``script`` with ``bash -e``; its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        "bash", "-e", "-c", script, cwd=cwd, env=dict(env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@asynccontextmanager
async def background(
    script: str, *, cwd: Path, env: Mapping[str, str], ready: str
) -> AsyncIterator[list[str]]:
    """Run ``script`` in its own process group (a user's other terminal) until the block ends;
    yields its stdout lines so far, once a line contains ``ready``. Stopped by its PID."""
    process = await asyncio.create_subprocess_exec(
        "bash", "-e", "-c", script, cwd=cwd, env=dict(env), start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(TIMEOUT):
            while not any(ready in line for line in lines):
                line = (await process.stdout.readline()).decode()
                assert line, "exited early:\n" + "".join(lines)
                lines.append(line)
        yield lines
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in that terminal
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


async def test_try_it_without_a_cluster() -> None:
    first, second = blocks(readme_section(readme(), "Try it without a cluster"))[:2]
    for command in block_commands(first) + block_commands(second):
        _command(command)
    kubeconfig = ROOT / "demo.kubeconfig"
    env = _environ(KUBECONFIG=None)
    try:
        async with background(first, cwd=ROOT, env=env, ready="Press Ctrl-C"):
            code, out, err = await bash(second, cwd=ROOT, env=env)
            assert code == 0, err
            assert "deployment.apps/web created" in out
            assert "deployment.apps/web restarted" in out
            assert "endpointslice-operator.io" in out  # the MANAGER column
            # The slice follows the restarted Deployment: five ready endpoints.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while True:
                code, out, err = await bash(second.splitlines()[-1], cwd=ROOT, env=_environ(
                    KUBECONFIG=str(kubeconfig)))  # fmt: skip
                assert code == 0, err
                ready = [
                    e
                    for s in yaml.safe_load(out)["items"]
                    for e in s.get("endpoints") or []
                    if e["conditions"].get("ready")
                ]
                if len(ready) == 5 or loop.time() > deadline:
                    break
                await asyncio.sleep(0.2)
            assert len(ready) == 5
    finally:
        kubeconfig.unlink(missing_ok=True)


async def test_make_run_without_a_cluster(tmp_path: Path) -> None:
    env = _environ(HOME=str(tmp_path), KUBECONFIG=None, KUBERNETES_SERVICE_HOST=None)
    code, out, err = await bash(_command("make run"), cwd=ROOT, env=env)
    assert code == 0, err
    assert "No cluster configured: running the demo" in out
    assert "=== Deployment demo/web with 5 ready pods" in out
    code, out, err = await bash(_command("make run ARGS='--log-level debug'"), cwd=ROOT, env=env)
    assert code == 0, err
    assert "=== Scaled to 120 pods" in out
    assert " DEBUG " in err


async def test_the_emulator_on_its_own(tmp_path: Path) -> None:
    # as after `source .venv/bin/activate`
    env = _environ(PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    command = _command("endpointslice-operator emulator --nodes 3")
    async with background(command, cwd=tmp_path, env=env, ready="serving http://"):
        kubeconfig = tmp_path / "emulator.kubeconfig"
        code, out, err = await bash(
            "kubectl get nodes -o name", cwd=tmp_path, env={**env, "KUBECONFIG": str(kubeconfig)}
        )
        assert code == 0, err
        assert out.split() == ["node/node-1", "node/node-2", "node/node-3"]


async def test_service_commands_on_the_emulator(tmp_path: Path) -> None:
    async with run_emulator() as emu:
        emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"ports": [{"name": "http", "port": 80}]},
            }
        )
        foreign_slice(emu, "web-kcm", "web", "endpointslice-controller.k8s.io", "default")
        foreign_slice(
            emu, "web-mirrored", "web", "endpointslicemirroring-controller.k8s.io", "default"
        )
        foreign_slice(emu, "web-ours", "web", "endpointslice-operator.io", "default")
        foreign_slice(emu, "web-other", "web", "someone.example.com", "default")
        env = _environ(
            KUBECONFIG=str(emu.kubeconfig_path),
            PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        )

        def names() -> list[str]:
            return sorted(s["metadata"]["name"] for s in emu.store.list("endpointslices"))

        code, out, err = await bash(_command("kubectl describe service web"), cwd=tmp_path, env=env)
        assert code == 0, err
        assert out.startswith("Name:") and "web" in out.splitlines()[0]

        delete_kcm = next(c for c in RUN_BY if c.startswith("kubectl delete endpointslices -l"))
        code, out, err = await bash(_command(delete_kcm), cwd=tmp_path, env=env)
        assert code == 0, err
        assert names() == ["web-other", "web-ours"]

        code, out, err = await bash(
            _command("endpointslice-operator cleanup"), cwd=tmp_path, env=env
        )
        assert code == 0, err
        assert (
            out.splitlines()[-1]
            == "deleted 1 EndpointSlice(s) managed by endpointslice-operator.io"
        )
        assert names() == ["web-other"]
