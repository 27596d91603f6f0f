"""The ``core/v1`` Endpoints object of a Service, as kube-controller-manager computes it.

A port of ``syncService`` of ``pkg/controller/endpoint`` (no API calls) and ``RepackSubsets`` of
``pkg/api/v1/endpoints``; a selectorless Service is not skipped (the caller selects the pods).
Differences no consumer sees: subsets ordered by content, not upstream's FNV-1a hash of Go's
debug printing, which takes in pod UIDs and resourceVersions: random from one cluster to the
next (ports inside a subset in v1.36's ``portsByHash`` order).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal

from .desired import IPV6
from .gohash import core_port_dump, fnv1a_128_hex
from .ipaddr import canonical_ip
from .labels import LABEL_HEADLESS, LABEL_MANAGED_BY, LAST_CHANGE_TRIGGER_TIME, format_trigger_time
from .labels import is_service_ip_set as _is_service_ip_set
from .ports import find_port, service_ports
from .records import PodRecord, as_pod_record
from .sources import Addresses, AddressSource, LeftOut

__all__ = [
    "ANNOTATION_OVER_CAPACITY",
    "LABEL_ENDPOINTS_MANAGED_BY",
    "LABEL_SKIP_MIRROR",
    "MAX_ENDPOINTS_CAPACITY",
    "OVER_CAPACITY_TRUNCATED",
    "EndpointsPlan",
    "endpoint_subsets_for_service",
    "endpoints_need_update",
    "our_endpoints_labels",
    "plan_endpoints",
    "repack_subsets",
    "subsets_equal",
    "truncate_subsets",
]

LABEL_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
LABEL_ENDPOINTS_MANAGED_BY = "endpoints.kubernetes.io/managed-by"
"""Upstream's marker for the controller that wrote an Endpoints object (KEP-4974;
kube-controller-manager v1.33+ writes ``endpoint-controller``)."""
ANNOTATION_OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
OVER_CAPACITY_TRUNCATED = "truncated"
MAX_ENDPOINTS_CAPACITY = 1000
"""Upstream ``maxCapacity``: addresses (ready and not ready) one Endpoints object holds."""

_DEFAULT_EXTRA_LABELS: Mapping[str, str] = {LABEL_SKIP_MIRROR: "true"}


def our_endpoints_labels(controller_name: str) -> dict[str, str]:
    """The labels a controller other than kube-controller-manager puts on its Endpoints: its
    name under both managed-by keys (the EndpointSlice one, as on its slices, and upstream's
    Endpoints one), and ``skip-mirror`` so that no mirroring controller turns the object into
    a second set of slices. Pass them as ``extra_labels`` to :func:`plan_endpoints`."""
    return {
        LABEL_SKIP_MIRROR: "true",
        LABEL_MANAGED_BY: controller_name,
        LABEL_ENDPOINTS_MANAGED_BY: controller_name,
    }


_SENTINEL_PORT = -1
"""Upstream keeps addresses of a subset without ports under a port ``-1`` while repacking."""


# ---------------------------------------------------------------------------------------------
# RepackSubsets


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _address_key(address: Mapping[str, Any]) -> tuple[str, str]:
    """Upstream ``addressKey``: the IP and the targetRef's UID."""
    ref = address.get("targetRef")
    uid = _text(ref.get("uid")) if isinstance(ref, Mapping) else ""
    return _text(address.get("ip")), uid


def _address_order(address: Mapping[str, Any]) -> tuple[bytes, bool, str]:
    """Upstream ``LessEndpointAddress``: by IP bytes; no targetRef first; then by UID."""
    ref = address.get("targetRef")
    has_ref = isinstance(ref, Mapping)
    uid = _text(ref.get("uid")) if isinstance(ref, Mapping) else ""
    return _text(address.get("ip")).encode(), has_ref, uid


_PortValue = tuple[str, int, str, str | None]


def _port_value(port: Mapping[str, Any]) -> _PortValue:
    number = port.get("port")
    app = port.get("appProtocol")
    return (
        _text(port.get("name")),
        number if isinstance(number, int) and not isinstance(number, bool) else 0,
        _text(port.get("protocol")),
        app if isinstance(app, str) else None,
    )


