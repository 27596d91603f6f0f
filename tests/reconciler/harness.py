"""Test fixtures shared by the ported upstream reconciler tests.

``new_pod``, ``new_service_and_endpoint_meta``, ``new_empty_endpoint_slice`` and
``pod_to_endpoint`` build the same objects as upstream's helpers (as JSON). ``FakeClient``
plays upstream's fake clientset with its create/update reactors: it applies a ``Plan`` in
``finalize`` order, naming creates from generateName and bumping generations, and records the
actions. ``Harness`` ties a ``Reconciler`` to a client, a slice tracker and a metrics cache, and
tallies what upstream's Prometheus metrics would show (``expect_metrics``).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from endpointslice_operator.reconciler import (
    Plan,
    Reconciler,
    ReconcilerConfig,
    desired_from_service_pods,
    labels_from_service,
)
from endpointslice_operator.reconciler.hints.topology import TopologyCache
from endpointslice_operator.reconciler.tracking.metrics_cache import MetricsCache
from endpointslice_operator.reconciler.tracking.tracker import EndpointSliceTracker

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
Json = dict[str, Any]


def _pod_ip(n: int) -> str:
    # Upstream uses 1.2.3.<4+n>, which is not an IP from n = 252 on; Go then publishes the
    # address "<nil>" (its ParseIPSloppy gives nil), whereas we drop invalid IPs. To keep
    # upstream's endpoint counts, those pods get the next valid addresses instead.
    value = 4 + n
    return f"1.2.{3 + value // 256}.{value % 256}"


def new_pod(n: int, namespace: str, ready: bool, n_ports: int, terminating: bool) -> Json:
    """Upstream ``newPod`` (``n_ports`` is unused upstream too)."""
    metadata: Json = {
        "namespace": namespace,
        "name": f"pod{n}",
        "labels": {"foo": "bar"},
        "resourceVersion": str(n),
    }
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "container-1"}], "nodeName": "node-1"},
        "status": {
            "podIP": _pod_ip(n),
            "podIPs": [{"ip": _pod_ip(n)}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@dataclass
class EndpointMeta:
    address_type: str
    ports: list[Json]


def new_service_and_endpoint_meta(name: str, namespace: str) -> tuple[Json, EndpointMeta]:
    """Upstream ``newServiceAndEndpointMeta`` (no clusterIP, so headless-labelled)."""
    service = {
        "metadata": {"name": name, "namespace": namespace, "uid": f"{namespace}-{name}"},
        "spec": {
            "ports": [{"targetPort": 80, "protocol": "TCP", "name": name}],
            "selector": {"foo": "bar"},
            "ipFamilies": ["IPv4"],
        },
    }
    return service, EndpointMeta("IPv4", [{"name": name, "port": 80, "protocol": "TCP"}])


def owner_ref(service: Mapping[str, Any]) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "name": service["metadata"]["name"],
        "uid": service["metadata"].get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_empty_endpoint_slice(n: int, namespace: str, meta: EndpointMeta, service: Json) -> Json:
    """Upstream ``newEmptyEndpointSlice`` (no labels)."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service['metadata']['name']}-{n}",
            "namespace": namespace,
            "ownerReferences": [owner_ref(service)],
        },
        "addressType": meta.address_type,
        "ports": copy.deepcopy(meta.ports),
        "endpoints": [],
    }


def pod_to_endpoint(
    pod: Mapping[str, Any],
    service: Mapping[str, Any],
    address_type: str = "IPv4",
    zone: str | None = None,
) -> Json:
    """Upstream ``podToEndpoint`` with a zone-less (or the given) node: what the reconciler
    itself computes, taken from ``desired_from_service_pods`` so the two cannot drift."""
    node = {"metadata": {"name": pod["spec"].get("nodeName", "")}}
    if zone is not None:
        node["metadata"]["labels"] = {"topology.kubernetes.io/zone": zone}
    family_service = {**service, "spec": {**service.get("spec", {}), "ipFamilies": [address_type]}}
    desired = desired_from_service_pods(family_service, [pod], [node])
    for group in desired.groups.get(address_type, {}).values():
        for endpoint in group.endpoints.values():
            return endpoint.to_dict()
    raise AssertionError(f"pod {pod['metadata']['name']} has no {address_type} endpoint")


