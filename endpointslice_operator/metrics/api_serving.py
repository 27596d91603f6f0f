"""Whether the API server serves the custom resources the operator watches
(``endpointslice_operator_api_served``)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Gauge

__all__ = ["ApiServingMetrics"]


class ApiServingMetrics:
    """``endpointslice_operator_api_served{group,resource}``: 1 while the API server serves a
    custom resource the operator watches (EndpointSelectors, ServiceExports, ServiceImports),
    0 while it does not (its CRD not installed yet, or deleted: the operator is back to
    discovery). A series appears once the operator starts watching the kind."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.served = Gauge(
            "endpointslice_operator_api_served",
            "1 while the API server serves the custom resource the operator watches, else 0",
            ["group", "resource"],
            registry=registry,
        )

    def set(self, group: str, resources: Iterable[str], served: bool) -> None:
        """Mark every one of ``resources`` of ``group`` served or not."""
        for resource in resources:
            self.served.labels(group, resource).set(1 if served else 0)