def _port_dict(value: _PortValue) -> dict[str, Any]:
    name, number, protocol, app = value
    result: dict[str, Any] = {}
    if name:
        result["name"] = name
    result["port"] = number
    if protocol:
        result["protocol"] = protocol
    if app is not None:
        result["appProtocol"] = app
    return result


def _port_content(value: _PortValue) -> tuple[int, str, str, str]:
    name, number, protocol, app = value
    return number, name, protocol, app or ""


@lru_cache(maxsize=1024)
def _port_order(value: _PortValue) -> str:
    """Upstream ``portsByHash``: FNV-1a 128 of the port's Go dump (MD5 before 1.35)."""
    return fnv1a_128_hex(core_port_dump(*value))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def repack_subsets(
    subsets: Iterable[Mapping[str, Any]], *, app_protocol_per_subset: bool = False
) -> list[dict[str, Any]]:
    """Upstream ``RepackSubsets``: the canonical layout of a list of Endpoints subsets.

    Every (address, port) pair is expanded; an address is identified by its IP and targetRef
    UID, the first occurrence giving its other fields; not-ready wins over ready for the same
    address and port. Ports offering the same set of (address, readiness) are then packed into
    one subset. A subset without ports keeps its addresses in a subset without ports. Input is
    not modified; the result is fresh.

    ``app_protocol_per_subset``: upstream keys its map by the Go port struct, whose
    ``appProtocol`` is a pointer. In an Endpoints object read from the API (mirroring) every
    subset's ports are their own values, so a port with an ``appProtocol`` in two subsets is
    two ports, each packed with its own subset's addresses; a port without one is one port.
    (The Endpoints controller's ports of one Service port share a pointer across pods: the
    default, one port per value.) Two such ports packed into one subset are written once.
    """
    first_seen: dict[tuple[str, str], Mapping[str, Any]] = {}
    by_port: dict[tuple[_PortValue, int], dict[tuple[str, str], bool]] = {}

    def add(address: Any, port: tuple[_PortValue, int], ready: bool) -> None:
        if not isinstance(address, Mapping):
            return
        key = _address_key(address)
        first_seen.setdefault(key, address)
        readiness = by_port.setdefault(port, {})
        if readiness.get(key, True):
            readiness[key] = ready

    untyped: Iterable[object] = subsets
    for index, given in enumerate(untyped):
        if not isinstance(given, Mapping):
            continue
        values = [_port_value(p) for p in _list(given.get("ports")) if isinstance(p, Mapping)]
        if not values:
            values = [("", _SENTINEL_PORT, "", None)]
        ports = [(v, index if app_protocol_per_subset and v[3] is not None else -1) for v in values]
        for port in ports:
            for address in _list(given.get("addresses")):
                add(address, port, True)
            for address in _list(given.get("notReadyAddresses")):
                add(address, port, False)

    # Ports with the same (address, ready) set share a subset, in first-seen order.
    groups: dict[frozenset[tuple[tuple[str, str], bool]], list[_PortValue]] = {}
    for (value, _), readiness in by_port.items():
        members = frozenset(readiness.items())
        group = groups.setdefault(members, [])
        if value[1] > 0:
            group.append(value)

    result: list[dict[str, Any]] = []
    for members, packed in groups.items():
        ready = [copy.deepcopy(dict(first_seen[key])) for key, ok in members if ok]
        not_ready = [copy.deepcopy(dict(first_seen[key])) for key, ok in members if not ok]
        subset: dict[str, Any] = {}
        if ready:
            subset["addresses"] = sorted(ready, key=_address_order)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_address_order)
        if packed:
            subset["ports"] = [_port_dict(p) for p in sorted(set(packed), key=_port_order)]
        if ready or not_ready:
            result.append(subset)
    result.sort(key=_subset_order)
    return result


def _subset_order(subset: Mapping[str, Any]) -> str:
    ports = [_port_content(_port_value(p)) for p in _list(subset.get("ports"))]
    return json.dumps(
        [ports, subset.get("addresses") or [], subset.get("notReadyAddresses") or []],
        sort_keys=True,
    )


# ---------------------------------------------------------------------------------------------
# Pods -> subsets


