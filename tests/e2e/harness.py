"""Helpers for the end-to-end tests: object builders, an in-process operator, ``eventually``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from endpointslice_operator.controller.operator import Operator
from endpointslice_operator.settings import Settings
from endpointslice_operator.testing import Emulator

NS = "e2e"
ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
MANAGED_BY = "endpointslice-operator.io"
CONTROLLER_NAME_LABEL = "service.kubernetes.io/endpoint-controller-name"
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"

T = TypeVar("T")


async def eventually(check: Callable[[], T], *, timeout: float = 15.0, interval: float = 0.05) -> T:
    """Poll ``check`` until it returns a truthy value without raising AssertionError."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
            error: AssertionError | None = None
        except AssertionError as exc:
            error = exc
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s") from error
        await asyncio.sleep(interval)


def settings(emu: Emulator, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "kubeconfig": Path(emu.kubeconfig_path),
        "leader_election": False,
        "metrics_port": 0,
        "metrics_host": "127.0.0.1",
    }
    values.update(overrides)
    return Settings(**values)


@contextlib.asynccontextmanager
async def running_operator(
    emu: Emulator,
    *,
    wait_leading: bool = True,
    serve_health: bool = False,
    kubeconfig: Path | None = None,
    write_policy: str = "fresh",
    settle_heap: bool = False,
    **overrides: Any,
) -> AsyncIterator[Operator]:
    if kubeconfig is not None:
        overrides["kubeconfig"] = kubeconfig
    operator = Operator(
        settings(emu, **overrides),
        serve_health=serve_health,
        write_policy=write_policy,
        settle_heap=settle_heap,
    )
    task = asyncio.create_task(operator.run())
    try:
        waiter = asyncio.create_task(
            operator.wait_leading() if wait_leading else operator.wait_ready()
        )
        done, _ = await asyncio.wait(
            {task, waiter}, timeout=30, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            waiter.cancel()
            if task in done:
                task.result()
            raise AssertionError("the operator did not become ready")
        yield operator
    finally:
        operator.stop()
        await asyncio.wait_for(task, 30)


def namespace(emu: Emulator, name: str = NS) -> None:
    emu.store.create_namespace(name)


def cluster(emu: Emulator) -> None:
    """The namespace plus two Ready nodes, ``node-a`` in zone-a and ``node-b`` in zone-b."""
    namespace(emu)
    node(emu, "node-a", "zone-a")
    node(emu, "node-b", "zone-b")


def node(
    emu: Emulator, name: str, zone: str | None, *, cpu: str = "4", ready: bool = True
) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
    return emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }
    )


def service_body(
    name: str,
    *,
    selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    opt_in: bool = True,
    namespace: str | None = NS,
    **spec: Any,
) -> dict[str, Any]:
    """A Service (opted in by annotation unless ``opt_in`` is false); ``namespace=None`` leaves
    it to the request path."""
    meta_annotations = dict(annotations or {})
    if opt_in:
        meta_annotations.setdefault(ENABLED, "true")
    metadata: dict[str, Any] = {
        "name": name,
        "annotations": meta_annotations,
        "labels": dict(labels or {}),
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "ports": ports
            if ports is not None
            else [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            **spec,
        },
    }
    if selector is not None:
        body["spec"]["selector"] = selector
    return body


def service(emu: Emulator, name: str, **kwargs: Any) -> dict[str, Any]:
    return emu.store.create(service_body(name, **kwargs))


def pod_body(
    name: str,
    ip: str | list[str],
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    node_name: str | None = "node-a",
    container_ports: list[dict[str, Any]] | None = None,
    namespace: str = NS,
    ready_time: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    ips = [ip] if isinstance(ip, str) else ip
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "example/app:1",
                "ports": container_ports
                if container_ports is not None
                else [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            }
        ]
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {"app": "web"}),
        },
        "spec": spec,
        "status": {
            "phase": "Running",
            "podIP": ips[0],
            "podIPs": [{"ip": i} for i in ips],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": ready_time,
                }
            ],
        },
    }


def pod(emu: Emulator, name: str, ip: str | list[str], **kwargs: Any) -> dict[str, Any]:
    return emu.store.create(pod_body(name, ip, **kwargs))


def set_ready(
    emu: Emulator,
    name: str,
    ready: bool,
    *,
    namespace: str = NS,
    when: str = "2026-01-01T00:01:00Z",
) -> None:
    current = emu.store.get("pods", namespace, name)
    assert current is not None
    for condition in current["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "True" if ready else "False"
            condition["lastTransitionTime"] = when
    emu.store.update(current, subresource="status")


def slices(
    emu: Emulator, service_name: str, *, namespace: str = NS, managed_by: str | None = MANAGED_BY
) -> list[dict[str, Any]]:
    found = [
        s
        for s in emu.store.list("endpointslices", namespace)
        if s["metadata"].get("labels", {}).get(LABEL_SERVICE_NAME) == service_name
        and (managed_by is None or s["metadata"]["labels"].get(LABEL_MANAGED_BY) == managed_by)
    ]
    return sorted(found, key=lambda s: (s["addressType"], s["metadata"]["name"]))


def endpoints(emu: Emulator, service_name: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [ep for s in slices(emu, service_name, **kwargs) for ep in s.get("endpoints") or []]


def addresses(emu: Emulator, service_name: str, **kwargs: Any) -> set[str]:
    return {a for ep in endpoints(emu, service_name, **kwargs) for a in ep["addresses"]}


def writes(emu: Emulator) -> dict[str, int]:
    return {
        verb: emu.requests.count(verb=verb, resource="endpointslices")
        for verb in ("create", "update", "delete")
    }


def events(emu: Emulator, reason: str, *, namespace: str = NS) -> list[dict[str, Any]]:
    return [e for e in emu.store.list("events", namespace) if e.get("reason") == reason]


async def settle(operator: Operator, pause: float = 0.3) -> None:
    """Let watch events arrive, then wait until the work queue is idle."""
    await asyncio.sleep(pause)
    assert operator.queue is not None
    await asyncio.wait_for(operator.queue.wait_idle(), 30)
    await asyncio.sleep(pause / 3)
    await asyncio.wait_for(operator.queue.wait_idle(), 30)


def conditions(emu: Emulator, service_name: str) -> dict[str, tuple[bool, bool, bool]]:
    """address -> (ready, serving, terminating) over the Service's slices."""
    found = {}
    for ep in endpoints(emu, service_name):
        c = ep["conditions"]
        for address in ep["addresses"]:
            found[address] = (c.get("ready"), c.get("serving"), c.get("terminating"))
    return found


def foreign_slice(
    emu: Emulator, name: str, service_name: str, managed_by: str, namespace: str = NS
) -> dict[str, Any]:
    """A hand-made EndpointSlice labelled as managed by ``managed_by``."""
    return emu.store.create(
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {LABEL_SERVICE_NAME: service_name, LABEL_MANAGED_BY: managed_by},
            },
            "addressType": "IPv4",
            "ports": [],
            "endpoints": [{"addresses": ["10.9.9.9"], "conditions": {"ready": True}}],
        }
    )
