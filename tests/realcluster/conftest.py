"""The real-cluster fixture: one control plane per test run, one namespace per test.

* ``KUBEBUILDER_ASSETS`` (a directory with ``etcd`` and ``kube-apiserver``, and
  ``kube-controller-manager`` when there): a control plane is started on free loopback ports,
  with RBAC and bearer tokens, once per run, and stopped by PID at the end (also on failure).
* ``ESO_TEST_KUBECONFIG``: the same tests against an existing cluster (for example kind).
* Neither: every ``realcluster`` test is skipped with one reason.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane, missing_assets
from tests.realcluster import objects
from tests.realcluster.kube import Kube
from tests.realcluster.mcs_clusters import extra_plane
from tests.realcluster.operator_process import OperatorProcess, running

SKIP_REASON = (
    "realcluster: set KUBEBUILDER_ASSETS to a directory with etcd and kube-apiserver "
    "(for example $(../shared/envtest/assets v1.36)) or ESO_TEST_KUBECONFIG to an existing cluster"
)


def assets_dir() -> Path | None:
    value = os.environ.get("KUBEBUILDER_ASSETS")
    return Path(value).resolve() if value else None


def external_kubeconfig() -> Path | None:
    value = os.environ.get("ESO_TEST_KUBECONFIG")
    return Path(value) if value else None


def unavailable() -> str | None:
    if external_kubeconfig() is not None:
        return None
    reason = missing_assets(assets_dir())
    return f"{SKIP_REASON} ({reason})" if reason else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reason = unavailable()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "realcluster" in item.keywords:
            item.add_marker(skip)


@dataclass
class Cluster:
    kubeconfig: Path
    plane: ControlPlane | None
    """The control plane this run started (``None`` for ``ESO_TEST_KUBECONFIG``)."""

    @property
    def has_kcm(self) -> bool:
        """kube-controller-manager runs beside the operator (always on an existing cluster)."""
        return self.plane is None or self.plane.kcm_running


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kubeconfig = external_kubeconfig()
    if kubeconfig is not None:
        yield Cluster(kubeconfig, None)
        return
    assets = assets_dir()
    assert assets is not None
    # A short path: etcd and the API server put sockets and state below it.
    workdir = Path(tempfile.mkdtemp(prefix="eso-cp-"))
    plane = ControlPlane(assets=assets, workdir=workdir)
    try:
        plane.start()
        yield Cluster(plane.kubeconfig, plane)
    finally:
        plane.stop()


@pytest.fixture
async def kube(cluster: Cluster) -> AsyncIterator[Kube]:
    async with await Kube.load(cluster.kubeconfig) as client:
        yield client


@pytest.fixture
async def ns(kube: Kube, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace for the test, deleted afterwards (the namespace controller, or the
    cluster's own, empties it)."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    name = f"{stem}-{secrets.token_hex(3)}"
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    )
    yield name
    await kube.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture(scope="module")
def west_plane(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """A second control plane ("west"; the session's is "east") for one module's
    multi-cluster tests: etcd and kube-apiserver, stopped by PID after the module."""
    if cluster.plane is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: a second control plane is started")
    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    with extra_plane(assets_dir(), f"{module}-west") as plane:
        yield plane


@pytest.fixture
async def west(west_plane: ControlPlane) -> AsyncIterator[Kube]:
    """A client of :func:`west_plane`."""
    async with await Kube.load(west_plane.kubeconfig) as client:
        yield client


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
async def operator(kube: Kube, ns: str, log_dir: Path) -> AsyncIterator[OperatorProcess]:
    """Nodes ``node-a`` (zone-a) and ``node-b`` (zone-b), and the operator as a process
    watching only the test's namespace."""
    await objects.node(kube, "node-a", "zone-a")
    await objects.node(kube, "node-b", "zone-b")
    async with running(kube.kubeconfig, log_dir / "operator.log", "--namespace", ns) as op:
        yield op