def _family_ipv6(service: Mapping[str, Any], pod: PodRecord) -> bool:
    """Upstream ``podToEndpointAddressForService``'s family: the first of ``ipFamilies``; else
    the clusterIP's; else (headless) the family of the pod's ``status.podIP``."""
    spec = service.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    families = spec.get("ipFamilies")
    if isinstance(families, list) and families:
        return bool(families[0] == IPV6)
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
        return _is_ipv6(cluster_ip)
    return _is_ipv6(pod.pod_ip)


def _is_ipv6(text: str) -> bool:
    parsed = canonical_ip(text)
    return parsed is not None and parsed[1]


def _pod_ip(service: Mapping[str, Any], pod: PodRecord, source: AddressSource | None) -> str | None:
    """The pod's address of the Service's family: from ``status.podIPs``, or from ``source``
    (a secondary network: the same addresses the Service's slices carry)."""
    want_v6 = _family_ipv6(service, pod)
    if source is None:
        found: Addresses | LeftOut = Addresses(pod.ipv4, pod.ipv6)  # canonical, as upstream's
    else:
        found = source.addresses(pod)
    if isinstance(found, LeftOut):
        return None
    pool = found.ipv6 if want_v6 else found.ipv4
    return pool[0] if pool else None


def _pod_address(
    service: Mapping[str, Any], pod: PodRecord, source: AddressSource | None = None
) -> dict[str, Any] | None:
    ip = _pod_ip(service, pod, source)
    if ip is None:
        return None
    address: dict[str, Any] = {
        "ip": ip,
        "nodeName": pod.node_name,
        "targetRef": {
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
        },
    }
    return address


def _should_set_hostname(service: Mapping[str, Any], pod: PodRecord) -> bool:
    metadata = service.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (
        bool(pod.hostname)
        and pod.subdomain == _text(metadata.get("name"))
        and pod.namespace == _text(metadata.get("namespace"))
    )


