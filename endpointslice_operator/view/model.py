"""The records of the endpoint view, and how Services and EndpointSlices are read into them.

A Service contributes one *service port* per entry of ``spec.ports`` (Δ-controller's
``ServiceView``); an EndpointSlice contributes, for each of its ports, one :class:`Endpoint` per
endpoint (the first address, as kube-proxy uses). The two are joined by port name and protocol
in :mod:`endpointslice_operator.view.merge`. Everything here is pure: dicts in, tuples out.

Reading follows kube-proxy (``pkg/proxy/endpointslicecache.go``): a slice without the
``kubernetes.io/service-name`` label is ignored, as is a slice port without a name or with no
(or a zero) port number, and an endpoint without addresses; ``ready`` and ``serving`` default
to true and ``terminating`` to false when the condition is absent.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
"""The well-known discovery/v1 labels (as in ``reconciler.labels``; spelled here so that the
model, and the ``endpoints`` command with it, loads without the reconciler and pydantic)."""

__all__ = [
    "DEFAULT_ANNOTATION_PREFIX",
    "LABEL_ENDPOINT_SELECTOR_NAME",
    "LABEL_MCS_SERVICE_NAME",
    "LABEL_SOURCE_CLUSTER",
    "POLICIES",
    "Change",
    "ChangeType",
    "Endpoint",
    "EndpointGroup",
    "EndpointKey",
    "ParsedService",
    "ParsedSlice",
    "Policy",
    "ServicePortKey",
    "address_sort_key",
    "parse_endpoint_selector",
    "parse_service",
    "parse_slice",
    "view_annotation",
]

DEFAULT_ANNOTATION_PREFIX = "endpointslice-operator.io"
LABEL_ENDPOINT_SELECTOR_NAME = "endpointslice-operator.io/endpoint-selector-name"
"""The label naming an EndpointSelector on its slices (docs/endpointselector.md)."""
LABEL_MCS_SERVICE_NAME = "multicluster.kubernetes.io/service-name"
"""The label naming a ServiceImport on its imported slices (docs/multicluster.md)."""
LABEL_SOURCE_CLUSTER = "multicluster.kubernetes.io/source-cluster"
"""The cluster an imported slice's endpoints come from."""

Policy = Literal["ready", "serving", "all"]
POLICIES: tuple[Policy, ...] = ("ready", "serving", "all")

ChangeType = Literal["added", "updated", "removed", "synced"]


def view_annotation(prefix: str = DEFAULT_ANNOTATION_PREFIX) -> str:
    """The Service annotation that puts a Service in the view, ``<prefix>/view``, derived from
    the annotation prefix as ``<prefix>/enabled`` and ``<prefix>/selector`` are."""
    return f"{prefix}/view"


class EndpointKey(NamedTuple):
    """One endpoint of one service port: ``port`` is the Service's port number (the slice's
    port number, where traffic goes, is :attr:`Endpoint.target_port`)."""

    namespace: str
    service: str
    port_name: str
    port: int
    protocol: str
    address: str


class ServicePortKey(NamedTuple):
    """One service port, the key of the ``gather`` records."""

    namespace: str
    service: str
    port_name: str
    port: int
    protocol: str


class Endpoint(NamedTuple):
    """What a consumer needs to program one backend."""

    address: str
    target_port: int
    """The slice's port number for this port name: where to send the traffic."""
    ready: bool
    serving: bool
    terminating: bool
    node: str | None
    zone: str | None
    hints: tuple[str, ...]
    """Zones from ``hints.forZones`` (topology-aware routing)."""
    pod: str | None
    """The target Pod's name (``targetRef`` of kind Pod), in the slice's namespace."""
    slice: str
    """The EndpointSlice this endpoint was taken from (ready wins among duplicates)."""
    cluster: str | None = None
    """The source cluster of an imported slice (Multi-Cluster Services: its
    ``multicluster.kubernetes.io/source-cluster`` label, in the view of a ServiceImport as in
    that of its derived Service); None for a cluster's own slices."""

    def to_json(self) -> dict[str, Any]:
        found = {
            "address": self.address,
            "target_port": self.target_port,
            "ready": self.ready,
            "serving": self.serving,
            "terminating": self.terminating,
            "node": self.node,
            "zone": self.zone,
            "hints": list(self.hints),
            "pod": self.pod,
            "slice": self.slice,
        }
        if self.cluster is not None:
            found["cluster"] = self.cluster
        return found


class EndpointGroup(NamedTuple):
    """The ``gather`` record: every endpoint of one service port, sorted by address."""

    addresses: tuple[str, ...]
    endpoints: tuple[Endpoint, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "addresses": list(self.addresses),
            "endpoints": [endpoint.to_json() for endpoint in self.endpoints],
        }


@dataclass(frozen=True, slots=True)
class Change:
    """One change of the view. ``removed`` carries the last value; ``synced`` carries
    neither key nor value."""

    type: ChangeType
    key: EndpointKey | ServicePortKey | None = None
    endpoint: Endpoint | EndpointGroup | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"type": "added", "key": {...}, "endpoint": {...}}``, or ``{"type": "synced"}``."""
        if self.key is None or self.endpoint is None:
            return {"type": self.type}
        return {"type": self.type, "key": self.key._asdict(), "endpoint": self.endpoint.to_json()}


def address_sort_key(address: str) -> tuple[int, int, str]:
    """IPv4 before IPv6, numerically; anything else (FQDN) after, as text."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return (10, 0, address)
    return (ip.version, int(ip), "")


# -- reading objects ---------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _port_number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class ParsedService(NamedTuple):
    namespace: str
    name: str
    ports: dict[tuple[str, str], int]
    """(port name, protocol) -> Service port number."""
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


