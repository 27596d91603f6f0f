"""A real helm binary for the realcluster tests (``../shared/envtest/helm``, fetched once)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.readme_commands import ROOT

HELM = ROOT.parent / "shared" / "envtest" / "helm"


def helm_folder(folder: Path) -> Path:
    """``folder`` with a ``helm`` in it (skips the test when there is none to be had)."""
    if not HELM.exists():
        pytest.skip(f"needs {HELM} (../shared/envtest beside the checkout)")
    found = subprocess.run([str(HELM), "path"], capture_output=True, text=True, timeout=300)
    if found.returncode != 0:
        pytest.skip(f"no helm binary: {found.stderr.strip()[-300:]}")
    (folder / "helm").symlink_to(found.stdout.strip())
    return folder


def helm_env(bin_folder: Path, state: Path, kubeconfig: Path) -> dict[str, str]:
    """The environment of a helm (and kubectl) command: its state kept under ``state``."""
    return {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}",
        "HELM_CACHE_HOME": str(state / "cache"),
        "HELM_CONFIG_HOME": str(state / "config"),
        "HELM_DATA_HOME": str(state / "data"),
    }
