"""Prometheus metrics of the operator, exported exactly as kube-controller-manager exports them.

The face of the package; one concern per module: :mod:`.operator` (:class:`OperatorMetrics`, the
slice controller's families and the operator's additions, holding the others),
:mod:`.workqueue` (client-go's ``workqueue_*``), :mod:`.mirroring` (upstream's mirroring
controller), :mod:`.multicluster` (Multi-Cluster Services), :mod:`.api_serving` (the custom
resources watched, served or not), :mod:`.collectors` (bucket series, help prefixes,
:class:`ExactCounter`) and :mod:`.exposition` (the text format as the Go client writes it).
"""

from endpointslice_operator.metrics.api_serving import ApiServingMetrics
from endpointslice_operator.metrics.collectors import SUBSYSTEM, ExactCounter, exponential_buckets
from endpointslice_operator.metrics.exposition import CONTENT_TYPE, render_registry
from endpointslice_operator.metrics.mirroring import MirroringMetrics
from endpointslice_operator.metrics.multicluster import MulticlusterMetrics
from endpointslice_operator.metrics.operator import OperatorMetrics, SyncResult
from endpointslice_operator.metrics.workqueue import WorkqueueMetrics

__all__ = [
    "CONTENT_TYPE",
    "SUBSYSTEM",
    "ApiServingMetrics",
    "ExactCounter",
    "MirroringMetrics",
    "MulticlusterMetrics",
    "OperatorMetrics",
    "SyncResult",
    "WorkqueueMetrics",
    "exponential_buckets",
    "render_registry",
]
