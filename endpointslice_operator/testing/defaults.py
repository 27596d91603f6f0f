"""Defaulting done by kube-apiserver on create and update for the kinds the emulator serves.

Only the defaults that clients of these resources observe are applied: Service cluster IPs and
IP families, port protocols and target ports, Pod scheduling/termination fields, Namespace
phase and name label, EndpointSlice port names and protocols.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from endpointslice_operator.testing.errors import invalid
from endpointslice_operator.testing.validation import invalid_value

JSON = dict[str, Any]


FAMILIES = ("IPv4", "IPv6")
SERVICE_CIDRS = {"IPv4": "10.96.0.0/12", "IPv6": "fd00:10:96::/108"}
FIRST_OFFSET = 10  # the first addresses are kept for kubernetes/kube-dns, as in clusters


def ip_family(ip: str) -> str:
    return f"IPv{ipaddress.ip_address(ip).version}"


class ClusterIPAllocator:
    """Hands out Service cluster IPs of both families (the emulated cluster is dual-stack,
    IPv4 first), sequentially, never one in use."""

    def __init__(self, cidrs: dict[str, str] | None = None) -> None:
        self.networks = {f: ipaddress.ip_network(c) for f, c in (cidrs or SERVICE_CIDRS).items()}
        self._next = dict.fromkeys(self.networks, FIRST_OFFSET)
        self._used: set[str] = set()
        self._pending: list[str] = []  # taken by the write in progress

    def allocate(self, family: str = "IPv4") -> str:
        network = self.networks[family]
        size = min(network.num_addresses, 1 << 20)
        for _ in range(size):
            offset = self._next[family]
            self._next[family] = offset + 1 if offset + 2 < size else 1
            candidate = str(network.network_address + offset)
            if candidate not in self._used:
                self.reserve(candidate)
                return candidate
        raise RuntimeError(f"the {family} service cluster IP range is exhausted")

    def reserve(self, ip: str) -> None:
        self._used.add(ip)
        self._pending.append(ip)

    def commit(self) -> None:
        """Keep what the current write took."""
        self._pending.clear()

    def rollback(self) -> None:
        """Give back what the current write took (it failed or was a dry run)."""
        for ip in self._pending:
            self._used.discard(ip)
        self._pending.clear()

    def in_use(self, ip: str) -> bool:
        return ip in self._used

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
    name = (obj.get("metadata") or {}).get("name", "")
    _default_ip_families(spec, (old or {}).get("spec") or {}, allocator, name, creating=old is None)


def _default_ip_families(
    spec: JSON, old_spec: JSON, allocator: ClusterIPAllocator, spec_name: str, *, creating: bool
) -> None:
    """clusterIP(s), ipFamilies and ipFamilyPolicy as the service registry fills them in.

    Families come from the request, else from the given IPs, else the primary (IPv4); a
    dual-stack policy adds the other family. Headless Services get no IPs; selectorless
    headless ones default to RequireDualStack.
    """
    given_ips = list(spec.get("clusterIPs") or [])
    if not given_ips and spec.get("clusterIP"):
        given_ips = [spec["clusterIP"]]
    if not given_ips:
        given_ips = list(old_spec.get("clusterIPs") or [])
    headless = given_ips[:1] == ["None"]
    families = list(spec.get("ipFamilies") or old_spec.get("ipFamilies") or [])
    if not families:
        families = [ip_family(ip) for ip in given_ips if ip != "None"] or [FAMILIES[0]]
    policy = spec.get("ipFamilyPolicy") or old_spec.get("ipFamilyPolicy")
    if policy is None:
        policy = "RequireDualStack" if headless and not spec.get("selector") else "SingleStack"
    if policy in ("PreferDualStack", "RequireDualStack") and len(families) == 1:
        other = [f for f in FAMILIES if f != families[0]]
        families += other[:1]
    spec["ipFamilyPolicy"] = policy
    spec["ipFamilies"] = families
    if headless:
        spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
        return
    ips = [ip for ip in given_ips if ip != "None"]
    if creating:
        for ip in ips:
            if allocator.in_use(ip):
                cause = invalid_value(
                    "spec.clusterIPs",
                    ips,
                    f"failed to allocate IP {ip}: provided IP is already allocated",
                )
                raise invalid("Service", "", spec_name, [cause])
            allocator.reserve(ip)
    missing = [family for family in families[len(ips) :] if family in allocator.networks]
    ips.extend(allocator.allocate(family) for family in missing)
    spec["clusterIP"], spec["clusterIPs"] = ips[0], ips


def default_pod(obj: JSON, old: JSON | None) -> None:
    default_pod_spec(obj.setdefault("spec", {}))


def default_pod_spec(spec: JSON) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for port in container.get("ports") or []:
            port.setdefault("protocol", "TCP")


def default_workload(kind: str, obj: JSON) -> None:
    """apps/v1 Deployment and ReplicaSet defaults (SetDefaults_Deployment / _ReplicaSet)."""
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    spec.setdefault("revisionHistoryLimit", 10)
    if kind == "Deployment":
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        spec.setdefault("progressDeadlineSeconds", 600)
    else:
        spec.pop("revisionHistoryLimit", None)
    template = spec.get("template")
    if isinstance(template, dict):
        default_pod_spec(template.setdefault("spec", {}))


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
    # Neither list has omitempty in discovery/v1, and etcd's protobuf keeps no difference
    # between an empty list and none: kube-apiserver v1.24 answers (and watches carry)
    # "endpoints": null and "ports": null whether the write sent [] or left them out.
    for key in ("endpoints", "ports"):
        if obj.get(key) == []:
            obj[key] = None
        else:
            obj.setdefault(key, None)


def default_endpoints(obj: JSON) -> None:
    """core/v1 Endpoints: a subset's port protocol defaults to TCP."""
    for subset in obj.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")


def default_lease(obj: JSON, old: JSON | None) -> None:
    obj.setdefault("spec", {})
