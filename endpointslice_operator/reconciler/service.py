"""``plan_service``: the one-call convenience for a Service (what upstream's controller does
between listing and writing)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .config import ReconcilerConfig
from .desired import NodesArg, desired_from_service_pods
from .hints.topology import TopologyCache
from .labels import labels_from_service
from .plan import Plan
from .planner import Reconciler
from .records import PodRecord
from .sources import AddressSource

__all__ = ["plan_service"]


def plan_service(
    service: Mapping[str, Any],
    pods: Iterable[PodRecord | Mapping[str, Any]],
    nodes: NodesArg,
    existing_slices: Iterable[Mapping[str, Any]],
    config: ReconcilerConfig,
    *,
    trigger_time: datetime | None = None,
    topology: TopologyCache | None = None,
    source: AddressSource | None = None,
) -> Plan:
    """Plan the EndpointSlice writes for one Service.

    ``pods`` are the Service's selected pods (JSON or ``PodRecord``), ``nodes`` the cluster's
    Nodes (``{name: node}`` or a list), ``existing_slices`` the slices labelled with the
    Service's name and managed by ``config.controller_name`` that are not being deleted.
    With ``topology=None`` and ``config.topology_hints``, a ``TopologyCache`` is built from
    ``nodes`` for this call (a long-running controller passes its shared one instead, so that
    hint state survives between syncs). ``source`` gives the pods' addresses (see
    :mod:`.sources`; ``None``: ``status.podIPs``).
    """
    if topology is None and config.topology_hints:
        topology = TopologyCache()
        node_list = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
        topology.set_nodes(node_list)
        nodes = node_list
    desired = desired_from_service_pods(service, pods, nodes, source)
    spec = service.get("spec")
    traffic_distribution = spec.get("trafficDistribution") if isinstance(spec, Mapping) else None
    return Reconciler(config, topology).plan(
        service,
        desired,
        existing_slices,
        traffic_distribution=traffic_distribution
        if isinstance(traffic_distribution, str)
        else None,
        labels=labels_from_service(service),
        trigger_time=trigger_time,
    )
