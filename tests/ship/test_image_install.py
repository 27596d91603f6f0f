"""Install the package the way the Dockerfile's builder stage does, then run it.

The builder stage's WORKDIR, COPY, ENV and RUN instructions are replayed in a temporary
directory (``/opt/venv`` becomes a fresh virtual environment there), so this test follows the
Dockerfile as it changes. It then runs the installed command as the image would, and checks
that doing so writes nothing (the image's root filesystem is read-only).

No speed tricks: a plain ``pip install -c constraints.txt .`` into a new venv, as in the image.
It takes tens of seconds (pip resolves and installs every dependency); it is the only such test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from endpointslice_operator import __version__
from tests.ship.dockerfile import parse

ROOT = Path(__file__).resolve().parents[2]
IMAGE_VENV = "/opt/venv"


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.timeout(900)
def test_builder_stage_install_runs(tmp_path: Path) -> None:
    builder = parse(ROOT / "Dockerfile").stage("builder")
    venv = tmp_path / "venv"
    workdir = tmp_path / "src"
    # `python` in the image is the base interpreter, not this test's virtual environment.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    env = {
        k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}
    }
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)

    for instruction in builder.instructions:
        args = instruction.arguments.replace(IMAGE_VENV, str(venv))
        if instruction.keyword == "WORKDIR":
            assert args == "/src"
            workdir.mkdir()
        elif instruction.keyword == "ENV":
            env.update(instruction.pairs())
        elif instruction.keyword == "COPY":
            *sources, destination = args.split()
            for source in sources:
                src = ROOT / source.rstrip("/")
                dest = workdir / destination.removeprefix("./")
                if src.is_dir():
                    shutil.copytree(
                        src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
                    )
                else:
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy(src, dest / src.name)
        elif instruction.keyword == "RUN":
            result = subprocess.run(
                ["bash", "-eu", "-c", args],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=840,
                check=False,
            )
            assert result.returncode == 0, f"RUN {args}\n{result.stdout}\n{result.stderr}"
        else:
            pytest.fail(f"the test does not replay {instruction.keyword} yet")

    command = venv / "bin" / "endpointslice-operator"
    assert command.is_file()
    assert not (venv / "bin" / "pip").exists(), "the image keeps no pip"
    # Bytecode is compiled at install time: nothing can write it on a read-only root fs.
    (package,) = venv.glob("lib/python3.*/site-packages/endpointslice_operator")
    modules = list(package.rglob("*.py"))
    compiled = list(package.rglob("__pycache__/*.pyc"))
    assert modules and len(compiled) >= len(modules)

    # Run as the image does: only the venv on PATH, HOME=/tmp-like, no bytecode writes.
    run_env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "home"),
    }
    before = _files(venv)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(command), *argv],
            cwd=tmp_path,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    version = run("version")
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"endpointslice-operator {__version__}\n"

    usage = run("--help")
    assert usage.returncode == 0, usage.stderr
    for name in ("run", "emulator", "demo", "plan", "version"):
        assert f"  {name}" in usage.stdout

    # `run --help` imports the whole operator (Kopf, kubernetes-asyncio, aiohttp, ...): every
    # runtime dependency is in the installed environment.
    run_help = run("run", "--help")
    assert run_help.returncode == 0, run_help.stderr
    assert "--max-endpoints-per-slice" in run_help.stdout

    # A bad setting stops the process at start with one line naming it.
    bad = run("run", "--workers", "0")
    assert bad.returncode == 2
    assert "ENDPOINTSLICE_OPERATOR_WORKERS" in bad.stderr

    assert _files(venv) == before, "running the command wrote into the installation"
