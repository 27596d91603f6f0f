"""The image ``make image`` builds from the Dockerfile: what runs, as whom, and that nothing of
the build is left in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.node import oci
from tests.node.conftest import MAKE_IMAGE
from tests.readme_commands import readme

# The first test builds the image (`make image`, minutes on a busy machine).
pytestmark = [pytest.mark.node, pytest.mark.timeout(1800)]

VENV = "opt/venv"
SITE = f"{VENV}/lib/python3.11/site-packages"


@pytest.fixture(scope="module")
def image(image_archive: Path) -> oci.Image:
    return oci.read(image_archive)


def test_the_readme_builds_the_image_with_make_image(image_archive: Path) -> None:
    """The fixture ran the README's command as written (unless ESO_NODE_IMAGE named one)."""
    install = readme().split("\n## Install on a cluster\n", 1)[1].split("\n## ", 1)[0]
    assert f"\n{MAKE_IMAGE}" in install
    assert image_archive.stat().st_size > 10_000_000


def test_it_runs_the_operator_as_uid_65532(image: oci.Image) -> None:
    config = image.config["config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["endpointslice-operator", "run"]
    assert config.get("Cmd") in (None, [])
    assert "PATH=/opt/venv/bin:" in ",".join(config["Env"])
    # What it runs is there (so the absences below are not those of an empty image).
    assert f"{VENV}/bin/endpointslice-operator" in image.files
    assert f"{SITE}/endpointslice_operator/__init__.py" in image.files
    assert {"etc/passwd", "usr/bin/python3.11"} <= image.files


def test_nothing_of_the_build_is_left(image: oci.Image) -> None:
    files = image.files
    compilers = sorted(
        f
        for f in files
        if re.fullmatch(r"usr/(local/)?bin/(cc|c\+\+|g?cc(-\d+)?|.*-gcc(-\d+)?|ld)", f)
    )
    assert compilers == []
    # No pip, setuptools or wheel anywhere (the venv's and the base image's), and no pip cache.
    packaging = sorted(
        f
        for f in files
        if re.search(r"(^|/)(pip|setuptools|wheel)(-[^/]*\.dist-info)?(/|$)", f)
        or re.fullmatch(r".*/bin/pip[0-9.]*", f)
    )
    assert packaging == []
    assert sorted(f for f in files if "/.cache/" in f or f.endswith("/.cache")) == []
    # No source tree: not the builder's /src, not the project's tests, docs or .git.
    assert sorted(f for f in files if f == "src" or f.startswith("src/")) == []
    assert sorted(f for f in files if re.search(r"(^|/)\.git(/|$)", f)) == []
    leftovers = ("pyproject.toml", "constraints.txt", "README.md", "Dockerfile", "chart")
    assert sorted(f for f in files if f.rpartition("/")[2] in leftovers and SITE not in f) == []
    assert sorted(f for f in files if f.startswith(f"{SITE}/tests/")) == []
    # The byte code pip compiled at build time is there; nothing may write it at run time.
    assert any(f.startswith(f"{SITE}/endpointslice_operator/__pycache__/") for f in files)
