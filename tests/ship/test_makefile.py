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
