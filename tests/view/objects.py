"""Builders of Services and EndpointSlices for the view's tests (plain dicts)."""

from __future__ import annotations

from typing import Any

NS = "view"
VIEW = "endpointslice-operator.io/view"
KCM = "endpointslice-controller.k8s.io"
OURS = "endpointslice-operator.io"

JSON = dict[str, Any]


def service(
    name: str,
    ports: list[tuple[str, int]] | None = None,
    *,
    namespace: str = NS,
    annotated: bool = True,
    labels: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    protocol: str = "TCP",
) -> JSON:
    metadata: JSON = {"name": name, "namespace": namespace, "labels": labels or {}}
    if annotated:
        metadata["annotations"] = {VIEW: "true"}
    spec: JSON = {
        "ports": [
            {"name": port_name, "port": port, "protocol": protocol, "targetPort": port + 8000}
            for port_name, port in (ports if ports is not None else [("http", 80)])
        ]
    }
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def endpoint(
    address: str,
    *,
    ready: bool | None = True,
    serving: bool | None = None,
    terminating: bool | None = None,
    node: str | None = "node-a",
    zone: str | None = None,
    pod: str | None = None,
    hints: list[str] | None = None,
) -> JSON:
    conditions: JSON = {}
    for key, value in (("ready", ready), ("serving", serving), ("terminating", terminating)):
        if value is not None:
            conditions[key] = value
    found: JSON = {"addresses": [address], "conditions": conditions}
    if node is not None:
        found["nodeName"] = node
    if zone is not None:
        found["zone"] = zone
    if pod is not None:
        found["targetRef"] = {"kind": "Pod", "name": pod, "namespace": NS}
    if hints is not None:
        found["hints"] = {"forZones": [{"name": z} for z in hints]}
    return found


def endpoint_slice(
    name: str,
    service_name: str,
    endpoints: list[JSON],
    *,
    ports: list[tuple[str, int]] | None = None,
    managed_by: str = KCM,
    namespace: str = NS,
    version: str = "",
    protocol: str = "TCP",
) -> JSON:
    metadata: JSON = {
        "name": name,
        "namespace": namespace,
        "labels": {
            "kubernetes.io/service-name": service_name,
            "endpointslice.kubernetes.io/managed-by": managed_by,
        },
    }
    if version:
        metadata["resourceVersion"] = version
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": metadata,
        "addressType": "IPv4",
        "ports": [
            {"name": port_name, "port": port, "protocol": protocol}
            for port_name, port in (ports if ports is not None else [("http", 8080)])
        ],
        "endpoints": endpoints,
    }
