"""``plan_endpoint_selector``: EndpointSlices for an EndpointSelector (KEP-6116's shape).

The object is read as a Service would be and goes through the same planner, except:
``spec.ports[].port`` (or its alias ``targetPort``) is a Service port's ``targetPort``;
``spec.ipFamilies`` filters families; the labels (:func:`labels_from_endpoint_selector`) carry
``kubernetes.io/endpoint-selector-name`` (KEP-6116's, unless switched off) and carry
``kubernetes.io/service-name`` only when a Service is its controller (KEP-6116's rule); hints
come from ``spec.trafficSettings.trafficDistribution``. See docs/endpointselector.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .config import ReconcilerConfig
from .desired import IPV4, IPV6, NodesArg, desired_from_service_pods
from .labels import LABEL_HEADLESS, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LabelsFunc
from .plan import Plan
from .planner import Reconciler
from .ports import find_port, service_ports
from .records import PodRecord, pod_record
from .sources import AddressSource

__all__ = [
    "API_VERSION",
    "GROUP",
    "KIND",
    "LABEL_ENDPOINT_SELECTOR_NAME",
    "LABEL_KEP6116_ENDPOINT_SELECTOR_NAME",
    "PLURAL",
    "RESERVED_LABEL_KEYS",
    "VERSION",
    "as_service",
    "controlling_service",
    "labels_from_endpoint_selector",
    "plan_endpoint_selector",
    "unresolved_ports",
]

GROUP = "endpointslice-operator.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "EndpointSelector"
PLURAL = "endpointselectors"
LABEL_ENDPOINT_SELECTOR_NAME = "endpointslice-operator.io/endpoint-selector-name"
LABEL_KEP6116_ENDPOINT_SELECTOR_NAME = "kubernetes.io/endpoint-selector-name"
RESERVED_LABEL_KEYS = frozenset(
    {
        LABEL_SERVICE_NAME,
        LABEL_MANAGED_BY,
        LABEL_HEADLESS,
        LABEL_ENDPOINT_SELECTOR_NAME,
        LABEL_KEP6116_ENDPOINT_SELECTOR_NAME,
    }
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def controlling_service(selector: Mapping[str, Any]) -> str | None:
    """The name of the Service that is the EndpointSelector's controller owner, else None."""
    refs = _mapping(selector.get("metadata")).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("kind") == "Service"
            and ref.get("apiVersion") == "v1"
            and isinstance(ref.get("name"), str)
        ):
            return str(ref["name"])
    return None


def labels_from_endpoint_selector(
    selector: Mapping[str, Any], *, kep6116_labels: bool = True
) -> LabelsFunc:
    """The labels callback for an EndpointSelector's slices (see the module docstring)."""
    metadata = _mapping(selector.get("metadata"))
    raw = _mapping(metadata.get("labels"))
    own = {k: v for k, v in raw.items() if k not in RESERVED_LABEL_KEYS and isinstance(v, str)}
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    service = controlling_service(selector)

    def labels(
        current: Mapping[str, str] | None, controller_name: str
    ) -> tuple[dict[str, str], bool]:
        current_own = {k: v for k, v in (current or {}).items() if k not in RESERVED_LABEL_KEYS}
        desired = dict(own)
        desired[LABEL_MANAGED_BY] = controller_name
        desired[LABEL_ENDPOINT_SELECTOR_NAME] = str(name)
        if kep6116_labels:
            desired[LABEL_KEP6116_ENDPOINT_SELECTOR_NAME] = str(name)
        if service is not None:
            desired[LABEL_SERVICE_NAME] = service
        # Reserved labels of ours that are wrong (the KEP label switched on or off, a Service
        # owner come or gone) rewrite the slice too.
        reserved_now = {k: v for k, v in (current or {}).items() if k in RESERVED_LABEL_KEYS}
        reserved_wanted = {k: v for k, v in desired.items() if k in RESERVED_LABEL_KEYS}
        return desired, current_own != own or reserved_now != reserved_wanted

    return labels


