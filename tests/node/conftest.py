"""The node layer: the operator's image, built from the Dockerfile, installed as users install
it on one real node (``../shared/envtest/node``: kubelet, containerd, kube-proxy, real pods).

Once per run (package-scoped fixtures: the node stops as soon as the layer's last test has
run, not at the end of the suite): the image is built by ``make image`` (buildah, on the
envtest stand-in for the Dockerfile's base; or taken from the OCI archive named by
``ESO_NODE_IMAGE``), one node is started with it and the busybox test image, and the node is
**always** stopped: in the fixture's ``finally``, on SIGTERM (which unwinds like Ctrl-C), and
by ``atexit`` if the interpreter ends another way. Needs root, the envtest folder beside the
checkout (or ``ESO_ENVTEST``) and the Debian packages its README lists; without them every
``node`` test is skipped with one reason (a failure under ``CI=true``, see tests/conftest.py).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from tests.node.cluster import Node

ROOT = Path(__file__).resolve().parents[2]
ENVTEST = Path(os.environ.get("ESO_ENVTEST") or ROOT.parent / "shared" / "envtest").resolve()
IMAGE = "localhost/endpointslice-operator:0.1.0"
PYTHON_STAND_IN = "localhost/python:3.11-slim-bookworm"
SKIP_PREFIX = "node: "
MAKE_IMAGE = "make image"
ARCHIVE = "endpointslice-operator.tar"

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


def _envtest(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    done = subprocess.run(
        [str(ENVTEST / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"envtest {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def node_assets() -> str:
    """KUBEBUILDER_ASSETS when it has the node's binaries too, else envtest's v1.36."""
    given = os.environ.get("KUBEBUILDER_ASSETS")
    if given and all((Path(given) / b).is_file() for b in ("kubelet", "kube-scheduler")):
        return given
    return _envtest("assets", "v1.36")


@pytest.fixture(scope="package")
def images() -> Path:
    """The envtest image cache: pause, busybox and the stand-in python base (cached)."""
    return Path(_envtest("images", "build"))


@pytest.fixture(scope="package")
def image_archive(images: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The operator's image as an OCI archive: ``make image`` on the stand-in base, once."""
    given = os.environ.get("ESO_NODE_IMAGE")
    if given:
        return Path(given).resolve()
    storage_env = _envtest("images", "env", str(images))  # export CONTAINERS_STORAGE_CONF=...
    env = {
        **os.environ,
        "CONTAINERS_STORAGE_CONF": storage_env.split("=", 1)[1],
        "PYTHON_IMAGE": PYTHON_STAND_IN,
    }
    # The stand-in may be missing from buildah's storage (the cache copied elsewhere).
    present = subprocess.run(
        ["buildah", "inspect", "--type", "image", PYTHON_STAND_IN],
        capture_output=True,
        env=env,
        check=False,
    )
    if present.returncode != 0:
        subprocess.run(
            ["skopeo", "copy", "-q", f"oci-archive:{images / 'python.tar'}",
             f"containers-storage:{PYTHON_STAND_IN}"],
            env=env, check=True,
        )  # fmt: skip
    # The README's command as written; its archive is then moved out of the checkout.
    done = subprocess.run(
        MAKE_IMAGE.split(), cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{MAKE_IMAGE} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    out = tmp_path_factory.mktemp("image") / ARCHIVE
    shutil.move(ROOT / ARCHIVE, out)
    return out


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="package")
def node(images: Path, image_archive: Path, request: pytest.FixtureRequest) -> Iterator[Node]:
    """One real node with the operator's image and busybox imported; stopped on every exit."""
    workdir = Path(tempfile.mkdtemp(prefix="eso-node-"))
    node_dir = workdir / "node"
    env = {**os.environ, "KUBEBUILDER_ASSETS": node_assets()}
    stopped = False

    def stop() -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            subprocess.run(
                [str(ENVTEST / "node"), "stop", str(node_dir)],
                capture_output=True,
                env=env,
                timeout=600,
                check=False,
            )

    atexit.register(stop)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    failed = request.session.testsfailed
    try:
        kubeconfig = _envtest(
            "node", "start", str(node_dir), str(images / "busybox.tar"), str(image_archive),
            env=env, timeout=600,
        )  # fmt: skip
        helm = Path(_envtest("helm", "path", timeout=600))
        yield Node(
            envtest=ENVTEST,
            dir=node_dir,
            kubeconfig=Path(kubeconfig),
            helm_binary=helm,
            image=IMAGE,
            helm_home=workdir / "helm",
        )
    finally:
        try:
            stop()
        finally:
            signal.signal(signal.SIGTERM, previous)
            atexit.unregister(stop)
        # The node's logs (kubelet, containerd, control plane) stay for a run with failures.
        if request.session.testsfailed == failed:
            shutil.rmtree(workdir, ignore_errors=True)
