"""Label and annotation keys written on EndpointSlices, and the labels callback.

All label/annotation constants of the reconciler live here. The labels callback follows the
KEP-4770 generic-reconciler design: the planner does not know where slice labels come from, it
asks a callback given the labels a slice has now (``None`` for a new slice).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "ANNOTATION_TOPOLOGY_AWARE_HINTS",
    "ANNOTATION_TOPOLOGY_MODE",
    "LABEL_HEADLESS",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "LABEL_TOPOLOGY_ZONE",
    "LAST_CHANGE_TRIGGER_TIME",
    "RESERVED_LABEL_KEYS",
    "UPSTREAM_CONTROLLER_NAME",
    "LabelsFunc",
    "format_trigger_time",
    "is_service_ip_set",
    "labels_from_service",
]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
ANNOTATION_TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
ANNOTATION_TOPOLOGY_AWARE_HINTS = "service.kubernetes.io/topology-aware-hints"
UPSTREAM_CONTROLLER_NAME = "endpointslice-controller.k8s.io"

RESERVED_LABEL_KEYS = frozenset({LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS})

LabelsFunc = Callable[[Mapping[str, str] | None, str], tuple[dict[str, str], bool]]
"""``labels(current_slice_labels, controller_name) -> (desired_labels, changed)``.

``current_slice_labels`` is ``None`` for a slice being built from scratch. ``changed`` tells
the planner whether the labels alone justify rewriting an otherwise unchanged slice.
"""


def is_service_ip_set(service: Mapping[str, Any]) -> bool:
    """True unless the Service is headless (clusterIP ``None``) or has no clusterIP."""
    spec = service.get("spec")
    cluster_ip = spec.get("clusterIP") if isinstance(spec, Mapping) else None
    return isinstance(cluster_ip, str) and cluster_ip not in ("", "None")


def _user_labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    if not labels:
        return {}
    return {k: v for k, v in labels.items() if k not in RESERVED_LABEL_KEYS}


def labels_from_service(service: Mapping[str, Any]) -> LabelsFunc:
    """The upstream label rules (``setEndpointSliceLabels``) as a labels callback.

    Desired labels are the Service's labels minus the reserved keys, plus the service-name and
    managed-by labels and, for a Service without a cluster IP, the headless label ``""``.
    Only the non-reserved labels are compared to decide ``changed``: like upstream, a change of
    the headless label alone does not rewrite a slice.
    """
    metadata = service.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    raw_labels = metadata.get("labels")
    service_labels = _user_labels(raw_labels if isinstance(raw_labels, Mapping) else None)
    name = metadata.get("name")
    service_name = name if isinstance(name, str) else ""
    headless = not is_service_ip_set(service)

    def labels(
        current: Mapping[str, str] | None, controller_name: str
    ) -> tuple[dict[str, str], bool]:
        changed = _user_labels(current) != service_labels
        desired = dict(service_labels)
        if headless:
            desired[LABEL_HEADLESS] = ""
        desired[LABEL_SERVICE_NAME] = service_name
        desired[LABEL_MANAGED_BY] = controller_name
        return desired, changed

    return labels


def format_trigger_time(moment: datetime) -> str:
    """Format like Go's ``t.UTC().Format(time.RFC3339Nano)``: trailing fraction zeros trimmed.

    A naive datetime is taken to be in UTC.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += "." + f"{moment.microsecond:06d}".rstrip("0")
    return text + "Z"
