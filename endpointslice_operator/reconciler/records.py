"""``PodRecord``: the compact, immutable projection of a Pod that the reconciler reads.

The operator's pod index keeps these instead of whole Pod bodies. To stay small, label maps,
container-port tables and repeated strings are interned (shared between the replicas of a
Deployment), and every sequence is a tuple. Building a record never raises: malformed parts
of a Pod are dropped and described in ``errors``.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Hashable, Mapping
from functools import partial
from typing import Any, NamedTuple, NoReturn, TypeVar

from .ipaddr import NOT_AN_IP, pod_endpoint_ip

__all__ = [
    "SHARED_RECORD_CACHE",
    "ContainerPort",
    "PodRecord",
    "PodRecordCache",
    "as_pod_record",
    "pod_record",
]

ContainerPort = tuple[str, str, int]
"""``(name, protocol, containerPort)``."""


class _LabelMap(dict[str, str]):
    """A pod's labels: read-only, and one object for all the pods carrying the same labels.

    A ``dict`` subclass rather than a ``MappingProxyType`` so that the intern table can hold it
    weakly: a label set lives exactly as long as a pod carrying it. A strong, size-capped table
    would keep the label sets of every pod since the last clear-out, and Jobs (a
    ``controller-uid`` label each), StatefulSets (``pod-name``) and rollouts
    (``pod-template-hash``) make new ones all the time.
    """

    __slots__ = ("__weakref__",)

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("pod record labels are read-only")

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only


_EMPTY_LABELS: Mapping[str, str] = _LabelMap()
_label_maps: weakref.WeakValueDictionary[tuple[tuple[str, str], ...], _LabelMap] = (
    weakref.WeakValueDictionary()
)
_port_tables: dict[tuple[ContainerPort, ...], tuple[ContainerPort, ...]] = {}
_INTERN_LIMIT = 1 << 16
"""Port tables are tuples, which cannot be held weakly; they follow pod templates (Jobs seldom
declare ports), and the table is emptied when it reaches this size."""
_recent_times: dict[str, str] = {}
_TIMES_LIMIT = 4096
"""Ready transition times seen lately, to share: pods started together (a rollout, a node
coming back) carry the same second, while over a cluster's life nearly every time is one
pod's, which a process-wide interning table would keep an entry for."""

_Shared = TypeVar("_Shared", bound=Hashable)


def _shared(table: dict[_Shared, _Shared], value: _Shared, limit: int) -> _Shared:
    """The object equal to ``value`` held in ``table`` (``value`` itself the first time); the
    table is emptied when it reaches ``limit`` entries."""
    shared = table.get(value)
    if shared is None:
        if len(table) >= limit:
            table.clear()
        table[value] = shared = value
    return shared


class PodRecord(NamedTuple):
    """Everything the reconciler and the pod→Service mapping read from a Pod."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    resource_version: str
    phase: str
    pod_ip: str
    pod_ips: tuple[str, ...]
    """``status.podIPs[*].ip`` as given (for change detection)."""
    ipv4: tuple[str, ...]
    """Canonical IPv4 addresses from ``status.podIPs`` (IPv4-mapped IPv6 included)."""
    ipv6: tuple[str, ...]
    ready: bool
    ready_transition: str | None
    """``lastTransitionTime`` of the Ready condition, as given."""
    terminating: bool
    node_name: str
    hostname: str
    subdomain: str
    container_ports: tuple[ContainerPort, ...]
    sidecar_ports: tuple[ContainerPort, ...]
    """Ports of init containers with ``restartPolicy: Always``."""
    errors: tuple[str, ...] = ()


def _intern_str(value: Any) -> str:
    return sys.intern(value) if isinstance(value, str) else ""


def _intern_labels(raw: Any) -> Mapping[str, str]:
    if not raw or not _is_mapping(raw):
        return _EMPTY_LABELS
    # Replicas of one template list their labels in the same order: look the items up as
    # given first, and sort and intern only for a label set not seen in that order yet.
    try:
        as_given = tuple(raw.items())
        shared = _label_maps.get(as_given)
    except TypeError:  # an unhashable value: not a string label
        as_given, shared = None, None
    if shared is not None:
        return shared
    items = tuple(
        sorted(
            (sys.intern(k), sys.intern(v))
            for k, v in raw.items()
            if isinstance(k, str) and isinstance(v, str)
        )
    )
    shared = _label_maps.get(items)
    if shared is None:
        shared = _LabelMap(items)
        _label_maps[items] = shared
    if as_given is not None and as_given != items and len(as_given) == len(items):
        _label_maps[as_given] = shared
    return shared


def _ports_of(containers: Any, errors: list[str], *, sidecars: bool) -> tuple[ContainerPort, ...]:
    if not isinstance(containers, list):
        return ()
    ports: list[ContainerPort] = []
    for container in containers:
        if not _is_mapping(container):
            continue
        if sidecars and container.get("restartPolicy") != "Always":
            continue
        raw_ports = container.get("ports")
        if not isinstance(raw_ports, list):
            continue
        for port in raw_ports:
            if not _is_mapping(port):
                continue
            number = port.get("containerPort")
            if not isinstance(number, int) or isinstance(number, bool):
                errors.append(f"container {container.get('name')!r}: bad containerPort {number!r}")
                continue
            protocol = port.get("protocol")
            # The API server defaults the protocol to TCP; plain manifests may omit it.
            ports.append((_intern_str(port.get("name")), _intern_str(protocol or "TCP"), number))
    if not ports:
        return ()
    return _shared(_port_tables, tuple(ports), _INTERN_LIMIT)


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, with the JSON case (a plain dict) first: the abstract
    class check costs more than the rest of a small lookup."""
    return type(value) is dict or isinstance(value, Mapping)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if _is_mapping(value) else {}


