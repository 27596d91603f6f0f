"""Defaulting done by kube-apiserver on create and update for the kinds the emulator serves.

Only the defaults that clients of these resources observe are applied: Service cluster IPs and
IP families, port protocols and target ports, Pod scheduling/termination fields, Namespace
phase and name label, EndpointSlice port names and protocols.
"""

from __future__ import annotations

import ipaddress
from typing import Any

JSON = dict[str, Any]


class ClusterIPAllocator:
    """Hands out Service cluster IPs from a range, sequentially, never reusing one in use."""

    def __init__(self, cidr: str = "10.96.0.0/12") -> None:
        self.network = ipaddress.ip_network(cidr)
        self._next = 10  # the first addresses are kept for kubernetes/kube-dns, as in clusters
        self._used: set[str] = set()

    def allocate(self) -> str:
        size = self.network.num_addresses
        for _ in range(size):
            candidate = str(self.network.network_address + self._next)
            self._next = self._next + 1 if self._next + 2 < size else 1
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate
        raise RuntimeError("service cluster IP range is exhausted")

    def reserve(self, ip: str) -> None:
        self._used.add(ip)

    def release(self, ip: str) -> None:
        self._used.discard(ip)


def default_service(obj: JSON, old: JSON | None, allocator: ClusterIPAllocator) -> None:
    spec = obj.setdefault("spec", {})
    service_type = spec.setdefault("type", "ClusterIP")
    if service_type != "ExternalName":
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if service_type in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        if service_type != "ExternalName":
            port.setdefault("targetPort", port.get("port"))
    if service_type == "ExternalName":
        return
    old_spec = (old or {}).get("spec") or {}
    cluster_ip = spec.get("clusterIP") or old_spec.get("clusterIP")
    if not cluster_ip:
        cluster_ip = allocator.allocate()
    elif cluster_ip != "None" and old is None:
        allocator.reserve(cluster_ip)
    spec["clusterIP"] = cluster_ip
    spec.setdefault("clusterIPs", old_spec.get("clusterIPs") or [cluster_ip])
    if "ipFamilies" not in spec:
        if old_spec.get("ipFamilies"):
            spec["ipFamilies"] = old_spec["ipFamilies"]
        elif cluster_ip == "None":
            spec["ipFamilies"] = ["IPv4"]
        else:
            version = ipaddress.ip_address(cluster_ip).version
            spec["ipFamilies"] = [f"IPv{version}"]
    spec.setdefault("ipFamilyPolicy", old_spec.get("ipFamilyPolicy") or "SingleStack")


def default_pod(obj: JSON, old: JSON | None) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for port in container.get("ports") or []:
            port.setdefault("protocol", "TCP")


def default_namespace(obj: JSON, old: JSON | None) -> None:
    meta = obj.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    meta["labels"] = labels
    obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    obj.setdefault("status", {}).setdefault("phase", "Active")


def default_endpoint_slice(obj: JSON, old: JSON | None) -> None:
    for port in obj.get("ports") or []:
        port.setdefault("name", "")
        port.setdefault("protocol", "TCP")
    endpoints = obj.get("endpoints")
    for endpoint in endpoints or []:
        endpoint.setdefault("conditions", {})
    # The v1 API silently clears deprecatedTopology when endpoints change (dropTopologyOnV1).
    if old is None or endpoints != old.get("endpoints"):
        for endpoint in endpoints or []:
            endpoint.pop("deprecatedTopology", None)


def default_lease(obj: JSON, old: JSON | None) -> None:
    obj.setdefault("spec", {})
