"""The Grafana dashboard queries only metrics the operator exports, with their real labels."""

from __future__ import annotations

import json
import re
from typing import Any

from scripts.render_manifests import DASHBOARD_SOURCE
from tests.ship.exposition import exported_samples

METRIC = re.compile(
    r"\b(endpoint_slice_controller_\w+|endpoint_slice_mirroring_controller_\w+|workqueue_\w+"
    r"|endpointslice_operator_\w+)"
)
SELECTOR = re.compile(r"(\w+)\{([^}]*)\}")


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))
    return panels


def test_dashboard_queries_exported_metrics_and_labels() -> None:
    dashboard = json.loads(DASHBOARD_SOURCE.read_text(encoding="utf-8"))
    exported = exported_samples()
    queried: set[str] = set()
    for panel in _panels(dashboard):
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name in METRIC.findall(expr):
                assert name in exported, f"{panel['title']}: {name} is not exported"
                queried.add(name)
            for name, matchers in SELECTOR.findall(expr):
                if name in exported:
                    for label in re.findall(r"(\w+)\s*=~?", matchers):
                        # `job` and `instance` are added by Prometheus at scrape time.
                        assert label in exported[name] | {"job", "instance"}, (name, label)
            names = METRIC.findall(expr)
            for grouping in re.findall(r"by \(([^)]*)\)", expr):
                for key in (k.strip() for k in grouping.split(",")):
                    # Grouped by a label that at least one queried series carries.
                    scrape_labels = {"job", "instance", "le"}
                    assert any(key in exported[n] | scrape_labels for n in names), (expr, key)
    # Every family the operator exports is on the dashboard.
    families = {re.sub(r"_(bucket|sum|count)$", "", name) for name in exported}
    shown = {re.sub(r"_(bucket|sum|count)$", "", name) for name in queried}
    assert families <= shown, families - shown


def test_dashboard_is_importable() -> None:
    dashboard = json.loads(DASHBOARD_SOURCE.read_text(encoding="utf-8"))
    assert dashboard["uid"] == "endpointslice-operator"
    ids = [panel["id"] for panel in _panels(dashboard)]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "job"}
    for panel in _panels(dashboard):
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