def _ip_error(ip: str, reason: str) -> str:
    if reason == NOT_AN_IP:
        return f"invalid pod IP {ip!r}"
    return f"invalid pod IP {ip!r}: {reason}, which the API server refuses in an EndpointSlice"


def _reusable_ips(
    pod_ips: Any, previous: PodRecord | None
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
    """``previous``'s parsed IPs if ``pod_ips`` lists the same, all valid, addresses."""
    if previous is None or not isinstance(pod_ips, list):
        return None
    known = previous.pod_ips
    if len(pod_ips) != len(known) or len(previous.ipv4) + len(previous.ipv6) != len(known):
        return None  # a different count, or an address that was reported as invalid
    for entry, ip in zip(pod_ips, known, strict=True):
        if not _is_mapping(entry) or entry.get("ip") != ip:
            return None
    return known, previous.ipv4, previous.ipv6


def _parse_pod_ips(
    pod_ips: Any, errors: list[str]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """``(as given, canonical IPv4, canonical IPv6)``; invalid addresses go to ``errors``."""
    raw_ips: list[str] = []
    ipv4: list[str] = []
    ipv6: list[str] = []
    for entry in pod_ips if isinstance(pod_ips, list) else ():
        ip = entry.get("ip") if _is_mapping(entry) else None
        if not isinstance(ip, str):
            errors.append(f"bad podIPs entry {entry!r}")
            continue
        parsed = pod_endpoint_ip(ip)
        if isinstance(parsed, str):
            # Unparsable, or a special address the API server refuses in an EndpointSlice.
            errors.append(_ip_error(ip, parsed))
            raw_ips.append(ip)
            continue
        # Published in canonical form, as upstream's controllers do since 1.33 (a sloppy parse,
        # then Go's String(): 10.052.0.3 is 10.52.0.3, fd00:0::1 is fd00::1, ::ffff:10.52.0.4
        # is the IPv4 address 10.52.0.4). kube-apiserver v1.36 refuses a non-canonical address
        # in an EndpointSlice, yet keeps such pod IPs (IPv6 forms with a warning, legacy ones
        # stored before an upgrade). v1.24's controller copied them as given: the operator
        # follows v1.36. The usual IP is canonical already: one string serves both fields.
        # (Not interned: an address is one pod's, and an interning table entry would cost
        # more than sharing it saves.)
        canonical = parsed[0]
        raw_ips.append(ip)
        (ipv6 if parsed[1] else ipv4).append(ip if canonical == ip else canonical)
    given = tuple(raw_ips)
    return (
        given,
        given if ipv4 == raw_ips else tuple(ipv4),
        given if ipv6 == raw_ips else tuple(ipv6),
    )


def pod_record(pod: Mapping[str, Any], previous: PodRecord | None = None) -> PodRecord:
    """Project a Pod (JSON mapping, as the API returns it) onto a ``PodRecord``.

    ``previous``, the record of an earlier version of the same Pod, lets its parsed IPs be
    reused when ``status.podIPs`` is unchanged (it is, for every update after the first).
    """
    # This runs for every pod event in the operator and for every pod of every call in the
    # library path: strings shared by many pods are interned inline and the tuple is built
    # without NamedTuple's keyword handling.
    intern = sys.intern
    errors: list[str] = []
    metadata = _mapping(pod.get("metadata"))
    spec = _mapping(pod.get("spec"))
    status = _mapping(pod.get("status"))
    pod_ips = status.get("podIPs")
    reused = _reusable_ips(pod_ips, previous)
    if reused is not None:
        pod_ips_tuple, ipv4_tuple, ipv6_tuple = reused
    else:
        pod_ips_tuple, ipv4_tuple, ipv6_tuple = _parse_pod_ips(pod_ips, errors)
    ready = False
    ready_transition: str | None = None
    conditions = status.get("conditions")
    for condition in conditions if type(conditions) is list else ():
        if _is_mapping(condition) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
            transition = condition.get("lastTransitionTime")
            ready_transition = (
                _shared(_recent_times, transition, _TIMES_LIMIT)
                if type(transition) is str
                else None
            )
            break
    namespace = metadata.get("namespace")
    name = metadata.get("name")
    uid = metadata.get("uid")
    version = metadata.get("resourceVersion")
    phase = status.get("phase")
    pod_ip = status.get("podIP")
    # A pod's own strings (name, uid, addresses) are not interned: unique to it, they
    # would only add interning table entries (about 50 bytes each, never given back). The
    # previous record's objects are kept where equal, so that what holds them (a slice cache
    # sharing them, see CachedSlice) keeps sharing them across the pod's updates.
    if previous is not None:
        if name == previous.name:
            name = previous.name
        if uid == previous.uid:
            uid = previous.uid
    if type(pod_ip) is str and pod_ips_tuple and pod_ip == pod_ips_tuple[0]:
        pod_ip = pod_ips_tuple[0]
    node_name = spec.get("nodeName")
    hostname = spec.get("hostname")
    subdomain = spec.get("subdomain")
    init_containers = spec.get("initContainers")
    record: PodRecord = _new_record(
        (
            intern(namespace) if type(namespace) is str else "",
            name if type(name) is str else "",
            uid if type(uid) is str else "",
            _intern_labels(metadata.get("labels")),
            version if type(version) is str else "",
            intern(phase) if type(phase) is str else "",
            pod_ip if type(pod_ip) is str else "",
            pod_ips_tuple,
            ipv4_tuple,
            ipv6_tuple,
            ready,
            ready_transition,
            metadata.get("deletionTimestamp") is not None,
            intern(node_name) if type(node_name) is str else "",
            intern(hostname) if type(hostname) is str else "",
            intern(subdomain) if type(subdomain) is str else "",
            _ports_of(spec.get("containers"), errors, sidecars=False),
            _ports_of(init_containers, errors, sidecars=True) if init_containers else (),
            tuple(errors) if errors else (),
        )
    )
    return record


_new_record: Any = partial(tuple.__new__, PodRecord)
"""``PodRecord(*fields)`` without NamedTuple's argument handling (fields in declaration order)."""


class PodRecordCache:
    """Records of the Pod dicts a library caller passes, per UID, reused for the same object.

    The same policy as the reconciler's ``SliceParseCache``: a record is reused only when the
    caller passes the very same dict again (identity) with the same ``resourceVersion``, as a
    caller planning from an informer's cache does on every sync. Objects passed in are read as
    immutable snapshots, as informers' objects are: a Pod changed in place must carry a new
    ``resourceVersion`` (or be a new dict) to be read again. A new version of a known Pod reuses
    the old record's parsed IPs. Bounded by ``max_pods`` (oldest first out); holds the dicts it
    was given until they are evicted or replaced. The operator itself never fills it: it keeps
    records, not dicts.
    """

    def __init__(self, max_pods: int = 200_000) -> None:
        self._entries: dict[str, tuple[Mapping[str, Any], object, PodRecord]] = {}
        self._max_pods = max_pods
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, pod: Mapping[str, Any]) -> PodRecord:
        metadata = _mapping(pod.get("metadata"))
        uid = metadata.get("uid")
        if type(uid) is not str or not uid:
            return pod_record(pod)
        version = metadata.get("resourceVersion")
        entry = self._entries.get(uid)
        if entry is not None and entry[0] is pod and entry[1] == version:
            return entry[2]
        record = pod_record(pod, entry[2] if entry is not None else None)
        with self._lock:
            self._entries.pop(uid, None)
            self._entries[uid] = (pod, version, record)
            while len(self._entries) > self._max_pods:
                del self._entries[next(iter(self._entries))]
        return record

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


SHARED_RECORD_CACHE = PodRecordCache()
"""The process-wide cache that ``desired_from_service_pods`` (and so ``plan_service``) reads Pod
dicts through."""


def as_pod_record(pod: PodRecord | Mapping[str, Any]) -> PodRecord:
    """Accept either form wherever the reconciler takes pods (dicts through
    ``SHARED_RECORD_CACHE``)."""
    return pod if isinstance(pod, PodRecord) else SHARED_RECORD_CACHE.record(pod)
