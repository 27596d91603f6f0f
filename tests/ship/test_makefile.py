"""The Makefile's ``venv`` target says what it does during its install (about 90 s on a fresh
machine): what it creates, what it installs and how long that takes, and when it is ready."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_venv_says_what_it_is_doing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # -n: print the recipe (echo lines included) without running it
    result = subprocess.run(
        ["make", "-n", "venv", f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    said = [line for line in result.stdout.splitlines() if line.startswith("echo ")]
    assert len(said) == 4, result.stdout
    assert f"creating {venv}" in said[0]
    assert "installing endpointslice-operator" in said[2] and "about 90 s" in said[2]
    assert "ready" in said[3]


def _closing_block(**variables: str) -> str:
    """The last shell command of ``make test``'s recipe (as make would run it)."""
    result = subprocess.run(
        # --no-print-directory: under a make of its own (make test runs this test), make -n
        # would also print "make[1]: Leaving directory ..." lines.
        ["make", "--no-print-directory", "-n", "test", *(f"{k}={v}" for k, v in variables.items())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in result.stdout.splitlines() if not line.startswith("make")]
    start = max(i for i, line in enumerate(lines) if line.startswith("if [ -z "))
    return "\n".join(lines[start:])


def _run(block: str) -> str:
    env = {"PATH": "/usr/bin:/bin"}
    return subprocess.run(
        ["sh", "-c", block], capture_output=True, text=True, timeout=60, env=env, check=True
    ).stdout


def test_make_test_ends_saying_the_real_tests_were_skipped() -> None:
    said = _run(_closing_block(KUBEBUILDER_ASSETS="", ESO_OLDEST_ASSETS=""))
    assert said.startswith("Note: the real-server tests were skipped"), said
    assert _run(_closing_block(KUBEBUILDER_ASSETS="/opt/assets", ESO_OLDEST_ASSETS="")) == ""