def _families(spec: Mapping[str, Any], pods: list[PodRecord]) -> list[str]:
    wanted = spec.get("ipFamilies")
    if isinstance(wanted, list) and wanted:
        return [family for family in (IPV4, IPV6) if family in wanted]
    found = [
        family
        for family, present in (
            (IPV4, any(pod.ipv4 for pod in pods)),
            (IPV6, any(pod.ipv6 for pod in pods)),
        )
        if present
    ]
    return found or [IPV4]


def _service_port(port: Any) -> Any:
    """A port of ``spec.ports`` as a Service port: ``port`` (KEP-6116's field) or its alias
    ``targetPort`` (a Service's spelling) is the target; the planner reads ``targetPort``."""
    if not isinstance(port, Mapping):
        return port
    target = port.get("port", port.get("targetPort"))
    return {**port, "port": target, "targetPort": target}


def as_service(selector: Mapping[str, Any], pods: list[PodRecord]) -> dict[str, Any]:
    """The EndpointSelector as the Service-shaped owner the planner reads: its metadata, kind
    and apiVersion (for the ownerReference), and the spec fields a Service would carry."""
    spec = _mapping(selector.get("spec"))
    traffic = _mapping(spec.get("trafficSettings")).get("trafficDistribution")
    service_spec: dict[str, Any] = {
        "clusterIP": "None",
        "ports": [_service_port(port) for port in spec.get("ports") or []],
        "ipFamilies": _families(spec, pods),
        "publishNotReadyAddresses": spec.get("publishNotReadyAddresses") is True,
    }
    if isinstance(traffic, str):
        service_spec["trafficDistribution"] = traffic
    return {
        "apiVersion": selector.get("apiVersion") or API_VERSION,
        "kind": selector.get("kind") or KIND,
        "metadata": dict(_mapping(selector.get("metadata"))),
        "spec": service_spec,
    }


def plan_endpoint_selector(
    selector: Mapping[str, Any],
    pods: Iterable[PodRecord | Mapping[str, Any]],
    nodes: NodesArg,
    existing_slices: Iterable[Mapping[str, Any]],
    config: ReconcilerConfig,
    *,
    trigger_time: datetime | None = None,
    kep6116_labels: bool = True,
    source: AddressSource | None = None,
) -> Plan:
    """Plan the EndpointSlice writes for one EndpointSelector.

    ``pods`` are the pods its selector matches (JSON or ``PodRecord``), ``nodes`` the Nodes,
    ``existing_slices`` its slices managed by ``config.controller_name`` (not being deleted).
    The selector itself is not evaluated here: the caller picks the pods (the operator through
    its pod index, ``plan`` from the manifests given).
    """
    records = [pod if isinstance(pod, PodRecord) else pod_record(pod) for pod in pods]
    owner = as_service(selector, records)
    desired = desired_from_service_pods(owner, records, nodes, source)
    traffic = owner["spec"].get("trafficDistribution")
    return Reconciler(config, None).plan(
        owner,
        desired,
        existing_slices,
        traffic_distribution=traffic if isinstance(traffic, str) else None,
        labels=labels_from_endpoint_selector(selector, kep6116_labels=kep6116_labels),
        trigger_time=trigger_time,
    )


def unresolved_ports(selector: Mapping[str, Any], pods: list[PodRecord]) -> list[str]:
    """The named ports of ``spec.ports`` (``name/protocol``) that no selected pod has (as
    upstream's ``FindPort`` resolves them, sidecars included): the slices publish such a port
    for no endpoint. Empty when no pod is selected (nothing to resolve against)."""
    if not pods:
        return []
    errors: list[str] = []
    return [
        f"{port.target}/{port.protocol}"
        for port in service_ports(as_service(selector, pods), errors)
        if isinstance(port.target, str) and all(find_port(pod, port) is None for pod in pods)
    ]
