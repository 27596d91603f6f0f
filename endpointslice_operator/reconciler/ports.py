"""Service ports → endpoint ports, resolved per pod, and the port-set grouping key.

An endpoint port is ``(name, port, protocol, appProtocol)``, ``None`` (a nil pointer) differing
from ``""``. A port set is such a tuple in canonical order and is its own grouping key (a nil
and an empty list both ``()``). The order is v1.36's, byte for byte: ports sorted by the 128-bit
FNV-1a hash of each port's Go dump (``dump.ForHash``); v1.34 and older used MD5 (docs/testing.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple

from .gohash import fnv1a_128_hex, slice_port_dump
from .records import ContainerPort, PodRecord

__all__ = [
    "EndpointPort",
    "PortKey",
    "ServicePort",
    "find_port",
    "in_hash_order",
    "port_hash",
    "port_key",
    "port_key_text",
    "ports_from_dicts",
    "ports_to_dicts",
    "resolve_ports",
    "service_ports",
]

EndpointPort = tuple[str | None, int | None, str | None, str | None]
PortKey = tuple[EndpointPort, ...]


class ServicePort(NamedTuple):
    name: str
    protocol: str
    app_protocol: str | None
    target: int | str


@lru_cache(maxsize=1024)
def port_hash(port: EndpointPort) -> str:
    """Upstream's sort key of one port: the hex FNV-1a 128 of its Go dump (cached: a
    Service's few ports are hashed once, not once per pod)."""
    return fnv1a_128_hex(slice_port_dump(*port))


def port_key(ports: Iterable[EndpointPort]) -> PortKey:
    """The canonical, hashable form of a port set (order-insensitive; nil == empty), in
    upstream's order (:func:`port_hash`)."""
    return tuple(sorted(ports, key=port_hash))


def port_key_text(key: PortKey) -> str:
    """A stable string form of a port key (used to key per-group metrics)."""
    return ",".join(f"{name}/{port}/{protocol}/{app}" for name, port, protocol, app in key)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def ports_from_dicts(ports: Any) -> PortKey:
    """Port key of an existing slice's ``ports`` list (malformed entries are ignored)."""
    if not isinstance(ports, list) or not ports:
        return ()
    return port_key(_port_tuple(port) for port in ports if isinstance(port, Mapping))


def _port_tuple(port: Mapping[str, Any]) -> EndpointPort:
    number = port.get("port")
    return (
        _str_or_none(port.get("name")),
        number if isinstance(number, int) and not isinstance(number, bool) else None,
        _str_or_none(port.get("protocol")),
        _str_or_none(port.get("appProtocol")),
    )


def in_hash_order(ports: Any) -> list[Any]:
    """An existing slice's ``ports`` entries, as they are, in upstream's order: upstream sorts
    an existing slice's ports in place when it computes the slice's port key, so a slice it
    updates is written with its ports in hash order (a slice left unchanged keeps its order)."""
    if not isinstance(ports, list):
        return []
    return sorted(ports, key=lambda p: port_hash(_port_tuple(p)) if isinstance(p, Mapping) else "")


def ports_to_dicts(key: PortKey) -> list[dict[str, Any]]:
    """Fresh ``ports`` list for a slice."""
    result: list[dict[str, Any]] = []
    for name, port, protocol, app_protocol in key:
        entry: dict[str, Any] = {}
        if name is not None:
            entry["name"] = name
        if port is not None:
            entry["port"] = port
        if protocol is not None:
            entry["protocol"] = protocol
        if app_protocol is not None:
            entry["appProtocol"] = app_protocol
        result.append(entry)
    return result


def service_ports(service: Mapping[str, Any], errors: list[str]) -> tuple[ServicePort, ...]:
    """Parse ``spec.ports``; a port missing ``targetPort`` targets its ``port`` and a port
    missing ``protocol`` is TCP (the API server's defaults, for objects read from files)."""
    spec = service.get("spec")
    raw = spec.get("ports") if isinstance(spec, Mapping) else None
    if not isinstance(raw, list):
        return ()
    parsed: list[ServicePort] = []
    for index, port in enumerate(raw):
        if not isinstance(port, Mapping):
            errors.append(f"spec.ports[{index}] is not an object")
            continue
        target = port.get("targetPort", port.get("port"))
        if isinstance(target, bool) or not isinstance(target, int | str):
            errors.append(f"spec.ports[{index}]: unusable targetPort {target!r}")
            continue
        name = port.get("name")
        protocol = port.get("protocol")
        parsed.append(
            ServicePort(
                name=name if isinstance(name, str) else "",
                protocol=protocol if isinstance(protocol, str) else "TCP",
                app_protocol=_str_or_none(port.get("appProtocol")),
                target=target,
            )
        )
    return tuple(parsed)


def _find(table: tuple[ContainerPort, ...], name: str, protocol: str) -> int | None:
    for port_name, port_protocol, number in table:
        if port_name == name and port_protocol == protocol:
            return number
    return None


def find_port(pod: PodRecord, port: ServicePort) -> int | None:
    """Upstream ``FindPort``: the target port number for one pod, or ``None``.

    An integer target is used as is. A named one is looked up in the app containers first,
    then in sidecar init containers (``restartPolicy: Always``), matching the name and the
    protocol; the first hit wins.
    """
    target = port.target
    if not isinstance(target, str):
        return target
    number = _find(pod.container_ports, target, port.protocol)
    if number is None:
        number = _find(pod.sidecar_ports, target, port.protocol)
    return number


def resolve_ports(ports: tuple[ServicePort, ...], pod: PodRecord) -> PortKey:
    """Upstream ``getEndpointPorts`` for one pod, as a port key: a service port whose target
    does not resolve for this pod is left out (for this pod only)."""
    resolved: list[EndpointPort] = []
    for port in ports:
        number = find_port(pod, port)
        if number is not None:
            resolved.append((port.name, number, port.protocol, port.app_protocol))
    return port_key(resolved)
