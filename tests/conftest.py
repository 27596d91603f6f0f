"""Suite-wide rules for the tests that need a real server or a real data plane.

* ``@pytest.mark.k8s_min("1.30")`` / ``@pytest.mark.k8s_below("1.34")``: the test is about a
  feature a server of that version has (or lacks). Against the control plane of
  ``KUBEBUILDER_ASSETS`` (its ``kube-apiserver --version``) a test whose range excludes that
  version is *deselected*, not skipped: it does not apply there. Against an existing cluster
  (``ESO_TEST_KUBECONFIG``) every test runs unless ``ESO_TEST_K8S_VERSION`` (``1.31``) says
  otherwise.
* With ``CI=true`` a ``realcluster``, ``dataplane`` or ``node`` test that is skipped is a
  **failure**: CI must not be green when the real tests did not run. Elsewhere they skip with
  one reason each.
* A run that skipped real-server tests ends with one line saying so and how to run them.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import missing_assets, server_version

REAL_MARKERS = ("realcluster", "dataplane", "node")
HOW_TO_RUN = (
    "run them with KUBEBUILDER_ASSETS=$(../shared/envtest/assets v1.36) "
    "(as root for the data plane and the node layer, docs/testing.md), "
    "or ESO_TEST_KUBECONFIG=<kubeconfig>"
)


def _parse(version: str) -> tuple[int, int]:
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", version.strip())
    if match is None:
        raise pytest.UsageError(f"not a Kubernetes version: {version!r} (expected like 1.30)")
    return int(match.group(1)), int(match.group(2))


@functools.cache
def target_version() -> tuple[int, int] | None:
    """The version of the real server the tests would run against (``None``: unknown)."""
    explicit = os.environ.get("ESO_TEST_K8S_VERSION")
    if explicit:
        return _parse(explicit)
    if os.environ.get("ESO_TEST_KUBECONFIG"):
        return None
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if not assets or missing_assets(Path(assets).resolve()) is not None:
        return None
    return server_version(Path(assets).resolve())


def ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "k8s_min(version): only against a server of this version or newer"
    )
    config.addinivalue_line(
        "markers", "k8s_below(version): only against a server older than this version"
    )


def _applies(item: pytest.Item, version: tuple[int, int]) -> bool:
    for marker in item.iter_markers("k8s_min"):
        if version < _parse(str(marker.args[0])):
            return False
    return all(version < _parse(str(m.args[0])) for m in item.iter_markers("k8s_below"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    version = target_version()
    if version is None:
        return
    kept = [item for item in items if _applies(item, version)]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def _real(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) is not None for name in REAL_MARKERS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and _real(item):
        report.user_properties.append(("real_skipped", True))
        if ci() and not hasattr(report, "wasxfail"):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            report.outcome = "failed"
            report.longrepr = f"CI=true: a real-server test may not be skipped ({reason})"


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if ("real_skipped", True) in getattr(report, "user_properties", [])
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} real-server, data-plane or node tests were skipped; {HOW_TO_RUN}",
            yellow=True,
            bold=True,
        )
