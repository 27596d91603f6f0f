"""`helm lint --strict` (Helm's own linter, in-process through helm-python-sdk) is clean."""

from __future__ import annotations

import helm_python as helm
import pytest

from scripts.render_manifests import CHART_DIR
from tests.ship.values import VALUE_SETS


@pytest.mark.parametrize("kube_version", ["v1.24.0", "v1.29.0", "v1.36.0"])
def test_lint_is_clean(value_set: str, kube_version: str) -> None:
    report = helm.lint(
        CHART_DIR,
        VALUE_SETS[value_set],
        strict=True,
        namespace="operators",
        kube_version=kube_version,
    )
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    assert report["messages"] == []


def test_lint_reports_a_broken_value() -> None:
    report = helm.lint(CHART_DIR, {"workers": 0}, strict=True)
    assert report["errors"] or any(m["severity"] == 3 for m in report["messages"])