def endpoint_subsets_for_service(
    service: Mapping[str, Any],
    pods: Iterable[PodRecord | Mapping[str, Any]],
    source: AddressSource | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The repacked subsets the Endpoints controller computes for ``service`` and ``pods``
    (before the capacity cap), and the problems met (pods without an address of the Service's
    family, ports that do not resolve).

    With an address ``source`` (see :mod:`.sources`; not upstream, which knows only
    ``status.podIPs``) each pod's address comes from it, so that the Endpoints object and the
    slices of a Service on a secondary network carry the same addresses; a pod the source
    leaves out is left out here too (the slice sync counts and reports it).

    Rules (upstream ``syncService``): pods in phase Failed/Succeeded or without any pod IP are
    skipped, and so are terminating pods unless the Service publishes not-ready addresses;
    one address per pod, of the Service's primary family; a pod is ready when its Ready
    condition is True, or always with ``publishNotReadyAddresses``; a Service without ports has
    port-less addresses only when headless (``clusterIP: None``).
    """
    spec = service.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    publish_not_ready = spec.get("publishNotReadyAddresses") is True
    headless_no_ports = spec.get("clusterIP") == "None"
    errors: list[str] = []
    ports = service_ports(service, errors)
    raw_ports = spec.get("ports")
    has_ports = isinstance(raw_ports, list) and bool(raw_ports)
    subsets: list[dict[str, Any]] = []
    for raw in pods:
        pod = as_pod_record(raw)
        if pod.phase in ("Failed", "Succeeded") or (not pod.pod_ip and not pod.pod_ips):
            continue
        if pod.terminating and not publish_not_ready:
            continue
        address = _pod_address(service, pod, source)
        if address is None:
            if source is not None and isinstance(source.addresses(pod), LeftOut):
                continue
            errors.append(
                f"Pod {pod.namespace}/{pod.name} has no address of the Service's IP family"
            )
            continue
        if _should_set_hostname(service, pod):
            address["hostname"] = pod.hostname
        field_name = "addresses" if publish_not_ready or pod.ready else "notReadyAddresses"
        if not has_ports:
            if headless_no_ports:
                subsets.append({field_name: [address]})
            continue
        for port in ports:
            number = find_port(pod, port)
            if number is None:
                continue
            endpoint_port: dict[str, Any] = {
                "name": port.name,
                "port": number,
                "protocol": port.protocol,
            }
            if port.app_protocol is not None:
                endpoint_port["appProtocol"] = port.app_protocol
            subsets.append({field_name: [address], "ports": [endpoint_port]})
    return repack_subsets(subsets), errors


# ---------------------------------------------------------------------------------------------
# Capacity


def truncate_subsets(
    subsets: list[dict[str, Any]], max_capacity: int = MAX_ENDPOINTS_CAPACITY
) -> bool:
    """Upstream ``truncateEndpoints``, in place: cap the addresses at ``max_capacity``.

    Ready addresses are kept before not-ready ones; each subset keeps a share proportional to
    its size (rounded up, the last ones getting what is left). Returns whether it truncated.
    """
    total_ready = sum(len(_list(s.get("addresses"))) for s in subsets)
    total_not_ready = sum(len(_list(s.get("notReadyAddresses"))) for s in subsets)
    if total_ready + total_not_ready <= max_capacity:
        return False
    truncate_ready = total_ready > max_capacity
    limit = max_capacity if truncate_ready else max_capacity - total_ready
    total = total_ready if truncate_ready else total_not_ready
    room = limit
    for subset in subsets:
        ready = _list(subset.get("addresses"))
        not_ready = _list(subset.get("notReadyAddresses"))
        in_subset = len(ready) if truncate_ready else len(not_ready)
        share = min(math.ceil(in_subset / total * limit), room)
        if truncate_ready:
            kept = ready[:share]
            if kept:
                subset["addresses"] = kept
            else:
                subset.pop("addresses", None)
            subset.pop("notReadyAddresses", None)
            room -= len(kept)
        else:
            kept = not_ready[:share]
            if kept:
                subset["notReadyAddresses"] = kept
            else:
                subset.pop("notReadyAddresses", None)
            room -= len(kept)
    return True


def _address_count(subsets: Iterable[Mapping[str, Any]]) -> int:
    return sum(
        len(_list(s.get("addresses"))) + len(_list(s.get("notReadyAddresses")))
        for s in subsets
        if isinstance(s, Mapping)
    )


# ---------------------------------------------------------------------------------------------
# Comparison


def _normalise(value: Any, *, in_ref: bool = False) -> Any:
    """Semantic form: nil and empty lists/maps/strings dropped, targetRef resourceVersion
    ignored (upstream ``endpointSubsetsEqualIgnoreResourceVersion``)."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            if in_ref and key == "resourceVersion":
                continue
            normal = _normalise(item, in_ref=key == "targetRef")
            if normal is None or (normal == "" and key != "nodeName"):
                continue
            result[key] = normal
        return result or None
    if isinstance(value, list):
        items = [_normalise(item) for item in value]
        return items or None
    return value


def subsets_equal(a: Any, b: Any) -> bool:
    """Two subset lists are equal, ignoring targetRef resourceVersions and nil-vs-empty."""
    return bool(_normalise(_list(a)) == _normalise(_list(b)))


def _metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    metadata = obj.get("metadata") if obj is not None else None
    return metadata if isinstance(metadata, Mapping) else {}


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def endpoints_need_update(
    existing: Mapping[str, Any],
    subsets: list[dict[str, Any]],
    labels: Mapping[str, str],
    *,
    max_capacity: int = MAX_ENDPOINTS_CAPACITY,
) -> bool:
    """Upstream's "endpoints are equal, skipping update" test, negated.

    An existing Endpoints object is left alone when its subsets equal ``subsets`` (ignoring
    targetRef resourceVersions), its labels minus the headless label equal ``labels`` (the
    Service's labels, plus any extra labels the caller adds), and the over-capacity annotation
    is set correctly: absent, and the existing object holds at most ``max_capacity`` addresses.
    """
    metadata = _metadata(existing)
    current_labels = _string_map(metadata.get("labels"))
    current_labels.pop(LABEL_HEADLESS, None)
    annotations = _string_map(metadata.get("annotations"))
    current_subsets = _list(existing.get("subsets"))
    capacity_ok = (
        _address_count(current_subsets) <= max_capacity
        and ANNOTATION_OVER_CAPACITY not in annotations
    )
    return not (
        subsets_equal(current_subsets, subsets) and current_labels == dict(labels) and capacity_ok
    )


# ---------------------------------------------------------------------------------------------
# The whole object


@dataclass(slots=True)
class EndpointsPlan:
    """What to do with a Service's Endpoints object.

    ``action`` is ``"create"`` (POST ``endpoints``), ``"update"`` (PUT ``endpoints``; it carries
    the existing object's resourceVersion) or ``"none"``. ``subsets`` are the desired subsets
    after the capacity cap, ``ready``/``not_ready`` their address counts before it.
    """

    action: Literal["create", "update", "none"]
    endpoints: dict[str, Any] | None
    subsets: list[dict[str, Any]]
    ready: int = 0
    not_ready: int = 0
    truncated: bool = False
    errors: list[str] = field(default_factory=list)


def plan_endpoints(
    service: Mapping[str, Any],
    pods: Iterable[PodRecord | Mapping[str, Any]],
    existing: Mapping[str, Any] | None,
    *,
    trigger_time: datetime | None = None,
    extra_labels: Mapping[str, str] | None = None,
    max_capacity: int = MAX_ENDPOINTS_CAPACITY,
    source: AddressSource | None = None,
) -> EndpointsPlan:
    """The Endpoints object kube-controller-manager's Endpoints controller would write for
    ``service`` and its selected ``pods``, given the ``existing`` object (None if there is none).

    Labels are the Service's labels plus ``extra_labels`` (default: the skip-mirror label
    ``endpointslice.kubernetes.io/skip-mirror: "true"``, so that no mirroring controller mirrors
    the object back into slices) and, for a Service without a cluster IP, the headless label.
    On an update the existing annotations are kept, except that the trigger-time annotation is
    set from ``trigger_time`` (removed when None) and the over-capacity annotation
    ``endpoints.kubernetes.io/over-capacity: truncated`` is set exactly when more than
    ``max_capacity`` addresses were cut. An ExternalName Service gets no Endpoints (``"none"``).
    ``source``: where the pods' addresses come from (default ``status.podIPs``; see
    :func:`endpoint_subsets_for_service`).
    """
    extras = _DEFAULT_EXTRA_LABELS if extra_labels is None else extra_labels
    spec = service.get("spec")
    if isinstance(spec, Mapping) and spec.get("type") == "ExternalName":
        return EndpointsPlan("none", None, [])
    subsets, errors = endpoint_subsets_for_service(service, pods, source)
    ready = sum(len(_list(s.get("addresses"))) for s in subsets)
    not_ready = sum(len(_list(s.get("notReadyAddresses"))) for s in subsets)

    service_meta = _metadata(service)
    labels = _string_map(service_meta.get("labels"))
    labels.update(extras)

    if existing is not None and not endpoints_need_update(
        existing, subsets, labels, max_capacity=max_capacity
    ):
        return EndpointsPlan("none", None, subsets, ready, not_ready, False, errors)

    if existing is not None:
        result = copy.deepcopy(dict(existing))
        result.pop("subsets", None)
        metadata = result.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
        metadata.pop("managedFields", None)
        action: Literal["create", "update"] = "update"
    else:
        result = {}
        metadata = {"name": _text(service_meta.get("name"))}
        namespace = _text(service_meta.get("namespace"))
        if namespace:
            metadata["namespace"] = namespace
        action = "create"
    annotations = _string_map(metadata.get("annotations"))
    if trigger_time is not None:
        annotations[LAST_CHANGE_TRIGGER_TIME] = format_trigger_time(trigger_time)
    else:
        annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
    written = copy.deepcopy(subsets)
    truncated = truncate_subsets(written, max_capacity)
    if truncated:
        annotations[ANNOTATION_OVER_CAPACITY] = OVER_CAPACITY_TRUNCATED
    else:
        annotations.pop(ANNOTATION_OVER_CAPACITY, None)
    if not _is_service_ip_set(service):
        labels[LABEL_HEADLESS] = ""
    metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    result["apiVersion"] = "v1"
    result["kind"] = "Endpoints"
    result["metadata"] = metadata
    result["subsets"] = written
    return EndpointsPlan(action, result, written, ready, not_ready, truncated, errors)
