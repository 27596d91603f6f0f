"""Secondary networks: which address source a managed Service uses, and the pods it leaves out.

``<prefix>/network: <namespace>/<name>`` (Multus,
:class:`~..reconciler.sources.MultusNetwork`) or ``<prefix>/device-network: <claim>[/<request>]``
(DRA, :class:`~..reconciler.sources.DeviceNetwork`); neither: ``status.podIPs``; both or
unparsable: :data:`REASON_INVALID_NETWORK`, no writes. Pods left out are counted in
``endpointslice_operator_pods_left_out{source}`` and the first :data:`NAMED_PODS` named in
:data:`REASON_PODS_LEFT_OUT`, at most once per :data:`EVENT_INTERVAL` per Service unless the
set changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.reconciler.sources import (
    AddressSource,
    DeviceNetwork,
    MultusNetwork,
    parse_device_network,
)

__all__ = [
    "EVENT_INTERVAL",
    "NAMED_PODS",
    "REASON_INVALID_NETWORK",
    "REASON_PODS_LEFT_OUT",
    "SOURCE_DEVICE_NETWORK",
    "SOURCE_NETWORK",
    "LeftOutReporter",
    "NetworkAnnotations",
    "NetworkChoice",
    "choose",
    "source_for",
]

REASON_INVALID_NETWORK = "InvalidNetwork"
REASON_PODS_LEFT_OUT = "PodsLeftOut"
SOURCE_NETWORK = "network"
SOURCE_DEVICE_NETWORK = "device-network"
NAMED_PODS = 5
EVENT_INTERVAL = 300.0


@dataclass(frozen=True, slots=True)
class NetworkAnnotations:
    """The annotation names, from the operator's prefix."""

    network: str
    device_network: str

    @property
    def names(self) -> tuple[str, str]:
        return (self.network, self.device_network)


@dataclass(frozen=True, slots=True)
class NetworkChoice:
    """The source a Service asked for: ``kind`` is :data:`SOURCE_NETWORK` (``network`` set) or
    :data:`SOURCE_DEVICE_NETWORK` (``claim`` and optionally ``request`` set)."""

    kind: str
    network: str = ""
    claim: str = ""
    request: str | None = None


def _annotations(service: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = service.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def choose(service: Mapping[str, Any], names: NetworkAnnotations) -> NetworkChoice | str | None:
    """The Service's address source: None for the cluster network, a string if invalid."""
    annotations = _annotations(service)
    network = annotations.get(names.network)
    device = annotations.get(names.device_network)
    if network is None and device is None:
        return None
    if network is not None and device is not None:
        return f"annotations {names.network} and {names.device_network} exclude each other"
    if network is not None:
        text = network.strip() if isinstance(network, str) else ""
        namespace, slash, name = text.rpartition("/")
        if not name or (slash and (not namespace or "/" in namespace)):
            return (
                f"annotation {names.network}: {network!r} is not <namespace>/<name> "
                "of a network attachment"
            )
        return NetworkChoice(SOURCE_NETWORK, network=text)
    parsed = parse_device_network(device) if isinstance(device, str) else None
    if parsed is None:
        return f"annotation {names.device_network}: {device!r} is not <pod claim name>[/<request>]"
    return NetworkChoice(SOURCE_DEVICE_NETWORK, claim=parsed[0], request=parsed[1])


def source_for(
    choice: NetworkChoice,
    network_statuses: Mapping[tuple[str, str], str],
    claim_statuses: Mapping[tuple[str, str], Mapping[str, str]],
    claims: Mapping[tuple[str, str], Mapping[str, Any]],
) -> AddressSource:
    """The reconciler source for a choice, over the pod index's side tables (not copied)."""
    if choice.kind == SOURCE_NETWORK:
        return MultusNetwork(choice.network, network_statuses)
    return DeviceNetwork(choice.claim, choice.request, claim_statuses, claims)


class LeftOutReporter:
    """Counts left-out pods per source and decides when a Service gets a Warning Event."""

    def __init__(
        self,
        set_gauge: Callable[[str, int], None],
        now: Callable[[], float],
        *,
        interval: float = EVENT_INTERVAL,
    ) -> None:
        self._set_gauge = set_gauge
        self._now = now
        self.interval = interval
        self._counts: dict[str, tuple[str, int]] = {}
        """Service key -> (source, pods left out)."""
        self._reported: dict[str, tuple[float, frozenset[str]]] = {}
        """Service key -> (when, which pods) of its last Warning Event."""

    def update(
        self, key: str, source: str | None, left_out: list[tuple[str, str]], what: str = ""
    ) -> str | None:
        """Record a sync's left-out pods; returns the Warning Event message to record, if one
        is due."""
        previous = self._counts.pop(key, None)
        if source is not None and left_out:
            self._counts[key] = (source, len(left_out))
        touched = {s for s in (source, previous[0] if previous else None) if s is not None}
        for name in touched:
            self._set_gauge(name, sum(n for s, n in self._counts.values() if s == name))
        if not left_out:
            self._reported.pop(key, None)
            return None
        pods = frozenset(pod for pod, _ in left_out)
        now = self._now()
        last = self._reported.get(key)
        if last is not None and last[1] == pods and now - last[0] < self.interval:
            return None
        self._reported[key] = (now, pods)
        named = "; ".join(f"{pod} ({reason})" for pod, reason in left_out[:NAMED_PODS])
        more = len(left_out) - NAMED_PODS
        tail = f" and {more} more" if more > 0 else ""
        return (
            f"{len(left_out)} selected pod(s) left out, no address on the {what or source}: "
            f"{named}{tail}"
        )

    def tracks(self, key: str) -> bool:
        """Whether the Service has left-out pods counted or reported."""
        return key in self._counts or key in self._reported

    def forget(self, key: str) -> None:
        """The Service is gone or no longer managed."""
        self.update(key, None, [])
