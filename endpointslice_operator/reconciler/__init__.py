"""The EndpointSlice reconciler: a pure library (JSON in, plan out; no I/O).

A Python port of Kubernetes' ``k8s.io/endpointslice`` reconciler. See ``docs/reconciler.md``.
"""

from .cached_slice import CachedSlice
from .compact import compact_slice
from .config import ReconcilerConfig
from .core_endpoints import (
    ANNOTATION_OVER_CAPACITY,
    LABEL_ENDPOINTS_MANAGED_BY,
    LABEL_SKIP_MIRROR,
    EndpointsPlan,
    endpoint_subsets_for_service,
    endpoints_need_update,
    our_endpoints_labels,
    plan_endpoints,
    repack_subsets,
    truncate_subsets,
)
from .desired import (
    DesiredEndpoints,
    EndpointGroup,
    address_types_for_service,
    desired_from_service_pods,
)
from .endpoints import Endpoint, endpoint_from_dict
from .hints.topology import TopologyCache
from .labels import (
    ANNOTATION_TOPOLOGY_AWARE_HINTS,
    ANNOTATION_TOPOLOGY_MODE,
    LABEL_HEADLESS,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_TOPOLOGY_ZONE,
    LAST_CHANGE_TRIGGER_TIME,
    UPSTREAM_CONTROLLER_NAME,
    LabelsFunc,
    format_trigger_time,
    labels_from_service,
)
from .mirroring import (
    MIRRORING_CONTROLLER_NAME,
    MirroredEndpoints,
    desired_from_endpoints,
    mirrored_annotations,
    mirroring_labels,
    plan_mirroring,
    should_mirror,
)
from .plan import AddressTypeMetrics, Plan, PlanEvent
from .planner import Reconciler
from .records import SHARED_RECORD_CACHE, PodRecord, PodRecordCache, as_pod_record, pod_record
from .service import plan_service
from .slices import SliceParseCache
from .sources import (
    Addresses,
    AddressSource,
    ClusterNetwork,
    DeviceNetwork,
    LeftOut,
    MultusNetwork,
)
from .tracking.metrics_cache import EfficiencyInfo, MetricsCache
from .tracking.tracker import EndpointSliceTracker, StaleInformerCache
from .tracking.trigger_time import TriggerTimeTracker

__all__ = [
    "ANNOTATION_OVER_CAPACITY",
    "ANNOTATION_TOPOLOGY_AWARE_HINTS",
    "ANNOTATION_TOPOLOGY_MODE",
    "LABEL_ENDPOINTS_MANAGED_BY",
    "LABEL_HEADLESS",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "LABEL_SKIP_MIRROR",
    "LABEL_TOPOLOGY_ZONE",
    "LAST_CHANGE_TRIGGER_TIME",
    "MIRRORING_CONTROLLER_NAME",
    "SHARED_RECORD_CACHE",
    "UPSTREAM_CONTROLLER_NAME",
    "AddressSource",
    "AddressTypeMetrics",
    "Addresses",
    "CachedSlice",
    "ClusterNetwork",
    "DesiredEndpoints",
    "DeviceNetwork",
    "EfficiencyInfo",
    "Endpoint",
    "EndpointGroup",
    "EndpointSliceTracker",
    "EndpointsPlan",
    "LabelsFunc",
    "LeftOut",
    "MetricsCache",
    "MirroredEndpoints",
    "MultusNetwork",
    "Plan",
    "PlanEvent",
    "PodRecord",
    "PodRecordCache",
    "Reconciler",
    "ReconcilerConfig",
    "SliceParseCache",
    "StaleInformerCache",
    "TopologyCache",
    "TriggerTimeTracker",
    "address_types_for_service",
    "as_pod_record",
    "compact_slice",
    "desired_from_endpoints",
    "desired_from_service_pods",
    "endpoint_from_dict",
    "endpoint_subsets_for_service",
    "endpoints_need_update",
    "format_trigger_time",
    "labels_from_service",
    "mirrored_annotations",
    "mirroring_labels",
    "our_endpoints_labels",
    "plan_endpoints",
    "plan_mirroring",
    "plan_service",
    "pod_record",
    "repack_subsets",
    "should_mirror",
    "truncate_subsets",
]
