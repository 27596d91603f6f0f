"""Upstream's mirroring controller's metrics (``endpoint_slice_mirroring_controller_*``)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Gauge, Histogram

from endpointslice_operator.metrics.collectors import (
    ENDPOINTS_PER_SYNC_BUCKETS,
    SYNC_DURATION_BUCKETS,
    ExactCounter,
    alpha,
)

__all__ = ["MIRRORING_SUBSYSTEM", "MirroringMetrics"]


#: Upstream's mirroring controller's metrics subsystem.
MIRRORING_SUBSYSTEM = "endpoint_slice_mirroring_controller"


class MirroringMetrics:
    """``endpoint_slice_mirroring_controller_*``: upstream's mirroring metrics (all ALPHA), for
    the Services whose slices the operator mirrors from their Endpoints object.

    The gauges are totals over those Services (upstream's metrics cache, per Endpoints object):
    desired endpoints, actual slices, and desired slices (per port group, the endpoints over
    the slice size, rounded up).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        name = MIRRORING_SUBSYSTEM
        self.endpoints_added_per_sync = Histogram(
            f"{name}_endpoints_added_per_sync",
            alpha("Number of endpoints added on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_updated_per_sync = Histogram(
            f"{name}_endpoints_updated_per_sync",
            alpha("Number of endpoints updated on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_removed_per_sync = Histogram(
            f"{name}_endpoints_removed_per_sync",
            alpha("Number of endpoints removed on each Endpoints sync"),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.addresses_skipped_per_sync = Histogram(
            f"{name}_addresses_skipped_per_sync",
            alpha(
                "Number of addresses skipped on each Endpoints sync due to being invalid or "
                "exceeding MaxEndpointsPerSubset"
            ),
            buckets=ENDPOINTS_PER_SYNC_BUCKETS,
            registry=r,
        )
        self.endpoints_sync_duration = Histogram(
            f"{name}_endpoints_sync_duration",
            alpha("Duration of syncEndpoints() in seconds"),
            buckets=SYNC_DURATION_BUCKETS,
            registry=r,
        )
        self.endpoints_desired = Gauge(
            f"{name}_endpoints_desired", alpha("Number of endpoints desired"), registry=r
        )
        self.num_endpoint_slices = Gauge(
            f"{name}_num_endpoint_slices", alpha("Number of EndpointSlices"), registry=r
        )
        self.desired_endpoint_slices = Gauge(
            f"{name}_desired_endpoint_slices",
            alpha("Number of EndpointSlices that would exist with perfect endpoint allocation"),
            registry=r,
        )
        self.changes_total = ExactCounter(
            f"{name}_changes",
            alpha("Number of EndpointSlice changes"),
            ("operation",),
            registry=r,
        )
        self._totals: dict[str, tuple[int, int, int]] = {}

    @staticmethod
    def now() -> float:
        return time.monotonic()

    def changes(self, operation: str) -> None:
        self.changes_total.labels(operation).inc()

    def observe(self, added: int, updated: int, removed: int, skipped: int) -> None:
        self.endpoints_added_per_sync.observe(added)
        self.endpoints_updated_per_sync.observe(updated)
        self.endpoints_removed_per_sync.observe(removed)
        self.addresses_skipped_per_sync.observe(skipped)

    def observe_duration(self, seconds: float) -> None:
        self.endpoints_sync_duration.observe(seconds)

    def set_totals(self, key: str, endpoints: int, slices: int, desired_slices: int) -> None:
        """Replace one Service's numbers and publish the sums."""
        self._totals[key] = (endpoints, slices, desired_slices)
        self._publish()

    def forget(self, key: str) -> None:
        if self._totals.pop(key, None) is not None:
            self._publish()

    def _publish(self) -> None:
        self.endpoints_desired.set(sum(t[0] for t in self._totals.values()))
        self.num_endpoint_slices.set(sum(t[1] for t in self._totals.values()))
        self.desired_endpoint_slices.set(sum(t[2] for t in self._totals.values()))
