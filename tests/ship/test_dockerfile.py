"""The Dockerfile has the properties issue 5 asks for (no Docker engine runs here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ship.dockerfile import Dockerfile, parse

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse(ROOT / "Dockerfile")


def test_multi_stage_on_a_version_pinned_slim_python(dockerfile: Dockerfile) -> None:
    assert len(dockerfile.stages) >= 2
    for stage in dockerfile.stages:
        # A full patch version, never a floating tag such as 3.11-slim or latest.
        assert re.fullmatch(
            r"python:3\.(1[1-9])\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", stage.base
        )
    assert dockerfile.stages[0].base == dockerfile.final.base


def test_dependencies_come_from_the_pinned_constraints(dockerfile: Dockerfile) -> None:
    builder = dockerfile.stage("builder")
    installs = [r.arguments for r in builder.all("RUN") if "pip install" in r.arguments]
    assert len(installs) == 1
    assert "-c constraints.txt" in installs[0]
    assert "--no-cache-dir" in installs[0]
    copied = " ".join(c.arguments for c in builder.all("COPY"))
    assert "constraints.txt" in copied and "pyproject.toml" in copied


def test_final_stage_copies_only_the_virtual_environment(dockerfile: Dockerfile) -> None:
    copies = dockerfile.final.all("COPY")
    assert [c.arguments for c in copies] == ["--from=builder /opt/venv /opt/venv"]
    for run in dockerfile.final.all("RUN"):
        assert "pip install" not in run.arguments
        assert not re.search(r"apt-get|apk |gcc|build-essential|make ", run.arguments)
        assert "pip uninstall" in run.arguments or "useradd" in run.arguments
    assert "/opt/venv/bin" in dockerfile.final.env()["PATH"].split(":")[0]


def test_no_compiler_or_pip_cache_anywhere(dockerfile: Dockerfile) -> None:
    for stage in dockerfile.stages:
        for run in stage.all("RUN"):
            assert not re.search(r"apt-get|apk add|gcc|build-essential", run.arguments)
    assert dockerfile.stage("builder").env()["PIP_NO_CACHE_DIR"] == "1"


def test_runs_as_uid_65532(dockerfile: Dockerfile) -> None:
    (user,) = dockerfile.final.all("USER")
    assert user.arguments == "65532:65532"
    assert dockerfile.final.instructions[-1].keyword in {"ENTRYPOINT", "CMD"}
    assert dockerfile.final.instructions.index(user) > max(
        dockerfile.final.instructions.index(i) for i in dockerfile.final.all("RUN")
    )


def test_read_only_root_filesystem_friendly(dockerfile: Dockerfile) -> None:
    env = dockerfile.final.env()
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["HOME"] == "/tmp"
    assert env["TMPDIR"] == "/tmp"
    assert not dockerfile.final.all("VOLUME")


def test_entrypoint(dockerfile: Dockerfile) -> None:
    (entrypoint,) = dockerfile.final.all("ENTRYPOINT")
    assert entrypoint.exec_form() == ["endpointslice-operator", "run"]
    assert not dockerfile.final.all("CMD")
    (expose,) = dockerfile.final.all("EXPOSE")
    assert expose.arguments == "8080"


def test_oci_labels(dockerfile: Dockerfile) -> None:
    labels: dict[str, str] = {}
    for label in dockerfile.final.all("LABEL"):
        labels.update(label.pairs())
    for key in ("title", "description", "version", "revision", "created", "licenses", "source"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"


def test_dockerignore_sends_only_what_the_build_copies() -> None:
    lines = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "constraints.txt", "README.md", "endpointslice_operator"}
    assert "**/__pycache__" in lines
