"""The EndpointSlice reconciler: a pure library (JSON in, plan out; no I/O).

A Python port of Kubernetes' ``k8s.io/endpointslice`` reconciler. See ``docs/reconciler.md``.
"""

from .compact import compact_slice
from .config import ReconcilerConfig
from .desired import (
    DesiredEndpoints,
    EndpointGroup,
    address_types_for_service,
    desired_from_service_pods,
)
from .endpoints import Endpoint, endpoint_from_dict
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
from .metrics_cache import EfficiencyInfo
from .plan import AddressTypeMetrics, Plan, PlanEvent
from .planner import Reconciler
from .records import PodRecord, as_pod_record, pod_record
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
from .topology import TopologyCache

__all__ = [
    "ANNOTATION_TOPOLOGY_AWARE_HINTS",
    "ANNOTATION_TOPOLOGY_MODE",
    "LABEL_HEADLESS",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "LABEL_TOPOLOGY_ZONE",
    "LAST_CHANGE_TRIGGER_TIME",
    "UPSTREAM_CONTROLLER_NAME",
    "AddressSource",
    "AddressTypeMetrics",
    "Addresses",
    "ClusterNetwork",
    "DesiredEndpoints",
    "DeviceNetwork",
    "EfficiencyInfo",
    "Endpoint",
    "EndpointGroup",
    "LabelsFunc",
    "LeftOut",
    "MultusNetwork",
    "Plan",
    "PlanEvent",
    "PodRecord",
    "Reconciler",
    "ReconcilerConfig",
    "SliceParseCache",
    "TopologyCache",
    "address_types_for_service",
    "as_pod_record",
    "compact_slice",
    "desired_from_service_pods",
    "endpoint_from_dict",
    "format_trigger_time",
    "labels_from_service",
    "plan_service",
    "pod_record",
]
