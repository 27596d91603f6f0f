"""Service ports → endpoint ports, resolved per pod, and the port-set grouping key.

An endpoint port is the tuple ``(name, port, protocol, appProtocol)``; ``name`` and
``appProtocol`` may be ``None`` (a nil pointer upstream), which differs from ``""``.
A port set is a tuple of those in a canonical order, and that tuple is its own grouping key:
upstream keys groups by a hash of the (in-place sorted) list, where a nil and an empty list
hash the same; here both are ``()``. Upstream's order is FNV hash order, which tests compare
unordered; ours is a plain deterministic sort.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from .records import ContainerPort, PodRecord

__all__ = [
    "EndpointPort",
    "PortKey",
    "ServicePort",
    "find_port",
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


def _sort_key(port: EndpointPort) -> tuple[tuple[bool, Any], ...]:
    return tuple((value is None, value if value is not None else 0) for value in port)


def port_key(ports: Iterable[EndpointPort]) -> PortKey:
    """The canonical, hashable form of a port set (order-insensitive; nil == empty)."""
    return tuple(sorted(ports, key=_sort_key))


def port_key_text(key: PortKey) -> str:
    """A stable string form of a port key (used to key per-group metrics)."""
    return ",".join(f"{name}/{port}/{protocol}/{app}" for name, port, protocol, app in key)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def ports_from_dicts(ports: Any) -> PortKey:
    """Port key of an existing slice's ``ports`` list (malformed entries are ignored)."""
    if not isinstance(ports, list) or not ports:
        return ()
    result: list[EndpointPort] = []
    for port in ports:
        if not isinstance(port, Mapping):
            continue
        number = port.get("port")
        result.append(
            (
                _str_or_none(port.get("name")),
                number if isinstance(number, int) and not isinstance(number, bool) else None,
                _str_or_none(port.get("protocol")),
                _str_or_none(port.get("appProtocol")),
            )
        )
    return port_key(result)


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