NODE_1 = {"metadata": {"name": "node-1"}}


class FakeClient:
    """An in-memory EndpointSlice store with upstream's fake-clientset reactors."""

    def __init__(self) -> None:
        self.slices: dict[str, Json] = {}
        self.actions: list[tuple[str, str]] = []
        self._ids = itertools.count(1)

    def create(self, slice_: Mapping[str, Any]) -> Json:
        obj = copy.deepcopy(dict(slice_))
        metadata = obj.setdefault("metadata", {})
        number = next(self._ids)
        if metadata.get("generateName"):
            metadata["name"] = f"{metadata.pop('generateName')}{number:08x}"
        assert metadata["name"] not in self.slices, f"{metadata['name']} already exists"
        metadata["generation"] = 1
        metadata.setdefault("uid", f"uid-{number}")
        metadata["resourceVersion"] = str(number)
        self.slices[metadata["name"]] = obj
        self.actions.append(("create", metadata["name"]))
        return copy.deepcopy(obj)

    def update(self, slice_: Mapping[str, Any]) -> Json:
        obj = copy.deepcopy(dict(slice_))
        metadata = obj["metadata"]
        current = self.slices[metadata["name"]]
        version = metadata.get("resourceVersion")
        assert version in (None, current["metadata"]["resourceVersion"]), "conflict"
        metadata.pop("generateName", None)
        metadata["uid"] = current["metadata"]["uid"]
        metadata["generation"] = current["metadata"].get("generation", 0) + 1
        metadata["resourceVersion"] = str(next(self._ids))
        self.slices[metadata["name"]] = obj
        self.actions.append(("update", metadata["name"]))
        return copy.deepcopy(obj)

    def delete(self, slice_: Mapping[str, Any]) -> None:
        name = slice_["metadata"]["name"]
        del self.slices[name]
        self.actions.append(("delete", name))

    def list(self) -> list[Json]:
        return [copy.deepcopy(s) for s in self.slices.values()]


