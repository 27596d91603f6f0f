"""The benchmark cluster: opted-in Services with their pods, other Services, Nodes.

Every object is built deterministically from its index, so the load generator can name a pod,
its Service and its IP without asking the API server. Loading goes straight into an emulator
:class:`~endpointslice_operator.testing.Store` (POST semantics, watch events included, no HTTP),
which is what makes 100,000 pods take seconds rather than minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.reconciler import ReconcilerConfig, TopologyCache, plan_service
from endpointslice_operator.reconciler.endpoint_selector import (
    API_VERSION as SELECTOR_API_VERSION,
)
from endpointslice_operator.reconciler.endpoint_selector import GROUP as SELECTOR_GROUP
from endpointslice_operator.reconciler.endpoint_selector import plan_endpoint_selector
from endpointslice_operator.testing import Store
from endpointslice_operator.testing.objects import running_pod

__all__ = [
    "ENABLED_ANNOTATION",
    "MANAGED_BY",
    "NAMESPACE",
    "OPTED_IN_LABEL",
    "Scenario",
    "node_body",
    "pod_body",
    "populate",
    "reconciler_config",
    "service_body",
]

NAMESPACE = "bench"
MANAGED_BY = "endpointslice-operator.io"
"""The operator's default ``--managed-by``; the slices pre-created as "already right" use it."""
ENABLED_ANNOTATION = "endpointslice-operator.io/enabled"
OPTED_IN_LABEL = "bench.example.io/opted-in"
"""On the pods of opted-in Services, so the baseline controller can list just those."""
ZONES = ("zone-a", "zone-b", "zone-c")
TRANSITION_TIME = "2026-01-01T00:00:00Z"

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Scenario:
    """How many of each object; ``slices``: pre-create the slices the operator would write."""

    services: int
    pods_per_service: int
    other_services: int = 0
    other_pods_per_service: int = 0
    nodes: int = 50
    slices: bool = False
    namespace: str = NAMESPACE
    owner: str = "service"
    """``service``: opted-in Services own the pods; ``endpointselector``: EndpointSelectors of
    the same names, selector and port do (the emulator then serves their CRD), with the status
    an earlier run of the operator would have left."""

    @property
    def opted_in_pods(self) -> int:
        return self.services * self.pods_per_service

    @property
    def pods(self) -> int:
        return self.opted_in_pods + self.other_services * self.other_pods_per_service

    def service_name(self, index: int) -> str:
        return f"svc-{index:05d}"

    def pod_name(self, service: int, replica: int) -> str:
        return f"{self.service_name(service)}-{replica:03d}"

    def opted_in_pod(self, number: int) -> tuple[str, str]:
        """``(service, pod)`` names of the ``number``-th opted-in pod, spread over Services
        (consecutive numbers hit different Services)."""
        service, replica = number % self.services, (number // self.services) % self.pods_per_service
        return self.service_name(service), self.pod_name(service, replica)

    def to_args(self) -> list[str]:
        """Command-line flags of :mod:`benchmarks.lib.emulator_process` for this scenario."""
        args = [
            f"--services={self.services}",
            f"--pods-per-service={self.pods_per_service}",
            f"--other-services={self.other_services}",
            f"--other-pods-per-service={self.other_pods_per_service}",
            f"--nodes={self.nodes}",
            f"--namespace={self.namespace}",
        ]
        args.append(f"--owner={self.owner}")
        return [*args, "--slices"] if self.slices else args


def reconciler_config() -> ReconcilerConfig:
    """The operator's reconciler configuration with default settings."""
    return ReconcilerConfig(controller_name=MANAGED_BY)


def node_body(index: int) -> JSON:
    name = f"node-{index:04d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
            },
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def service_body(name: str, *, namespace: str = NAMESPACE, opted_in: bool = True) -> JSON:
    annotations = {ENABLED_ANNOTATION: "true"} if opted_in else {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def endpoint_selector_body(name: str, *, namespace: str = NAMESPACE) -> JSON:
    """The EndpointSelector equivalent of :func:`service_body`'s opted-in Service."""
    return {
        "apiVersion": SELECTOR_API_VERSION,
        "kind": "EndpointSelector",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "ports": [{"name": "http", "port": "http", "protocol": "TCP"}],
        },
    }


