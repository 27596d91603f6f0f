"""The result of planning one owner (Service): the writes to apply and what to report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .tracking.metrics_cache import EfficiencyInfo

__all__ = ["AddressTypeMetrics", "Plan", "PlanEvent"]


@dataclass(frozen=True, slots=True)
class PlanEvent:
    """A Kubernetes Event the caller should record on the Service.

    Mirrors what upstream's reconciler emits through its event recorder.
    """

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(slots=True)
class AddressTypeMetrics:
    """The numbers upstream's ``reconcileByAddressType`` feeds to its metrics, for one type.

    ``added``/``removed`` are the observations of ``endpoints_added_per_sync`` and
    ``endpoints_removed_per_sync``; ``port_cache`` is what ``MetricsCache.update_service``
    takes; the other three are its totals (desired slices at least 1, like upstream).
    """

    added: int = 0
    removed: int = 0
    desired_endpoints: int = 0
    desired_slices: int = 0
    actual_slices: int = 0
    port_cache: dict[str, EfficiencyInfo] = field(default_factory=dict)


@dataclass(slots=True)
class Plan:
    """The writes that bring an owner's EndpointSlices to the desired state.

    Apply them in this order, stopping at the first failure (as upstream's ``finalize``):
    ``creates`` (POST; ``metadata.generateName`` set, no name), then ``updates`` (PUT by
    ``metadata.name``; slices derived from existing ones carry their ``resourceVersion`` so a
    stale cache yields a 409, while creates recycled into a deleted slice's name carry none and
    replace it unconditionally), then ``deletes`` (the existing slice objects as given, including
    those of address types the Service no longer supports).

    Every dict in ``creates``/``updates`` is fresh and can be serialised as is.
    """

    service_key: str
    creates: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[Mapping[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """Pods the address source left out: ``(namespace/name, reason)`` (see ``sources``)."""
    events: list[PlanEvent] = field(default_factory=list)
    metrics: dict[str, AddressTypeMetrics] = field(default_factory=dict)
    topology_label: Literal["Auto", "Disabled"] = "Disabled"
    traffic_distribution_label: str = ""
    skipped_creates: int = 0
    """Creates left out because the owner is being deleted (upstream still counts them in
    ``endpointslices_changed_per_sync``)."""

    @property
    def write_count(self) -> int:
        """API writes this plan makes."""
        return len(self.creates) + len(self.updates) + len(self.deletes)

    @property
    def is_empty(self) -> bool:
        return self.write_count == 0

    @property
    def changed_slices(self) -> int:
        """The ``endpointslices_changed_per_sync`` observation for this sync."""
        return self.write_count + self.skipped_creates
