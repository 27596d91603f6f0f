"""Starting and always stopping the one real node, outside pytest too (the node layer's
fixtures and ``python -m benchmarks --node`` share it).

:func:`build_image` is ``make image`` on the envtest stand-in for the Dockerfile's base (or the
OCI archive named by ``ESO_NODE_IMAGE``); :func:`running_node` starts ``node start`` with the
operator's image and busybox and runs ``node stop`` on every exit: its ``finally``, SIGTERM
(which unwinds like Ctrl-C) and ``atexit`` if the interpreter ends another way.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from tests.node.cluster import Node

ROOT = Path(__file__).resolve().parents[2]
ENVTEST = Path(os.environ.get("ESO_ENVTEST") or ROOT.parent / "shared" / "envtest").resolve()
IMAGE = "localhost/endpointslice-operator:0.1.0"
PYTHON_STAND_IN = "localhost/python:3.11-slim-bookworm"
MAKE_IMAGE = "make image"
ARCHIVE = "endpointslice-operator.tar"


def envtest(*args: str, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    """An envtest command (``node``, ``images``, ``assets``, ``helm``): its last line."""
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
    return envtest("assets", "v1.36")


def build_images() -> Path:
    """The envtest image cache: pause, busybox and the stand-in python base (cached)."""
    return Path(envtest("images", "build"))


def build_image(images: Path, out_dir: Path) -> Path:
    """The operator's image as an OCI archive in ``out_dir``: ``make image`` on the stand-in
    base (the README's command as written, its archive then moved out of the checkout), or the
    archive named by ``ESO_NODE_IMAGE``."""
    given = os.environ.get("ESO_NODE_IMAGE")
    if given:
        return Path(given).resolve()
    storage_env = envtest("images", "env", str(images))  # export CONTAINERS_STORAGE_CONF=...
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
    done = subprocess.run(
        MAKE_IMAGE.split(), cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
        check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{MAKE_IMAGE} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    out = out_dir / ARCHIVE
    shutil.move(ROOT / ARCHIVE, out)
    return out


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def running_node(images: Path, image_archive: Path, workdir: Path) -> Iterator[Node]:
    """One real node in ``workdir/node`` with the operator's image and busybox imported;
    ``node stop`` on every exit path (the caller removes ``workdir``)."""
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
    try:
        kubeconfig = envtest(
            "node", "start", str(node_dir), str(images / "busybox.tar"), str(image_archive),
            env=env, timeout=600,
        )  # fmt: skip
        helm = Path(envtest("helm", "path", timeout=600))
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
