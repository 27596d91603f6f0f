"""The Multi-Cluster Services metrics (``endpointslice_operator_mcs_*``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from endpointslice_operator.metrics.collectors import ExactCounter

__all__ = ["MulticlusterMetrics"]


class MulticlusterMetrics:
    """``endpointslice_operator_mcs_*``: Multi-Cluster Services (``--multicluster``).

    Per peer (label ``peer``: its cluster id, or its kubeconfig path until the id is known):
    whether it answers and the age of its Lease (seconds since its last successful sync); per
    source cluster: the imported slices held here; this cluster's ServiceExports by condition;
    the import writes made.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.peer_reachable = Gauge(
            "endpointslice_operator_mcs_peer_reachable",
            "1 while the peer cluster's API server answers, else 0",
            ["peer"],
            registry=r,
        )
        self.peer_sync_age = Gauge(
            "endpointslice_operator_mcs_peer_last_sync_age_seconds",
            "Seconds since the peer's Lease was last renewed (its watches healthy and listed)",
            ["peer"],
            registry=r,
        )
        self.imported_slices = Gauge(
            "endpointslice_operator_mcs_imported_slices",
            "Imported EndpointSlices held in this cluster, by source cluster",
            ["source_cluster"],
            registry=r,
        )
        self.exports = Gauge(
            "endpointslice_operator_mcs_exports",
            "This cluster's ServiceExports by condition (type, status)",
            ["condition", "status"],
            registry=r,
        )
        self.writes = ExactCounter(
            "endpointslice_operator_mcs_writes_total",
            "API writes of the multi-cluster controller, by resource",
            ["resource"],
            registry=r,
        )

    def replace(self, gauge: Gauge, values: dict[tuple[str, ...], float]) -> None:
        """Set a labelled gauge to exactly ``values`` (series not given are removed)."""
        gauge.clear()
        for labels, value in values.items():
            gauge.labels(*labels).set(value)
