"""The data-plane layer: one control plane, the operator and a real kube-proxy per test run.

kube-proxy's mode is the package-scoped :func:`proxy_mode` fixture (``iptables``, ``nftables``):
a test that asks for it runs once per mode (test ids ``[iptables]``, ``[nftables]``), and pytest
orders the tests so that the layer's kube-proxy is restarted in the other mode once, on the same
cluster and namespaces (about 2 s), rather than a second cluster started. A test that does not
ask finds kube-proxy in the mode the tests before it left (its rules are read alike in both).

Needs root, ``ip netns``, ``iptables-save``, ``nft`` and ``socat``, and ``KUBEBUILDER_ASSETS``
with etcd, kube-apiserver, kube-controller-manager and kube-proxy of v1.33 or newer
(``trafficDistribution: PreferSameZone`` and serving-terminating fallback are what the tests
route by). Without any of them every ``dataplane`` test is skipped with one reason. The layer's
:class:`DataplaneCluster` is stopped by PID, and its network namespaces deleted by name, once its
tests have run, also after a failure, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml

from endpointslice_operator.testing.controlplane import missing_assets
from endpointslice_operator.testing.dataplane import (
    PROXY_MODES,
    ProxyMode,
    kube_proxy_version,
    missing_requirements,
)
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster

ROOT = Path(__file__).resolve().parents[2]
#: Installed before the operator starts, so it serves EndpointSelectors from its first discovery.
CRD_FILES = (ROOT / "deploy" / "crds" / "endpointselectors.endpointslice-operator.io.yaml",)
MIN_VERSION = (1, 33)
SKIP_PREFIX = "dataplane: "


def assets_dir() -> Path | None:
    value = os.environ.get("KUBEBUILDER_ASSETS")
    return Path(value).resolve() if value else None


def unavailable() -> str | None:
    """The one reason the layer cannot run here, or ``None``."""
    assets = assets_dir()
    reason = missing_requirements(assets, PROXY_MODES) or missing_assets(assets)
    if reason is None and assets is not None:
        if not (assets / "kube-controller-manager").is_file():
            reason = f"kube-controller-manager (the twin Services' reference) not in {assets}"
        else:
            version = kube_proxy_version(assets / "kube-proxy")
            if version < MIN_VERSION:
                reason = (
                    f"needs kube-proxy v{MIN_VERSION[0]}.{MIN_VERSION[1]}+ in "
                    f"KUBEBUILDER_ASSETS (found v{version[0]}.{version[1]} in {assets})"
                )
    return SKIP_PREFIX + reason if reason else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("dataplane") is not None for item in items):
        return
    reason = unavailable()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("dataplane") is not None:
            item.add_marker(skip)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="package")
def dc(request: pytest.FixtureRequest) -> Iterator[DataplaneCluster]:
    """The layer's control plane + operator + kube-proxy topology (about 10 s to start), shared
    by its tests and stopped as soon as the last of them has run."""
    assets = assets_dir()
    assert assets is not None
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C, so the finally below still runs.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    workdir = Path(tempfile.mkdtemp(prefix="eso-dp-"))
    crds = tuple(yaml.safe_load(path.read_text(encoding="utf-8")) for path in CRD_FILES)
    cluster = DataplaneCluster(assets=assets, workdir=workdir, crds=crds)
    failed = request.session.testsfailed
    try:
        cluster.start()
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            signal.signal(signal.SIGTERM, previous)
        # The logs (operator, kube-proxy, control plane) stay for a run with failures.
        if request.session.testsfailed == failed:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="package", params=PROXY_MODES)
def proxy_mode(dc: DataplaneCluster, request: pytest.FixtureRequest) -> ProxyMode:
    """kube-proxy's mode for the test: the layer's kube-proxy restarted in it when it runs in
    the other one."""
    mode: ProxyMode = request.param
    dc.net.use_proxy_mode(mode)
    return mode


class App:
    """One test's pods (``<name>-<suffix>``, labelled ``app=<name>``) and Services; all deleted
    (pods forced, their namespaces removed) when the test ends."""

    def __init__(self, dc: DataplaneCluster, name: str) -> None:
        self.dc, self.name = dc, name
        self.labels = {"app": name}
        self.pods: list[str] = []
        self.services: list[str] = []

    def pod(self, suffix: str, *, node: str = "node-a", ready: bool = True) -> str:
        name = f"{self.name}-{suffix}"
        self.pods.append(name)
        self.dc.add_pod(name, self.labels, node=node, ready=ready)
        return name

    def twins(self, **spec: Any) -> tuple[str, str]:
        ours, kcm = self.dc.twins(self.name, self.labels, **spec)
        self.services += [ours, kcm]
        return ours, kcm

    def opted_in(self, suffix: str, **kwargs: Any) -> str:
        key = self.dc.opted_in(f"{self.name}-{suffix}", self.labels, **kwargs)
        self.services.append(key)
        return key

    def ips(self, *pods: str) -> tuple[str, ...]:
        return self.dc.ips(*pods)

    def cleanup(self) -> None:
        for key in self.services:
            name = key.split("/", 1)[1].split(":", 1)[0]
            self.dc.call("DELETE", self.dc.ns_path("services", name), ok=(404,))
        for pod in self.pods:
            self.dc.force_delete(pod)


@pytest.fixture
def app(dc: DataplaneCluster, request: pytest.FixtureRequest) -> Iterator[App]:
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower().removeprefix("test_"))
    application = App(dc, f"{stem[:20].strip('-')}-{secrets.token_hex(2)}")
    try:
        yield application
    finally:
        application.cleanup()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed data-plane test shows the end of the operator's and kube-proxy's logs."""
    report = yield
    if (
        report.failed
        and item.get_closest_marker("dataplane") is not None
        and "dc" in getattr(item, "funcargs", {})
    ):
        cluster: DataplaneCluster = item.funcargs["dc"]  # type: ignore[attr-defined]
        for title, path in (
            ("operator log", cluster.operator_log),
            (f"kube-proxy log ({cluster.net.proxy_mode})", cluster.net.log("kube-proxy")),
        ):
            if path.is_file():
                report.sections.append((title, path.read_text(errors="replace")[-4000:]))
    return report
