"""Address sources: where a selected pod's endpoint addresses come from.

A source answers ``addresses(pod) -> Addresses | LeftOut`` for every counted pod: canonical
addresses per family, or a reason the pod is left out of every slice (counted in
``DesiredEndpoints.left_out``); it never raises. Without one, ``status.podIPs`` are used
directly. :class:`ClusterNetwork` (``status.podIPs``), :class:`MultusNetwork` (the
``network-status`` annotation) and :class:`DeviceNetwork` (DRA ``networkData``, KEP-4817); the
last two read side tables keyed by ``(namespace, pod name)`` since pod records stay small
(docs/reconciler.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

from .ipaddr import NOT_AN_IP, endpoint_ip
from .records import PodRecord

__all__ = [
    "NETWORK_STATUS_ANNOTATION",
    "AddressSource",
    "Addresses",
    "ClusterNetwork",
    "DeviceNetwork",
    "LeftOut",
    "MultusNetwork",
    "NetworkInterface",
    "claim_statuses_of",
    "network_status_of",
    "parse_device_network",
    "parse_network_status",
]

NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status"
"""Multus (Network Plumbing Working Group spec): a JSON list of the pod's attachments."""

PodKey = tuple[str, str]
"""``(namespace, pod name)``."""


class Addresses(NamedTuple):
    """A pod's endpoint addresses, canonical, per family."""

    ipv4: tuple[str, ...]
    ipv6: tuple[str, ...]


class LeftOut(NamedTuple):
    """The pod has no address in this source; ``reason`` says why (for logs and Events)."""

    reason: str


class AddressSource(Protocol):
    """Gives the endpoint addresses of one pod (see the module docs)."""

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        """The pod's addresses, or why it is left out; never raises."""
        ...


class ClusterNetwork:
    """``status.podIPs``: what ``source=None`` does, as an object."""

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        return Addresses(pod.ipv4, pod.ipv6)


def _split_addresses(texts: Iterable[str], *, cidr: bool) -> Addresses | str:
    """Canonical addresses per family; an error string if one does not parse. Addresses an
    EndpointSlice refuses (loopback, link-local ...) are dropped."""
    ipv4: list[str] = []
    ipv6: list[str] = []
    for text in texts:
        address = text.partition("/")[0] if cidr else text
        parsed = endpoint_ip(address)
        if parsed == NOT_AN_IP:
            return f"{text!r} is not an IP address" + (" (CIDR)" if cidr else "")
        if isinstance(parsed, str):
            continue
        family = ipv6 if parsed[1] else ipv4
        if parsed[0] not in family:
            family.append(parsed[0])
    return Addresses(tuple(ipv4), tuple(ipv6))


# -- Multus -----------------------------------------------------------------------------------


class NetworkInterface(NamedTuple):
    """One entry of a network-status annotation (the fields this operator reads)."""

    name: str
    interface: str
    ips: tuple[str, ...]


def network_status_of(pod: Mapping[str, Any]) -> str | None:
    """The network-status annotation text of a Pod (JSON), if it has one."""
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    text = annotations.get(NETWORK_STATUS_ANNOTATION) if isinstance(annotations, Mapping) else None
    return text if isinstance(text, str) else None