@dataclass
class Tally:
    """What upstream's reconciler metrics would read (histogram values are sums)."""

    added_per_sync: int = 0
    removed_per_sync: int = 0
    num_created: int = 0
    num_updated: int = 0
    num_deleted: int = 0
    changed_per_sync: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class Harness:
    nodes: list[Json] = field(default_factory=lambda: [copy.deepcopy(NODE_1)])
    max_endpoints_per_slice: int = 100
    topology: TopologyCache | None = None
    client: FakeClient = field(default_factory=FakeClient)
    tracker: EndpointSliceTracker = field(default_factory=EndpointSliceTracker)
    tally: Tally = field(default_factory=Tally)
    config_overrides: dict[str, Any] = field(default_factory=dict)
    plans: list[Plan] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.config = ReconcilerConfig(
            controller_name=CONTROLLER_NAME,
            max_endpoints_per_slice=self.max_endpoints_per_slice,
            **self.config_overrides,
        )
        self.reconciler = Reconciler(self.config, self.topology)
        self.metrics = MetricsCache(self.max_endpoints_per_slice)

    def create_existing(self, slices: Iterable[Mapping[str, Any]]) -> None:
        """Upstream ``createEndpointSlices``: store fixtures under their own names."""
        for slice_ in slices:
            self.client.create(slice_)

    def reconcile(
        self,
        service: Mapping[str, Any],
        pods: Sequence[Mapping[str, Any]],
        existing: Sequence[Mapping[str, Any]],
        trigger_time: datetime | None = None,
        *,
        expect_errors: bool = False,
    ) -> Plan:
        """Upstream ``reconcileHelper``: plan, check nothing given was mutated, apply."""
        if trigger_time is None:
            trigger_time = datetime.now(UTC)
        inputs = copy.deepcopy((service, list(pods), list(existing), self.nodes))
        desired = desired_from_service_pods(service, pods, self.nodes)
        spec = service.get("spec", {})
        plan = self.reconciler.plan(
            service,
            desired,
            existing,
            traffic_distribution=spec.get("trafficDistribution"),
            labels=labels_from_service(service),
            trigger_time=trigger_time,
        )
        assert inputs == (service, list(pods), list(existing), self.nodes), "inputs were mutated"
        if not expect_errors:
            assert plan.errors == [], plan.errors
        self.apply(plan)
        self.plans.append(plan)
        return plan

    def apply(self, plan: Plan) -> None:
        for slice_ in plan.creates:
            self.tracker.update(self.client.create(slice_))
            self.tally.num_created += 1
        for slice_ in plan.updates:
            self.tracker.update(self.client.update(slice_))
            self.tally.num_updated += 1
        for gone in plan.deletes:
            self.client.delete(gone)
            self.tracker.expect_deletion(gone)
            self.tally.num_deleted += 1
        for address_type, metrics in plan.metrics.items():
            self.tally.added_per_sync += metrics.added
            self.tally.removed_per_sync += metrics.removed
            self.metrics.update_service(plan.service_key, address_type, metrics.port_cache)
        self.metrics.update_traffic_distribution(
            plan.service_key, plan.traffic_distribution_label or None
        )
        labels = (plan.topology_label, plan.traffic_distribution_label)
        self.tally.changed_per_sync[labels] = (
            self.tally.changed_per_sync.get(labels, 0) + plan.changed_slices
        )

    def expect_metrics(
        self,
        *,
        desired_slices: int,
        actual_slices: int,
        desired_endpoints: int,
        added_per_sync: int,
        removed_per_sync: int = 0,
        num_created: int = 0,
        num_updated: int = 0,
        num_deleted: int = 0,
        slices_changed_per_sync: int = 0,
        slices_changed_per_sync_topology: int = 0,
        slices_changed_per_sync_traffic_dist: int = 0,
        services_count_by_traffic_distribution: Mapping[str, int] | None = None,
    ) -> None:
        """Upstream ``expectMetrics`` (the sync counters belong to the controller tests)."""
        changed = self.tally.changed_per_sync
        got = {
            "desired_slices": self.metrics.desired_slices,
            "actual_slices": self.metrics.actual_slices,
            "desired_endpoints": self.metrics.desired_endpoints,
            "added_per_sync": self.tally.added_per_sync,
            "removed_per_sync": self.tally.removed_per_sync,
            "num_created": self.tally.num_created,
            "num_updated": self.tally.num_updated,
            "num_deleted": self.tally.num_deleted,
            "slices_changed_per_sync": changed.get(("Disabled", ""), 0),
            "slices_changed_per_sync_topology": changed.get(("Auto", ""), 0),
            "slices_changed_per_sync_traffic_dist": sum(
                changed.get(("Disabled", v), 0)
                for v in ("PreferClose", "PreferSameZone", "PreferSameNode")
            ),
        }
        want = {
            "desired_slices": desired_slices,
            "actual_slices": actual_slices,
            "desired_endpoints": desired_endpoints,
            "added_per_sync": added_per_sync,
            "removed_per_sync": removed_per_sync,
            "num_created": num_created,
            "num_updated": num_updated,
            "num_deleted": num_deleted,
            "slices_changed_per_sync": slices_changed_per_sync,
            "slices_changed_per_sync_topology": slices_changed_per_sync_topology,
            "slices_changed_per_sync_traffic_dist": slices_changed_per_sync_traffic_dist,
        }
        assert got == want
        by_td = self.metrics.services_by_traffic_distribution()
        for value in ("PreferClose", "PreferSameZone", "PreferSameNode", "ImplementationSpecific"):
            expected = (services_count_by_traffic_distribution or {}).get(value, 0)
            assert by_td.get(value, 0) == expected, (value, by_td)

    def expect_tracked_generation(self, slice_: Mapping[str, Any], generation: int) -> None:
        labels = slice_["metadata"]["labels"]
        generations = self.tracker.generations(
            slice_["metadata"]["namespace"], labels["kubernetes.io/service-name"]
        )
        assert generations is not None
        assert generations[slice_["metadata"]["uid"]] == generation


def slice_lengths(slices: Iterable[Mapping[str, Any]]) -> list[int]:
    """For upstream ``expectUnorderedSlicesWithLengths``: compare ``sorted`` results."""
    return sorted(len(s.get("endpoints") or []) for s in slices)


def verbs(actions: Sequence[tuple[str, str]]) -> list[str]:
    return [verb for verb, _ in actions]
