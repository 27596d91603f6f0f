"""Seeded random mutations of a small cluster in the emulator (the chaos test's workload).

Every mutation goes through the emulator's store, so it is validated, versioned and watched
exactly like a client's write. The same seed gives the same sequence of mutations.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from endpointslice_operator.testing import Emulator
from tests.reliability.invariants import (
    CONTROLLER_NAME_LABEL,
    ENABLED,
    ENDPOINTS,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    MANAGED_BY,
    SELECTOR,
    SKIP_MIRROR,
    SOURCE,
)

JSON = dict[str, Any]

NAMESPACES = ("chaos-a", "chaos-b")
APPS = ("api", "web", "db", "cache")
ZONES = ("zone-a", "zone-b", "zone-c")
NODES = ("node-0", "node-1", "node-2", "node-3")
MAX_PODS = 260
MAX_SERVICES = 14


def _port_sets(rng: random.Random) -> list[JSON]:
    choice = rng.randrange(4)
    if choice == 0:
        return [{"name": "http", "port": 80, "targetPort": "http"}]
    if choice == 1:
        return [{"name": "http", "port": 80, "targetPort": 8080}]
    if choice == 2:
        return [
            {"name": "http", "port": 80, "targetPort": "http"},
            {"name": "metrics", "port": 9090, "targetPort": 9090},
        ]
    return [{"name": "dns", "port": 53, "targetPort": 5353, "protocol": "UDP"}]


@dataclass
class Churn:
    """A cluster of two namespaces, four nodes in three zones, Services and pods, mutated at
    random. ``counts`` tallies the mutations made, by kind."""

    emu: Emulator
    seed: int
    rng: random.Random = field(init=False)
    counts: Counter[str] = field(default_factory=Counter)
    foreign: dict[tuple[str, str], str] = field(default_factory=dict)
    """Slices of other controllers: (namespace, name) -> resourceVersion at creation."""
    foreign_endpoints: dict[tuple[str, str], str] = field(default_factory=dict)
    """Endpoints objects not ours, named after Services that ask for Endpoints."""
    _serial: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    # -- set-up ----------------------------------------------------------------------------

    def populate(self, services: int = 8, pods: int = 80) -> None:
        for namespace in NAMESPACES:
            self.emu.store.create_namespace(namespace)
        for i, name in enumerate(NODES):
            self.emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "topology.kubernetes.io/zone": ZONES[i % len(ZONES)],
                        },
                    },
                    "status": {
                        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        for _ in range(services):
            self.create_service()
        for _ in range(pods):
            self.create_pod()
        self.counts.clear()
        self._foreign_slices()
        self._foreign_endpoints()

    def _foreign_endpoints(self) -> None:
        """Per namespace, one Endpoints object made by someone else, in the way of a Service
        that asks for Endpoints of ours: never to be touched."""
        for namespace in NAMESPACES:
            services = self.emu.store.list("services", namespace)
            if not services:
                continue
            service = services[0]
            service["metadata"].setdefault("annotations", {})[ENDPOINTS] = "true"
            self.emu.store.update(service)
            created = self.emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": service["metadata"]["name"], "namespace": namespace},
                    "subsets": [{"addresses": [{"ip": "10.251.0.1"}], "ports": [{"port": 1}]}],
                }
            )
            key = (namespace, created["metadata"]["name"])
            self.foreign_endpoints[key] = created["metadata"]["resourceVersion"]

    def _foreign_slices(self) -> None:
        """Slices our operator must never touch, some labelled for Services it manages."""
        for namespace in NAMESPACES:
            services = [s["metadata"]["name"] for s in self.emu.store.list("services", namespace)]
            for i, managed_by in enumerate(
                ("endpointslice-controller.k8s.io", "someone-else.example.com", "")
            ):
                labels = {LABEL_SERVICE_NAME: services[i % len(services)]}
                if managed_by:
                    labels[LABEL_MANAGED_BY] = managed_by
                created = self.emu.store.create(
                    {
                        "apiVersion": "discovery.k8s.io/v1",
                        "kind": "EndpointSlice",
                        "metadata": {
                            "name": f"foreign-{i}",
                            "namespace": namespace,
                            "labels": labels,
                        },
                        "addressType": "IPv4",
                        "endpoints": [
                            {"addresses": [f"10.250.{i}.1"], "conditions": {"ready": True}}
                        ],
                        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                    }
                )
                self.foreign[(namespace, created["metadata"]["name"])] = created["metadata"][
                    "resourceVersion"
                ]

    # -- the loop --------------------------------------------------------------------------

    async def run(self, duration: float, *, pause: tuple[float, float] = (0.05, 0.6)) -> None:
        """Mutate until ``duration`` (loop) seconds have passed."""
        loop = asyncio.get_running_loop()
        end = loop.time() + duration
        while loop.time() < end:
            self.step()
            await asyncio.sleep(self.rng.uniform(*pause))

    def step(self) -> None:
        mutations: list[tuple[Callable[[], None], int]] = [
            (self.create_service, 3),
            (self.delete_service, 2),
            (self.scale, 6),
            (self.flip_readiness, 8),
            (self.relabel_pod, 4),
            (self.change_selector, 2),
            (self.change_ports, 2),
            (self.change_zone, 2),
            (self.toggle_opt_in, 3),
            (self.toggle_endpoints, 2),
            (self.mirror, 4),
        ]
        actions, weights = zip(*mutations, strict=True)
        self.rng.choices(actions, weights)[0]()

    # -- helpers ---------------------------------------------------------------------------

    def _next(self) -> int:
        self._serial += 1
        return self._serial

    def _services(self) -> list[JSON]:
        return [s for ns in NAMESPACES for s in self.emu.store.list("services", ns)]

    def _pods(self) -> list[JSON]:
        return [p for ns in NAMESPACES for p in self.emu.store.list("pods", ns)]

    def _selector_body(self) -> tuple[dict[str, str] | None, dict[str, str]]:
        """(spec.selector, annotations): a plain selector, or the selector annotation."""
        app, other = self.rng.sample(APPS, 2)
        if self.rng.random() < 0.7:
            return {"app": app}, {}
        text = self.rng.choice([f"app in ({app},{other})", f"app={app},track!=canary"])
        return None, {SELECTOR: text}

    # -- mutations -------------------------------------------------------------------------

    def create_service(self) -> None:
        if len(self._services()) >= MAX_SERVICES:
            self.delete_service()
            return
        serial = self._next()
        selector, annotations = self._selector_body()
        labels: dict[str, str] = {}
        opt = self.rng.random()
        if opt < 0.6:
            annotations[ENABLED] = "true"
        elif opt < 0.8:
            labels[CONTROLLER_NAME_LABEL] = MANAGED_BY
        if self.rng.random() < 0.3:
            annotations["service.kubernetes.io/topology-mode"] = "Auto"
        spec: JSON = {"ports": _port_sets(self.rng)}
        if selector is not None:
            spec["selector"] = selector
        flavour = self.rng.random()
        if flavour < 0.2:
            spec["ipFamilyPolicy"] = "RequireDualStack"
            spec["ipFamilies"] = ["IPv4", "IPv6"]
        elif flavour < 0.3:
            spec["clusterIP"] = "None"
        if self.rng.random() < 0.2:
            spec["publishNotReadyAddresses"] = True
        if self.rng.random() < 0.3:
            annotations[ENDPOINTS] = "true"
        self.emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": f"svc-{serial}",
                    "namespace": self.rng.choice(NAMESPACES),
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": spec,
            }
        )
        self.counts["create_service"] += 1

    def delete_service(self) -> None:
        services = self._services()
        if not services:
            return
        victim = self.rng.choice(services)["metadata"]
        self.emu.store.delete("services", victim["namespace"], victim["name"])
        self.counts["delete_service"] += 1

    def create_pod(self, namespace: str | None = None, app: str | None = None) -> None:
        serial = self._next()
        namespace = namespace or self.rng.choice(NAMESPACES)
        ready = self.rng.random() < 0.8
        ipv4 = f"10.{1 + serial // 60000}.{serial // 250 % 240}.{serial % 250 + 1}"
        ipv6 = f"fd00::{serial:x}"
        labels = {"app": app or self.rng.choice(APPS)}
        if self.rng.random() < 0.1:
            labels["track"] = "canary"
        self.emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{serial}", "namespace": namespace, "labels": labels},
                "spec": {
                    "nodeName": self.rng.choice(NODES),
                    "containers": [
                        {
                            "name": "main",
                            "image": "example/app:1",
                            "ports": [
                                {"name": "http", "containerPort": 8080},
                                {"name": "dns", "containerPort": 5353, "protocol": "UDP"},
                            ],
                        }
                    ],
                },
                "status": {
                    "phase": "Running",
                    "podIP": ipv4,
                    "podIPs": [{"ip": ipv4}, {"ip": ipv6}],
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True" if ready else "False",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ],
                },
            }
        )

    def scale(self) -> None:
        """Add or remove a batch of pods of one app (crossing the 100-per-slice boundary)."""
        namespace, app = self.rng.choice(NAMESPACES), self.rng.choice(APPS)
        pods = [
            p
            for p in self.emu.store.list("pods", namespace)
            if p["metadata"]["labels"].get("app") == app
        ]
        delta = self.rng.randint(1, 40)
        total = len(self._pods())
        if self.rng.random() < 0.5 and total + delta <= MAX_PODS:
            for _ in range(delta):
                self.create_pod(namespace, app)
            self.counts["scale_up"] += 1
        else:
            for victim in self.rng.sample(pods, min(delta, len(pods))):
                self.emu.store.delete("pods", namespace, victim["metadata"]["name"])
            self.counts["scale_down"] += 1

    def flip_readiness(self) -> None:
        pods = self._pods()
        if not pods:
            return
        for pod in self.rng.sample(pods, min(len(pods), self.rng.randint(1, 5))):
            for condition in pod["status"]["conditions"]:
                if condition["type"] == "Ready":
                    condition["status"] = "False" if condition["status"] == "True" else "True"
                    condition["lastTransitionTime"] = f"2026-01-01T01:{self._next() % 60:02d}:00Z"
            self.emu.store.update(pod, subresource="status")
            self.counts["flip_readiness"] += 1

    def relabel_pod(self) -> None:
        pods = self._pods()
        if not pods:
            return
        pod = self.rng.choice(pods)
        pod["metadata"]["labels"]["app"] = self.rng.choice(APPS)
        if self.rng.random() < 0.3:
            pod["metadata"]["labels"].pop("track", None)
        self.emu.store.update(pod)
        self.counts["relabel_pod"] += 1

    def change_selector(self) -> None:
        services = self._services()
        if not services:
            return
        service = self.rng.choice(services)
        selector, annotations = self._selector_body()
        service["metadata"].setdefault("annotations", {}).pop(SELECTOR, None)
        service["metadata"]["annotations"].update(annotations)
        if selector is None:
            service["spec"].pop("selector", None)
        else:
            service["spec"]["selector"] = selector
        self.emu.store.update(service)
        self.counts["change_selector"] += 1

    def change_ports(self) -> None:
        services = self._services()
        if not services:
            return
        service = self.rng.choice(services)
        service["spec"]["ports"] = _port_sets(self.rng)
        self.emu.store.update(service)
        self.counts["change_ports"] += 1

    def change_zone(self) -> None:
        node = self.emu.store.get("nodes", None, self.rng.choice(NODES))
        assert node is not None
        node["metadata"]["labels"]["topology.kubernetes.io/zone"] = self.rng.choice(ZONES)
        self.emu.store.update(node)
        self.counts["change_zone"] += 1

    def toggle_opt_in(self) -> None:
        services = self._services()
        if not services:
            return
        service = self.rng.choice(services)
        annotations = service["metadata"].setdefault("annotations", {})
        labels = service["metadata"].setdefault("labels", {})
        if labels.pop(CONTROLLER_NAME_LABEL, None) is None and annotations.get(ENABLED) == "true":
            annotations[ENABLED] = "false"
        elif self.rng.random() < 0.5:
            annotations[ENABLED] = "true"
        else:
            labels[CONTROLLER_NAME_LABEL] = MANAGED_BY
        self.emu.store.update(service)
        self.counts["toggle_opt_in"] += 1

    def toggle_endpoints(self) -> None:
        """Ask for the Service's core/v1 Endpoints, or stop asking."""
        services = [
            s
            for s in self._services()
            if (s["metadata"]["namespace"], s["metadata"]["name"]) not in self.foreign_endpoints
        ]
        if not services:
            return
        service = self.rng.choice(services)
        annotations = service["metadata"].setdefault("annotations", {})
        if annotations.pop(ENDPOINTS, None) is None:
            annotations[ENDPOINTS] = "true"
        self.emu.store.update(service)
        self.counts["toggle_endpoints"] += 1

    def mirror(self) -> None:
        """Mirroring Services (``source: endpoints``) and their hand-made Endpoints: create a
        pair, change the Endpoints' addresses, readiness or ports, delete one of the two, or
        put a selector on the Service (a conflicting source)."""
        namespace = self.rng.choice(NAMESPACES)
        mirrored = [
            s
            for s in self.emu.store.list("services", namespace)
            if (s["metadata"].get("annotations") or {}).get(SOURCE) == "endpoints"
        ]
        choice = self.rng.random()
        if not mirrored or (choice < 0.25 and len(self._services()) < MAX_SERVICES):
            name = f"mirror-{self._next()}"
            self.emu.store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "annotations": {ENABLED: "true", SOURCE: "endpoints"},
                    },
                    "spec": {"ports": [{"name": "pg", "port": 5432}]},
                }
            )
            self._put_endpoints(namespace, name)
            self.counts["mirror_create"] += 1
            return
        service = self.rng.choice(mirrored)
        name = service["metadata"]["name"]
        if choice < 0.75:
            self._put_endpoints(namespace, name)
            self.counts["mirror_change"] += 1
        elif choice < 0.85:
            if self.emu.store.get("endpoints", namespace, name) is not None:
                self.emu.store.delete("endpoints", namespace, name)
            self.counts["mirror_delete_endpoints"] += 1
        elif choice < 0.93:
            self.emu.store.delete("services", namespace, name)
            self.counts["mirror_delete_service"] += 1
        else:
            annotations = service["metadata"].setdefault("annotations", {})
            if SELECTOR in annotations:
                del annotations[SELECTOR]
            else:
                annotations[SELECTOR] = "app=db"
            self.emu.store.update(service)
            self.counts["mirror_conflict"] += 1

    def _put_endpoints(self, namespace: str, name: str) -> None:
        subsets = []
        for _ in range(self.rng.randint(1, 3)):
            ports = [{"name": "pg", "port": self.rng.choice((5432, 5433)), "protocol": "TCP"}]
            addresses = [
                f"10.252.{self.rng.randrange(4)}.{self.rng.randrange(1, 40)}"
                for _ in range(self.rng.randint(0, 30))
            ]
            if self.rng.random() < 0.2:
                addresses.append(f"fd01::{self.rng.randrange(1, 200):x}")
            ready = [{"ip": ip} for ip in addresses if self.rng.random() < 0.8]
            not_ready = [{"ip": ip} for ip in addresses if {"ip": ip} not in ready]
            subset: JSON = {"ports": ports}
            if ready:
                subset["addresses"] = ready
            if not_ready:
                subset["notReadyAddresses"] = not_ready
            subsets.append(subset)
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {SKIP_MIRROR: "true"},
            },
            "subsets": subsets,
        }
        current = self.emu.store.get("endpoints", namespace, name)
        if current is None:
            self.emu.store.create(body)
        else:
            current["subsets"] = subsets
            self.emu.store.update(current)
