"""deploy/ is the chart rendered with defaults; the examples are valid and opted in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from endpointslice_operator.controller.cache.optin import SelectorSource, Status, evaluate
from endpointslice_operator.controller.endpoint_selector.index import (
    validate as validate_endpoint_selector,
)
from endpointslice_operator.reconciler.endpoint_selector import (
    API_VERSION as ENDPOINT_SELECTOR_API_VERSION,
)
from endpointslice_operator.settings import Settings
from scripts import render_manifests
from scripts.render_manifests import (
    CRD_CHART_DIR,
    CRD_SOURCE_DIR,
    DASHBOARD_CHART_COPY,
    DASHBOARD_SOURCE,
    DEPLOY_MANIFEST,
    ROOT,
    default_manifest,
    render_objects,
)

EXAMPLES = sorted((ROOT / "deploy" / "examples").glob("*.yaml"))
STALE = "out of date: run `python -m scripts.render_manifests`"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def test_deploy_manifest_equals_the_default_render() -> None:
    assert DEPLOY_MANIFEST.read_text(encoding="utf-8") == default_manifest(), STALE


def test_chart_dashboard_is_the_docs_dashboard() -> None:
    assert DASHBOARD_CHART_COPY.read_bytes() == DASHBOARD_SOURCE.read_bytes(), STALE


def test_chart_crd_is_the_deploy_crd_and_rendered_kept() -> None:
    source_path = CRD_SOURCE_DIR / "endpointselectors.endpointslice-operator.io.yaml"
    assert (CRD_CHART_DIR / source_path.name).read_bytes() == source_path.read_bytes(), STALE
    (crd,) = [o for o in render_objects() if o["kind"] == "CustomResourceDefinition"]
    (source,) = _documents(source_path)
    assert crd["spec"] == source["spec"]
    # Uninstalling must not delete the CRD (and with it every EndpointSelector): helm keeps
    # it, and deploy/ leaves it out (applied on its own, so `kubectl delete -f deploy/` never
    # deletes it).
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert [o for o in _documents(DEPLOY_MANIFEST) if o["kind"] == "CustomResourceDefinition"] == []
    kubernetes_validate.validate(source, "1.33", strict=True)


def test_a_stale_or_missing_generated_file_is_reported(tmp_path: Path) -> None:
    assert render_manifests.stale_files() == []
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "endpointslice-operator.yaml").write_text("# edited\n", encoding="utf-8")
    assert render_manifests.stale_files(tmp_path) == [
        Path("deploy/endpointslice-operator.yaml"),
        Path("chart/dashboards/endpointslice-operator.json"),
        Path("chart/files/alerts/endpointslice-operator.rules.yaml"),
        Path("chart/files/crds/clusterproperties.about.k8s.io.yaml"),
        Path("chart/files/crds/endpointselectors.endpointslice-operator.io.yaml"),
        Path("chart/files/crds/serviceexports.multicluster.x-k8s.io.yaml"),
        Path("chart/files/crds/serviceimports.multicluster.x-k8s.io.yaml"),
    ]


def test_deploy_objects_install_into_the_deploy_namespace() -> None:
    (namespace,) = _documents(ROOT / "deploy" / "00-namespace.yaml")
    assert namespace["kind"] == "Namespace"
    # kubectl apply -f deploy/ reads files in name order: the namespace comes first.
    assert sorted(p.name for p in (ROOT / "deploy").glob("*.yaml"))[0] == "00-namespace.yaml"
    for obj in [*_documents(DEPLOY_MANIFEST), namespace]:
        kubernetes_validate.validate(obj, "1.33", strict=True)
        if obj["kind"] not in {
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
        }:
            assert obj["metadata"]["namespace"] == namespace["metadata"]["name"]
    # The namespace enforces the "restricted" Pod Security Standard the operator meets.
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_deploy_service_account_comes_before_the_deployment() -> None:
    kinds = [obj["kind"] for obj in _documents(DEPLOY_MANIFEST)]
    assert kinds.index("ServiceAccount") < kinds.index("ClusterRoleBinding")
    assert kinds.index("ClusterRoleBinding") < kinds.index("Deployment")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("kubernetes_version", ["1.25", "1.29", "1.36"])
def test_examples_are_valid(path: Path, kubernetes_version: str) -> None:
    for obj in _documents(path):
        if obj["apiVersion"] == ENDPOINT_SELECTOR_API_VERSION:
            # Not a built-in kind: the operator's own check here, the CRD's schema on a real
            # kube-apiserver in tests/realcluster/test_endpoint_selectors.py.
            assert validate_endpoint_selector(obj)[1] == []
            continue
        kubernetes_validate.validate(obj, kubernetes_version, strict=True)


def test_example_service_is_opted_in_selectorless_and_selects_the_deployment() -> None:
    assert EXAMPLES, "deploy/examples/ is empty"
    objects = [obj for path in EXAMPLES for obj in _documents(path)]
    services = [obj for obj in objects if obj["kind"] == "Service"]
    deployments = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Deployment"}
    assert services and deployments
    settings = Settings.model_construct()
    for service in services:
        # Selectorless: kube-controller-manager leaves it alone.
        assert "selector" not in service["spec"]
        decision = evaluate(
            service,
            enabled_annotation=settings.enabled_annotation,
            selector_annotation=settings.selector_annotation,
            managed_by=settings.managed_by,
        )
        assert decision.status is Status.MANAGED and decision.source is SelectorSource.ANNOTATION
        assert decision.selector is not None
        pod = deployments[service["metadata"]["name"]]["spec"]["template"]
        assert decision.selector.matches(pod["metadata"]["labels"])
        named_ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in named_ports
