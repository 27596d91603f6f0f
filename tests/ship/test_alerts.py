"""The shipped alerting rules: `promtool test rules` on them, the metrics and labels they read
exist, and the chart's PrometheusRule carries exactly these rules."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts.render_manifests import ALERTS_CHART_COPY, ALERTS_SOURCE
from tests.ship.conftest import rendered
from tests.ship.exposition import exported_samples
from tests.ship.values import one

TESTS = Path(__file__).with_name("alerts.test.yaml")
METRIC = re.compile(
    r"\b(endpoint_slice_controller_\w+|endpoint_slice_mirroring_controller_\w+|workqueue_\w+"
    r"|endpointslice_operator_\w+)"
)
#: Labels a scrape adds (Prometheus' `job` and `instance`; `namespace` from Kubernetes discovery).
SCRAPE_LABELS = {"job", "instance", "namespace"}


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS_SOURCE.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_promtool_unit_tests_pass() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        message = "promtool is not installed (Debian package `prometheus`; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    result = subprocess.run(
        [promtool, "test", "rules", str(TESTS)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    checked = subprocess.run(
        [promtool, "check", "rules", str(ALERTS_SOURCE)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_alert_is_unit_tested() -> None:
    tests = yaml.safe_load(TESTS.read_text(encoding="utf-8"))
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert {rule["alert"] for rule in _rules()} == firing


def test_rules_read_exported_metrics_and_labels() -> None:
    exported = exported_samples()
    for rule in _rules():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        names = METRIC.findall(rule["expr"])
        assert names, rule["alert"]
        for name in names:
            assert name in exported, f"{rule['alert']}: {name} is not exported"
        for name, matchers in re.findall(r"(\w+)\{([^}]*)\}", rule["expr"]):
            for label in re.findall(r"(\w+)\s*=~?", matchers):
                assert label in exported[name] | SCRAPE_LABELS, (rule["alert"], name, label)
        for grouping in re.findall(r"(?:by|on) \(([^)]*)\)", rule["expr"]):
            for key in filter(None, (k.strip() for k in grouping.split(","))):
                assert any(key in exported[n] | SCRAPE_LABELS for n in names), (rule, key)


def test_the_chart_ships_the_same_rules() -> None:
    assert ALERTS_CHART_COPY.read_text(encoding="utf-8") == ALERTS_SOURCE.read_text(
        encoding="utf-8"
    )
    objects = rendered("monitors")
    prometheus_rule = one(objects, "PrometheusRule")
    assert prometheus_rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert prometheus_rule["metadata"]["namespace"] == "operators"
    assert prometheus_rule["metadata"]["labels"]["release"] == "prometheus"
    source = yaml.safe_load(ALERTS_SOURCE.read_text(encoding="utf-8"))
    assert prometheus_rule["spec"] == source
    # Off by default: the CRD it needs is prometheus-operator's.
    assert not [obj for obj in rendered("defaults") if obj["kind"] == "PrometheusRule"]