@lru_cache(maxsize=4096)
def parse_network_status(text: str) -> tuple[NetworkInterface, ...] | str:
    """The entries of a network-status annotation, or why it is malformed (a string).

    Cached by text: the operator asks again on every sync of the Service, and the replicas of
    a Deployment attached to a network with static addresses share nothing, but a pod's text
    is the same from one sync to the next.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    except ValueError:
        return "not JSON"
    if not isinstance(raw, list):
        return "not a JSON list"
    entries: list[NetworkInterface] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            return f"entry {index} is not an object"
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            return f"entry {index} has no name"
        ips = entry.get("ips", [])
        if not isinstance(ips, list) or not all(isinstance(ip, str) for ip in ips):
            return f"entry {index} ({name}): ips is not a list of strings"
        interface = entry.get("interface", "")
        entries.append(
            NetworkInterface(name, interface if isinstance(interface, str) else "", tuple(ips))
        )
    return tuple(entries)


def _qualified(name: str, namespace: str) -> str:
    """``namespace/name``; a bare name is in ``namespace`` (Multus's rule)."""
    return name if "/" in name else f"{namespace}/{name}"


class MultusNetwork:
    """Addresses of a pod on the Multus network ``network`` (``namespace/name``, or a bare name
    meaning the pod's namespace), from its network-status annotation.

    ``statuses`` maps ``(namespace, pod name)`` to the annotation text, for the pods that have
    one. Every entry naming the network counts (a pod may have several interfaces on it); a
    pod without such an entry, without the annotation, or with a malformed one is left out.
    """

    __slots__ = ("network", "statuses")

    def __init__(self, network: str, statuses: Mapping[PodKey, str]) -> None:
        self.network = network
        self.statuses = statuses

    @classmethod
    def from_pods(cls, network: str, pods: Iterable[Mapping[str, Any]]) -> MultusNetwork:
        """The source for Pod JSON objects (the library's usual input)."""
        statuses: dict[PodKey, str] = {}
        for pod in pods:
            text = network_status_of(pod)
            metadata = pod.get("metadata")
            if text is not None and isinstance(metadata, Mapping):
                statuses[(str(metadata.get("namespace") or ""), str(metadata.get("name")))] = text
        return cls(network, statuses)

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        text = self.statuses.get((pod.namespace, pod.name))
        if text is None:
            return LeftOut(f"no {NETWORK_STATUS_ANNOTATION} annotation")
        entries = parse_network_status(text)
        if isinstance(entries, str):
            return LeftOut(f"malformed {NETWORK_STATUS_ANNOTATION} annotation: {entries}")
        wanted = _qualified(self.network, pod.namespace)
        ips: list[str] = []
        attached = False
        for entry in entries:
            if _qualified(entry.name, pod.namespace) == wanted:
                attached = True
                ips.extend(entry.ips)
        if not attached:
            return LeftOut(f"not attached to network {wanted}")
        found = _split_addresses(ips, cidr=False)
        if isinstance(found, str):
            return LeftOut(f"malformed {NETWORK_STATUS_ANNOTATION} annotation: {found}")
        if not found.ipv4 and not found.ipv6:
            return LeftOut(f"no usable address on network {wanted}")
        return found


# -- DRA (KEP-4817) ---------------------------------------------------------------------------


def parse_device_network(text: str) -> tuple[str, str | None] | None:
    """``<pod claim name>[/<request>]`` -> ``(claim, request or None)``; None if malformed."""
    claim, slash, request = text.strip().partition("/")
    if not claim or (slash and (not request or "/" in request)):
        return None
    return claim, request if slash else None


def claim_statuses_of(pod: Mapping[str, Any]) -> dict[str, str] | None:
    """``{pod claim name: ResourceClaim name}`` from a Pod's ``status.resourceClaimStatuses``
    (entries without a ``resourceClaimName`` are left out: none was generated); None when the
    pod has no such list."""
    status = pod.get("status")
    raw = status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
    if not isinstance(raw, list):
        return None
    found: dict[str, str] = {}
    for entry in raw:
        if not isinstance(entry, Mapping):
            continue
        name, claim = entry.get("name"), entry.get("resourceClaimName")
        if isinstance(name, str) and isinstance(claim, str) and claim:
            found[name] = claim
    return found


def _claim_network_ips(claim: Mapping[str, Any], request: str | None) -> list[str] | str | None:
    """CIDRs of the allocated devices (of ``request``, when given); None while unallocated;
    a string when the claim is malformed."""
    status = claim.get("status")
    status = status if isinstance(status, Mapping) else {}
    allocation = status.get("allocation")
    if not isinstance(allocation, Mapping):
        return None
    devices = allocation.get("devices")
    results = devices.get("results") if isinstance(devices, Mapping) else None
    if not isinstance(results, list):
        return None
    allocated: set[tuple[str, str, str]] = set()
    for result in results:
        if not isinstance(result, Mapping):
            return "status.allocation.devices.results has an entry that is not an object"
        name = result.get("request")
        # A subrequest of a prioritized list is reported as "<request>/<subrequest>".
        if request is None or (isinstance(name, str) and name.partition("/")[0] == request):
            allocated.add(
                (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            )
    ips: list[str] = []
    device_statuses = status.get("devices")
    for device in device_statuses if isinstance(device_statuses, list) else ():
        if not isinstance(device, Mapping):
            continue
        ident = (str(device.get("driver")), str(device.get("pool")), str(device.get("device")))
        if ident not in allocated:
            continue
        network = device.get("networkData")
        raw = network.get("ips") if isinstance(network, Mapping) else None
        if raw is None:
            continue
        if not isinstance(raw, list) or not all(isinstance(ip, str) for ip in raw):
            return "status.devices[].networkData.ips is not a list of strings"
        ips.extend(raw)
    return ips


class DeviceNetwork:
    """Addresses from the network data of the devices allocated to a pod's resource claim.

    ``claim`` is the pod's claim name (``spec.resourceClaims[].name``), ``request`` optionally
    one of its requests. ``pod_claims`` maps ``(namespace, pod name)`` to the pod's
    ``status.resourceClaimStatuses`` (``{claim name: ResourceClaim name}``), ``claims`` maps
    ``(namespace, ResourceClaim name)`` to the ResourceClaim (JSON, ``status`` is enough).
    ``networkData.ips`` are CIDRs; the address part is published. A pod whose claim is not
    generated or not allocated yet, or whose devices report no address, is left out.
    """

    __slots__ = ("claim", "claims", "pod_claims", "request")

    def __init__(
        self,
        claim: str,
        request: str | None,
        pod_claims: Mapping[PodKey, Mapping[str, str]],
        claims: Mapping[tuple[str, str], Mapping[str, Any]],
    ) -> None:
        self.claim = claim
        self.request = request
        self.pod_claims = pod_claims
        self.claims = claims

    @classmethod
    def from_objects(
        cls,
        claim: str,
        request: str | None,
        pods: Iterable[Mapping[str, Any]],
        resource_claims: Iterable[Mapping[str, Any]],
    ) -> DeviceNetwork:
        """The source for Pod and ResourceClaim JSON objects."""
        pod_claims: dict[PodKey, Mapping[str, str]] = {}
        for pod in pods:
            found = claim_statuses_of(pod)
            metadata = pod.get("metadata")
            if found and isinstance(metadata, Mapping):
                key = (str(metadata.get("namespace") or ""), str(metadata.get("name")))
                pod_claims[key] = found
        claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        for resource_claim in resource_claims:
            metadata = resource_claim.get("metadata")
            if isinstance(metadata, Mapping):
                key = (str(metadata.get("namespace") or ""), str(metadata.get("name")))
                claims[key] = resource_claim
        return cls(claim, request, pod_claims, claims)

    def addresses(self, pod: PodRecord) -> Addresses | LeftOut:
        claim_name = self.pod_claims.get((pod.namespace, pod.name), {}).get(self.claim)
        if claim_name is None:
            return LeftOut(f"no ResourceClaim for pod claim {self.claim!r} yet")
        claim = self.claims.get((pod.namespace, claim_name))
        if claim is None:
            return LeftOut(f"ResourceClaim {claim_name} not found")
        ips = _claim_network_ips(claim, self.request)
        if ips is None:
            return LeftOut(f"ResourceClaim {claim_name} is not allocated yet")
        if isinstance(ips, str):
            return LeftOut(f"malformed ResourceClaim {claim_name}: {ips}")
        found = _split_addresses(ips, cidr=True)
        if isinstance(found, str):
            return LeftOut(f"malformed ResourceClaim {claim_name}: {found}")
        if not found.ipv4 and not found.ipv6:
            what = f"request {self.request!r} of " if self.request else ""
            return LeftOut(f"no device network address in {what}ResourceClaim {claim_name}")
        return found
