"""The ``scale`` subresource of Deployments and ReplicaSets: an autoscaling/v1 ``Scale`` view.

``kubectl scale`` sends a merge patch (or, with ``--current-replicas``/``--resource-version``,
a GET and a PUT) to ``.../deployments/NAME/scale``; the answer is a ``Scale`` whose
``spec.replicas`` is the parent's and whose ``status.selector`` is the parent's selector in
string form. Writes change only the parent's ``spec.replicas``.
"""

from __future__ import annotations

import copy
from typing import Any

from endpointslice_operator.testing.errors import ApiError, conflict, invalid
from endpointslice_operator.testing.resources import ResourceInfo
from endpointslice_operator.testing.validation import invalid_value

JSON = dict[str, Any]

_EXPRESSIONS = {"In": "in", "NotIn": "notin"}


def selector_text(selector: Any) -> str:
    """metav1.FormatLabelSelector: ``app=web,tier in (a,b),!canary``."""
    if not isinstance(selector, dict):
        return ""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        if operator in _EXPRESSIONS:
            parts.append(f"{key} {_EXPRESSIONS[operator]} ({values})")
        elif operator == "Exists":
            parts.append(key)
        elif operator == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def to_scale(obj: JSON) -> JSON:
    """The Scale view of a Deployment or ReplicaSet."""
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": selector_text(spec.get("selector")),
        },
    }


def scaled(info: ResourceInfo, obj: JSON, scale: Any) -> JSON:
    """The parent ``obj`` with the replica count of ``scale`` (a Scale body); 409 when the
    Scale carries a stale resourceVersion, 422 for a bad count."""
    if not isinstance(scale, dict) or scale.get("kind", "Scale") != "Scale":
        raise ApiError(400, "the body of a scale request must be an autoscaling/v1 Scale")
    name = obj["metadata"]["name"]
    scale_meta = scale.get("metadata") or {}
    # v1.36 takes the namespace from the URL when the Scale has none (v1.24 refused it: 422,
    # metadata.namespace Required; the conformance table names that difference).
    wanted = scale_meta.get("resourceVersion")
    if wanted and wanted != obj["metadata"]["resourceVersion"]:
        raise conflict(info.plural, info.group, name)
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise invalid(
            "Scale",
            "autoscaling",
            name,
            [invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")],
        )
    new = copy.deepcopy(obj)
    new.setdefault("spec", {})["replicas"] = replicas
    return new
