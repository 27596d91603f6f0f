"""Service + Pods + Nodes → the desired endpoints, grouped by address type and port set.

This is upstream's per-pod loop of ``reconcileByAddressType`` (with ``podToEndpoint``,
``getEndpointPorts``, ``ShouldPodBeInEndpoints`` and ``getAddressTypesForService``), split out
as the KEP-4770 ``DesiredEndpointSlicesFromServicePods`` step so that other controllers can
feed the planner their own endpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .endpoints import Endpoint, EndpointKey, EndpointState, endpoint_from_dict
from .ipaddr import canonical_ip
from .labels import LABEL_TOPOLOGY_ZONE
from .ports import PortKey, ports_from_dicts, resolve_ports, service_ports
from .records import SHARED_RECORD_CACHE, PodRecord, pod_record
from .sources import AddressSource, LeftOut

__all__ = [
    "IPV4",
    "IPV6",
    "DesiredEndpoints",
    "EndpointGroup",
    "NodesArg",
    "address_types_for_service",
    "desired_from_service_pods",
    "node_zones",
]

IPV4 = "IPv4"
IPV6 = "IPv6"

NodesArg = Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]]
"""Nodes as ``{name: node}`` or as a list of Node objects."""


@dataclass(slots=True)
class EndpointGroup:
    """The desired endpoints of one (address type, port set), keyed by identity, in pod order."""

    ports: PortKey
    endpoints: dict[EndpointKey, Endpoint] = field(default_factory=dict)


@dataclass(slots=True)
class DesiredEndpoints:
    """What the owner wants: per supported address type, groups keyed by port set.

    Every supported address type has an entry, possibly empty (then the planner writes a
    placeholder). ``errors`` are non-fatal problems (a pod on a missing node, malformed input).
    """

    address_types: tuple[str, ...]
    groups: dict[str, dict[PortKey, EndpointGroup]]
    errors: list[str] = field(default_factory=list)
    publish_not_ready: bool = False
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """``(namespace/name, reason)`` of the pods the address source left out, in pod order."""

    @classmethod
    def empty(cls, address_types: Iterable[str]) -> DesiredEndpoints:
        """No endpoints yet for these address types; fill with :meth:`add` (generic callers)."""
        types = tuple(address_types)
        return cls(types, {t: {} for t in types})

    def add(
        self,
        address_type: str,
        ports: Iterable[Mapping[str, Any]] | None,
        endpoint: Endpoint | Mapping[str, Any],
    ) -> None:
        """Add one endpoint (JSON, as in a slice, or an ``Endpoint``) to its port-set group.

        The port set is given as a slice's ``ports`` list; ``None`` and ``[]`` are the same
        set. Adding an endpoint with the identity of one already there replaces it.
        """
        groups = self.groups.get(address_type)
        if groups is None:
            raise ValueError(f"address type {address_type!r} is not one of {self.address_types}")
        key = ports_from_dicts(list(ports) if ports is not None else None)
        group = groups.get(key)
        if group is None:
            group = groups[key] = EndpointGroup(key)
        if not isinstance(endpoint, Endpoint):
            endpoint = endpoint_from_dict(endpoint)
        group.endpoints[endpoint.key] = endpoint

    def endpoint_count(self, address_type: str) -> int:
        return sum(len(g.endpoints) for g in self.groups.get(address_type, {}).values())


def _spec(service: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = service.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def address_types_for_service(service: Mapping[str, Any]) -> tuple[str, ...]:
    """Upstream ``getAddressTypesForService``: ipFamilies, else the clusterIP family, else both."""
    spec = _spec(service)
    families = spec.get("ipFamilies")
    found: list[str] = []
    if isinstance(families, list):
        found = [family for family in (IPV4, IPV6) if family in families]
    if found:
        return tuple(found)
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
        parsed = canonical_ip(cluster_ip)
        return (IPV6,) if parsed is not None and parsed[1] else (IPV4,)
    return (IPV4, IPV6)


def node_zones(nodes: NodesArg) -> dict[str, str]:
    """``{node name: zone}`` for every known node; ``""`` when it has no zone label."""
    zones: dict[str, str] = {}
    if isinstance(nodes, Mapping):
        items: Iterable[tuple[Any, Any]] = nodes.items()
    else:
        items = ((None, node) for node in nodes)
    for name, node in items:
        if not isinstance(node, Mapping):
            continue
        metadata = node.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        if name is None:
            name = metadata.get("name")
        if not isinstance(name, str):
            continue
        labels = metadata.get("labels")
        zone = labels.get(LABEL_TOPOLOGY_ZONE) if isinstance(labels, Mapping) else None
        zones[name] = zone if isinstance(zone, str) else ""
    return zones


def desired_from_service_pods(
    service: Mapping[str, Any],
    pods: Iterable[PodRecord | Mapping[str, Any]],
    nodes: NodesArg,
    source: AddressSource | None = None,
) -> DesiredEndpoints:
    """The desired endpoint groups of a Service, per supported address type.

    Rules (upstream B.2): pods in phase Failed/Succeeded or without any pod IP are skipped;
    terminating pods count. Every counted pod creates its port group, even if it then yields no
    endpoint. A pod whose node is unknown is skipped with an error unless the Service publishes
    not-ready addresses (then it has no zone). Addresses come from ``status.podIPs``,
    canonicalised and filtered by family, or, with a ``source`` (see :mod:`.sources`), from it:
    a pod the source leaves out is listed in ``left_out`` and creates no port group.
    """
    metadata = service.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else ""
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else ""
    spec = _spec(service)
    publish_not_ready = spec.get("publishNotReadyAddresses") is True

    errors: list[str] = []
    ports = service_ports(service, errors)
    address_types = address_types_for_service(service)
    want_v4 = IPV4 in address_types
    want_v6 = IPV6 in address_types
    groups_v4: dict[PortKey, EndpointGroup] = {}
    groups_v6: dict[PortKey, EndpointGroup] = {}
    zones = node_zones(nodes)
    left_out: list[tuple[str, str]] = []

    # Integer target ports resolve the same for every pod; named ones depend on the pod's
    # container ports, which records share between replicas (interned), so cache by the
    # identity of those tables: the pods keep them alive for the whole call.
    fixed_ports: PortKey | None = None
    if all(isinstance(p.target, int) for p in ports):
        fixed_ports = resolve_ports(ports, _NO_PORTS_POD)
    resolved_cache: dict[tuple[int, int], PortKey] = {}

    # Typed callers pass records or mappings; anything else is reported, never raised.
    untyped: Iterable[object] = pods
    record_of = SHARED_RECORD_CACHE.record
    for raw in untyped:
        if isinstance(raw, PodRecord):
            pod = raw
        elif type(raw) is dict or isinstance(raw, Mapping):  # (the ABC check costs ~0.5 us)
            pod = record_of(raw)
        else:
            errors.append(f"skipping a pod that is not an object: {type(raw).__name__}")
            continue
        if pod.errors:
            errors.extend(f"Pod {pod.namespace}/{pod.name}: {e}" for e in pod.errors)
        if pod.phase in ("Failed", "Succeeded") or (not pod.pod_ip and not pod.pod_ips):
            continue
        if source is None:
            pod_ipv4, pod_ipv6 = pod.ipv4, pod.ipv6
        else:
            found = source.addresses(pod)
            if isinstance(found, LeftOut):
                left_out.append((f"{pod.namespace}/{pod.name}", found.reason))
                continue
            pod_ipv4, pod_ipv6 = found

        if fixed_ports is not None:
            key = fixed_ports
        else:
            cache_key = (id(pod.container_ports), id(pod.sidecar_ports))
            cached = resolved_cache.get(cache_key)
            if cached is None:
                cached = resolved_cache[cache_key] = resolve_ports(ports, pod)
            key = cached
        group_v4 = group_v6 = None
        if want_v4:
            group_v4 = groups_v4.get(key)
            if group_v4 is None:
                group_v4 = groups_v4[key] = EndpointGroup(key)
        if want_v6:
            group_v6 = groups_v6.get(key)
            if group_v6 is None:
                group_v6 = groups_v6[key] = EndpointGroup(key)

        node_name = pod.node_name
        zone = zones.get(node_name)
        if zone is None and not publish_not_ready:
            errors.append(
                f"skipping Pod {pod.name} for Service {namespace}/{name}: "
                f"Node {node_name} Not Found"
            )
            continue

        serving = pod.ready
        terminating = pod.terminating
        pod_namespace = pod.namespace
        pod_name = pod.name
        hostname = pod.hostname or None
        if hostname is not None and (pod.subdomain != name or pod_namespace != namespace):
            hostname = None
        state: EndpointState = (
            node_name or None,
            zone or None,
            publish_not_ready or (serving and not terminating),
            serving,
            terminating,
            "Pod",
            pod_namespace,
            pod_name,
            pod.uid,
            "",
            "",
        )
        host_key = hostname or ""
        if group_v4 is not None and pod_ipv4:
            addresses = pod_ipv4
            sorted_addresses = addresses if len(addresses) == 1 else tuple(sorted(addresses))
            ep_key: EndpointKey = (sorted_addresses, host_key, pod_namespace, pod_name)
            group_v4.endpoints[ep_key] = _new(Endpoint, (ep_key, state, addresses, hostname))
        if group_v6 is not None and pod_ipv6:
            addresses = pod_ipv6
            sorted_addresses = addresses if len(addresses) == 1 else tuple(sorted(addresses))
            ep_key = (sorted_addresses, host_key, pod_namespace, pod_name)
            group_v6.endpoints[ep_key] = _new(Endpoint, (ep_key, state, addresses, hostname))

    groups: dict[str, dict[PortKey, EndpointGroup]] = {}
    if want_v4:
        groups[IPV4] = groups_v4
    if want_v6:
        groups[IPV6] = groups_v6
    return DesiredEndpoints(address_types, groups, errors, publish_not_ready, left_out)


_NO_PORTS_POD = pod_record({})
# ``Endpoint(...)`` without a NamedTuple constructor's argument handling: this loop runs once
# per pod and Service on every sync.
_new = tuple.__new__
