"""The node layer: the operator's image, built from the Dockerfile, installed as users install
it on one real node (``../shared/envtest/node``: kubelet, containerd, kube-proxy, real pods).

Once per run (package-scoped fixtures: the node stops as soon as the layer's last test has
run, not at the end of the suite): the image is built by ``make image`` (buildah, on the
envtest stand-in for the Dockerfile's base; or taken from the OCI archive named by
``ESO_NODE_IMAGE``), one node is started with it and the busybox test image, and the node is
**always** stopped: in the fixture's ``finally``, on SIGTERM (which unwinds like Ctrl-C), and
by ``atexit`` if the interpreter ends another way (tests/node/lifecycle.py, which
``python -m benchmarks --node`` shares). Needs root, the envtest folder beside the
checkout (or ``ESO_ENVTEST``) and the Debian packages its README lists; without them every
``node`` test is skipped with one reason (a failure under ``CI=true``, see tests/conftest.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.cluster import Node
from tests.node.lifecycle import (
    ENVTEST,
    MAKE_IMAGE,
    build_image,
    build_images,
    running_node,
)

__all__ = ["ENVTEST", "MAKE_IMAGE", "unavailable"]

SKIP_PREFIX = "node: "

#: command -> the Debian package that has it.
COMMANDS = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "socat": "socat",
    "iptables": "iptables",
    "nsenter": "util-linux",
    "curl": "curl",
    "kubectl": "kubectl",
    "buildah": "buildah",
    "skopeo": "skopeo",
    "mmdebstrap": "mmdebstrap",
    "gcc": "gcc",
}
FILES = {
    "/usr/lib/cni/ptp": "containernetworking-plugins",
    "/usr/lib/cni/host-local": "containernetworking-plugins",
    "/bin/busybox": "busybox-static",
}


def unavailable() -> str | None:
    """The one reason the layer cannot run here, or ``None``."""
    if os.geteuid() != 0:
        return SKIP_PREFIX + "needs root (a kubelet, containerd and kube-proxy)"
    if not (ENVTEST / "node").is_file():
        return SKIP_PREFIX + f"no envtest folder with `node` at {ENVTEST} (set ESO_ENVTEST)"
    missing = sorted(
        {package for command, package in COMMANDS.items() if shutil.which(command) is None}
        | {package for path, package in FILES.items() if not Path(path).exists()}
    )
    if missing:
        return SKIP_PREFIX + f"missing Debian packages: {' '.join(missing)} (.ci/run installs them)"
    if shutil.which("npm") is None and not (Path.home() / ".cache/envtest-helm/helm").exists():
        return SKIP_PREFIX + "helm comes from npm (../shared/envtest/helm): npm is missing"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("node") is not None for item in items):
        return
    reason = unavailable()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("node") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="package")
def images() -> Path:
    """The envtest image cache: pause, busybox and the stand-in python base (cached)."""
    return build_images()


@pytest.fixture(scope="package")
def image_archive(images: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator's image as an OCI archive: ``make image`` on the stand-in base, once."""
    return build_image(images, tmp_path_factory.mktemp("image"))


@pytest.fixture(scope="package")
def node(images: Path, image_archive: Path, request: pytest.FixtureRequest) -> Iterator[Node]:
    """One real node with the operator's image and busybox imported; stopped on every exit."""
    workdir = Path(tempfile.mkdtemp(prefix="eso-node-"))
    failed = request.session.testsfailed
    try:
        with running_node(images, image_archive, workdir) as node:
            yield node
    finally:
        # The node's logs (kubelet, containerd, control plane) stay for a run with failures.
        if request.session.testsfailed == failed:
            shutil.rmtree(workdir, ignore_errors=True)