def parse_service(obj: Mapping[str, Any]) -> ParsedService | None:
    """The service ports of a Service, or None without a name and namespace."""
    metadata = _mapping(obj.get("metadata"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not namespace or not name:
        return None
    ports: dict[tuple[str, str], int] = {}
    raw_ports = _mapping(obj.get("spec")).get("ports")
    for raw in raw_ports if isinstance(raw_ports, list) else ():
        port = _mapping(raw)
        number = _port_number(port.get("port"))
        if not number:
            continue
        port_name = port.get("name")
        protocol = port.get("protocol")
        ports[
            (
                port_name if isinstance(port_name, str) else "",
                protocol if isinstance(protocol, str) else "TCP",
            )
        ] = number
    labels = _mapping(metadata.get("labels"))
    annotations = _mapping(metadata.get("annotations"))
    return ParsedService(namespace, name, ports, labels, annotations)


def parse_endpoint_selector(obj: Mapping[str, Any]) -> ParsedService | None:
    """An EndpointSelector read as a Service: one port per ``spec.ports`` entry, numbered by
    its ``port`` when that is a number, 0 when it names a container port (each endpoint's
    :attr:`Endpoint.target_port` has the number it resolved to). A port without a name is
    keyed ``""``, as the slices name it."""
    metadata = _mapping(obj.get("metadata"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not namespace or not name:
        return None
    ports: dict[tuple[str, str], int] = {}
    raw_ports = _mapping(obj.get("spec")).get("ports")
    for raw in raw_ports if isinstance(raw_ports, list) else ():
        port = _mapping(raw)
        port_name = port.get("name")
        protocol = port.get("protocol")
        ports[
            (
                port_name if isinstance(port_name, str) else "",
                protocol if isinstance(protocol, str) else "TCP",
            )
        ] = _port_number(port.get("port"))
    labels = _mapping(metadata.get("labels"))
    annotations = _mapping(metadata.get("annotations"))
    return ParsedService(namespace, name, ports, labels, annotations)


SlicePort = tuple[str, str, tuple[Endpoint, ...]]
"""(port name, protocol, the slice's endpoints carrying this port's number)."""


class ParsedSlice(NamedTuple):
    namespace: str
    name: str
    service: str
    version: str
    ports: tuple[SlicePort, ...]


def _flag(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _opt_str(value: Any) -> str | None:
    return sys.intern(value) if isinstance(value, str) and value else None


_EndpointRest = tuple[bool, bool, bool, str | None, str | None, tuple[str, ...], str | None, str]
"""The :class:`Endpoint` fields from ``ready`` to ``slice``."""


def _endpoints(raw_endpoints: Any, slice_name: str) -> list[tuple[str, _EndpointRest]]:
    """(address, the Endpoint fields after target_port) per endpoint kube-proxy would use."""
    found: list[tuple[str, _EndpointRest]] = []
    for raw in raw_endpoints if isinstance(raw_endpoints, list) else ():
        endpoint = _mapping(raw)
        addresses = endpoint.get("addresses")
        if not isinstance(addresses, list) or not addresses or not isinstance(addresses[0], str):
            continue
        conditions = _mapping(endpoint.get("conditions"))
        target = _mapping(endpoint.get("targetRef"))
        zones = _mapping(endpoint.get("hints")).get("forZones")
        hints = tuple(
            sorted(
                str(zone["name"])
                for zone in (zones if isinstance(zones, list) else ())
                if isinstance(zone, Mapping) and isinstance(zone.get("name"), str)
            )
        )
        found.append(
            (
                addresses[0],
                (
                    _flag(conditions.get("ready"), True),
                    _flag(conditions.get("serving"), True),
                    _flag(conditions.get("terminating"), False),
                    _opt_str(endpoint.get("nodeName")),
                    _opt_str(endpoint.get("zone")),
                    hints,
                    _opt_str(target.get("name")) if target.get("kind") == "Pod" else None,
                    slice_name,
                ),
            )
        )
    return found


def parse_slice(
    obj: Mapping[str, Any],
    managed_by: str | None = None,
    owner_label: str = LABEL_SERVICE_NAME,
) -> ParsedSlice | None:
    """The endpoints an EndpointSlice gives each of its ports, or None when the view ignores
    it (no service-name label, or ``managed_by`` given and the slice's manager differs).
    ``owner_label``: the label naming the owner (an EndpointSelector's, for that view)."""
    metadata = _mapping(obj.get("metadata"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not namespace or not name:
        return None
    labels = _mapping(metadata.get("labels"))
    service = labels.get(owner_label)
    if not isinstance(service, str) or not service:
        return None
    if managed_by is not None and labels.get(LABEL_MANAGED_BY) != managed_by:
        return None
    source = labels.get(LABEL_SOURCE_CLUSTER)
    cluster = sys.intern(source) if isinstance(source, str) and source else None
    name = sys.intern(name)
    endpoints: list[tuple[str, _EndpointRest]] | None = None
    ports: list[SlicePort] = []
    raw_ports = obj.get("ports")
    for raw in raw_ports if isinstance(raw_ports, list) else ():
        port = _mapping(raw)
        port_name = port.get("name")
        number = _port_number(port.get("port"))
        if not isinstance(port_name, str) or not number:
            continue  # kube-proxy ignores a port without a name or number
        protocol = port.get("protocol")
        if endpoints is None:
            endpoints = _endpoints(obj.get("endpoints"), name)
        ports.append(
            (
                sys.intern(port_name),
                protocol if isinstance(protocol, str) else "TCP",
                tuple(Endpoint(address, number, *rest, cluster) for address, rest in endpoints),
            )
        )
    version = str(metadata.get("resourceVersion") or "")
    return ParsedSlice(namespace, name, service, version, tuple(ports))
