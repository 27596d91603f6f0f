"""Render the Helm chart offline and keep the generated copies in the repository in sync.

``python -m scripts.render_manifests`` rewrites:

* ``deploy/endpointslice-operator.yaml``: the chart rendered with its default values (release
  ``endpointslice-operator`` in namespace ``endpointslice-operator``), for ``kubectl apply``,
  without the EndpointSelector CRD (applied on its own from ``deploy/crds/``, so that
  ``kubectl delete -f deploy/`` leaves it and the users' EndpointSelectors);
* ``chart/dashboards/endpointslice-operator.json``: a copy of the Grafana dashboard whose
  source of truth is ``docs/dashboards/endpointslice-operator.json`` (Helm's ``.Files`` only
  reads files inside the chart directory);
* ``chart/files/alerts/endpointslice-operator.rules.yaml``: a copy of the Prometheus alerting
  rules whose source of truth is ``docs/alerts/endpointslice-operator.rules.yaml`` (the chart's
  PrometheusRule, behind ``metrics.prometheusRule.enabled``);
* ``chart/files/crds/*.yaml``: copies of the CRDs of ``deploy/crds/`` (EndpointSelector,
  behind ``endpointSelectors.installCRD``; the Multi-Cluster Services ones, behind
  ``multicluster.installCRDs``).

``--check`` writes nothing and exits 1 when a generated file is out of date. Rendering uses
Helm's own Go template engine through ``helm-python-sdk`` (libhelm bundled in the wheel), so
no ``helm`` binary is needed. The tests in ``tests/ship/`` use the same functions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART_DIR = ROOT / "chart"
DEPLOY_MANIFEST = ROOT / "deploy" / "endpointslice-operator.yaml"
DASHBOARD_SOURCE = ROOT / "docs" / "dashboards" / "endpointslice-operator.json"
DASHBOARD_CHART_COPY = CHART_DIR / "dashboards" / "endpointslice-operator.json"
ALERTS_SOURCE = ROOT / "docs" / "alerts" / "endpointslice-operator.rules.yaml"
ALERTS_CHART_COPY = CHART_DIR / "files" / "alerts" / "endpointslice-operator.rules.yaml"
CRD_SOURCE_DIR = ROOT / "deploy" / "crds"
CRD_CHART_DIR = CHART_DIR / "files" / "crds"

RELEASE_NAME = "endpointslice-operator"
RELEASE_NAMESPACE = "endpointslice-operator"

# Helm's install order (pkg/release/util/kind_sorter.go), restricted to what a chart like ours
# can render; kinds not listed go last. Plain `kubectl apply -f` then creates the
# ServiceAccount and RBAC before the Deployment that uses them, as `helm install` would.
_INSTALL_ORDER = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "ConfigMap",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicaSet",
    "Deployment",
    "StatefulSet",
    "Job",
    "CronJob",
)

HEADER = """\
# endpointslice-operator: plain manifests, generated from chart/ with its default values by
#   python -m scripts.render_manifests
# but for the EndpointSelector CRD, which is applied on its own (so that `kubectl delete -f
# deploy/` never deletes it, and with it every EndpointSelector):
#   kubectl apply -f deploy/crds/endpointselectors.endpointslice-operator.io.yaml
# Do not edit by hand (a test checks this file equals the render). Apply with:
#   kubectl apply -f deploy/
# (deploy/00-namespace.yaml creates the namespace first).
"""
#: The chart's values for deploy/: its defaults, the EndpointSelector CRD left out.
DEPLOY_VALUES: dict[str, Any] = {"endpointSelectors": {"installCRD": False}}


def render_documents(
    values: Mapping[str, Any] | None = None,
    *,
    name: str = RELEASE_NAME,
    namespace: str = RELEASE_NAMESPACE,
) -> list[tuple[str, str]]:
    """Render the chart; return ``(template path, YAML text)`` per object in install order.

    Empty documents (disabled templates) are dropped and ``NOTES.txt`` is left out.
    """
    with helm.Chart.load(CHART_DIR) as chart:
        rendered = chart.render(
            dict(values) if values is not None else None,
            name=name,
            namespace=namespace,
            is_install=True,
        )
    documents: list[tuple[str, str]] = []
    for template in sorted(rendered):
        if template.endswith("NOTES.txt"):
            continue
        for chunk in rendered[template].split("\n---"):
            text = chunk.strip("\n")
            if text.startswith("---"):
                text = text[3:].strip("\n")
            if yaml.safe_load(text) is None:
                continue
            documents.append((template, text))
    documents.sort(key=lambda item: _order(yaml.safe_load(item[1])["kind"]))
    return documents


def render_objects(
    values: Mapping[str, Any] | None = None,
    *,
    name: str = RELEASE_NAME,
    namespace: str = RELEASE_NAMESPACE,
) -> list[dict[str, Any]]:
    """The rendered objects, parsed, in install order; a ``List`` (the uninstall hook, one
    hook of several objects) stands for its items, each given the List's annotations."""
    objects: list[dict[str, Any]] = []
    for _, text in render_documents(values, name=name, namespace=namespace):
        obj = yaml.safe_load(text)
        if obj.get("kind") == "List":
            annotations = obj["metadata"].get("annotations") or {}
            for item in obj.get("items") or ():
                item["metadata"]["annotations"] = {
                    **annotations,
                    **(item["metadata"].get("annotations") or {}),
                }
                objects.append(item)
        else:
            objects.append(obj)
    return objects


def render_notes(values: Mapping[str, Any] | None = None) -> str:
    """The rendered NOTES.txt."""
    with helm.Chart.load(CHART_DIR) as chart:
        rendered = chart.render(
            dict(values) if values is not None else None,
            name=RELEASE_NAME,
            namespace=RELEASE_NAMESPACE,
            is_install=True,
        )
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def default_manifest() -> str:
    """The text ``deploy/endpointslice-operator.yaml`` must have."""
    parts = [
        f"# Source: {template}\n{text}\n" for template, text in render_documents(DEPLOY_VALUES)
    ]
    return HEADER + "---\n" + "---\n".join(parts)


def _order(kind: str) -> int:
    return _INSTALL_ORDER.index(kind) if kind in _INSTALL_ORDER else len(_INSTALL_ORDER)


def generated_files() -> dict[Path, str]:
    """Path relative to the repository root -> the text that file must have."""
    files = {
        DEPLOY_MANIFEST.relative_to(ROOT): default_manifest(),
        DASHBOARD_CHART_COPY.relative_to(ROOT): DASHBOARD_SOURCE.read_text(encoding="utf-8"),
        ALERTS_CHART_COPY.relative_to(ROOT): ALERTS_SOURCE.read_text(encoding="utf-8"),
    }
    for crd in sorted(CRD_SOURCE_DIR.glob("*.yaml")):
        files[(CRD_CHART_DIR / crd.name).relative_to(ROOT)] = crd.read_text(encoding="utf-8")
    return files


def stale_files(root: Path = ROOT) -> list[Path]:
    """The generated files under ``root`` that are missing or differ from a fresh render."""
    return [
        path
        for path, text in generated_files().items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    stale = stale_files()
    if args.check:
        for path in stale:
            print(f"out of date: {path}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in generated_files().items():
        (ROOT / path).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / path).write_text(text, encoding="utf-8")
    for path in stale:
        print(f"rewrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