def _accepted(selector: JSON, endpoints: int) -> JSON:
    """The status a previous run left: accepted, ``endpoints`` endpoints, all ready."""
    generation = selector["metadata"].get("generation", 1)
    return {
        "observedGeneration": generation,
        "endpoints": endpoints,
        "readyEndpoints": endpoints,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Accepted",
                "message": "The operator publishes the EndpointSlices of this selector",
                "observedGeneration": generation,
                "lastTransitionTime": TRANSITION_TIME,
            }
        ],
    }


def pod_ip(number: int) -> str:
    """A distinct IPv4 address in 10.0.0.0/8 for each ``number`` < 2**24."""
    return f"10.{(number >> 16) & 255}.{(number >> 8) & 255}.{number & 255}"


def pod_body(
    name: str,
    app: str,
    ip: str,
    node: str,
    *,
    namespace: str = NAMESPACE,
    opted_in: bool = True,
    ready: bool = True,
) -> JSON:
    labels = {"app": app, "pod-template-hash": "5d8f7c"}
    if opted_in:
        labels[OPTED_IN_LABEL] = "true"
    return running_pod(
        name, namespace, labels, ip, node, ready=ready, image="example/app:1",
        ready_since=TRANSITION_TIME,
    )  # fmt: skip


def _service_groups(scenario: Scenario) -> Iterator[tuple[str, bool, int]]:
    """``(service name, opted in, pod count)`` for every Service of the scenario."""
    for index in range(scenario.services):
        yield scenario.service_name(index), True, scenario.pods_per_service
    for index in range(scenario.other_services):
        yield f"other-{index:05d}", False, scenario.other_pods_per_service


def populate(store: Store, scenario: Scenario) -> int:
    """Create the scenario's namespace, Nodes, Services and Pods (and slices); returns the
    number of objects created."""
    created = 0
    if store.get("namespaces", None, scenario.namespace) is None:
        store.create_namespace(scenario.namespace)
        created += 1
    nodes = [store.create(node_body(i)) for i in range(scenario.nodes)]
    created += len(nodes)
    pods_info = store.resolve("pods")
    config = reconciler_config()
    # One topology cache for all Services, as the operator keeps one (plan_service would build
    # one per call from the nodes).
    topology = TopologyCache()
    topology.set_nodes(nodes)
    number = 0
    selectors = scenario.owner == "endpointselector"
    if selectors:
        store.registry.unserved.discard(SELECTOR_GROUP)
    for name, opted_in, count in _service_groups(scenario):
        if selectors and opted_in:
            # With the status a previous run left.
            service = store.create(endpoint_selector_body(name, namespace=scenario.namespace))
            service["status"] = _accepted(service, count)
            store.update(service, subresource="status")
        else:
            service = store.create(
                service_body(name, namespace=scenario.namespace, opted_in=opted_in)
            )
        created += 1
        pods: list[JSON] = []
        for replica in range(count):
            number += 1
            body = pod_body(
                f"{name}-{replica:03d}",
                name,
                pod_ip(number),
                nodes[number % len(nodes)]["metadata"]["name"],
                namespace=scenario.namespace,
                opted_in=opted_in,
            )
            # api_create takes ownership of the body (no copy, no decoding of the result).
            store.api_create(pods_info, body, keep_status=True)
            pods.append(body)
        created += count
        if scenario.slices and opted_in:
            plan = (
                plan_endpoint_selector(service, pods, nodes, [], config)
                if selectors
                else plan_service(service, pods, nodes, [], config, topology=topology)
            )
            for endpoint_slice in plan.creates:
                store.create(endpoint_slice)
                created += 1
    return created
