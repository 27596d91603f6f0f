"""Every rendered object is valid against the Kubernetes OpenAPI schemas, in strict mode.

kubernetes-validate ships the schemas of every release, so this runs offline. It has none for
custom resources: the prometheus-operator ServiceMonitor and PodMonitor are checked field by
field in test_chart_render.py instead.
"""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from tests.ship.conftest import rendered

KUBERNETES_VERSIONS = ["1.25", "1.29", "1.36"]  # 1.25: the oldest schemas kubernetes-validate ships
CUSTOM_RESOURCE_GROUPS = {"monitoring.coreos.com/v1"}


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
def test_rendered_objects_are_valid(value_set: str, kubernetes_version: str) -> None:
    checked = 0
    for obj in rendered(value_set):
        if obj["apiVersion"] in CUSTOM_RESOURCE_GROUPS:
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):
                kubernetes_validate.validate(obj, kubernetes_version, strict=True)
            continue
        kubernetes_validate.validate(obj, kubernetes_version, strict=True)
        checked += 1
    assert checked >= 5


def test_strict_validation_catches_an_unknown_field() -> None:
    deployment: dict[str, Any] = copy.deepcopy(
        next(o for o in rendered("defaults") if o["kind"] == "Deployment")
    )
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, "1.33", strict=True)
