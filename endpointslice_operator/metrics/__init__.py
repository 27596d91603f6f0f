"""Prometheus metrics of the operator, exported exactly as kube-controller-manager exports them."""

from endpointslice_operator.metrics.operator import (
    CONTENT_TYPE,
    SUBSYSTEM,
    ExactCounter,
    MirroringMetrics,
    MulticlusterMetrics,
    OperatorMetrics,
    SyncResult,
    WorkqueueMetrics,
    exponential_buckets,
    render_registry,
)

__all__ = [
    "CONTENT_TYPE",
    "SUBSYSTEM",
    "ExactCounter",
    "MirroringMetrics",
    "MulticlusterMetrics",
    "OperatorMetrics",
    "SyncResult",
    "WorkqueueMetrics",
    "exponential_buckets",
    "render_registry",
]
