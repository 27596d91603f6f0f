"""Builders and look-ups for the EndpointSelector tests (emulator)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.testing import Emulator
from tests.e2e.harness import LABEL_MANAGED_BY, MANAGED_BY, NS

GROUP = "endpointslice-operator.io"
API_VERSION = f"{GROUP}/v1alpha1"
LABEL_SELECTOR_NAME = "endpointslice-operator.io/endpoint-selector-name"
LABEL_KEP6116 = "kubernetes.io/endpoint-selector-name"


def install_crd(emu: Emulator) -> None:
    """Serve the EndpointSelector API (the emulator's stand-in for installing the CRD)."""
    emu.store.registry.unserved.discard(GROUP)


def selector_body(
    name: str,
    *,
    match_labels: dict[str, str] | None = None,
    match_expressions: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    namespace: str = NS,
    **spec: Any,
) -> dict[str, Any]:
    selector: dict[str, Any] = {}
    if match_labels is not None:
        selector["matchLabels"] = match_labels
    if match_expressions is not None:
        selector["matchExpressions"] = match_expressions
    return {
        "apiVersion": API_VERSION,
        "kind": "EndpointSelector",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "selector": selector,
            "ports": ports
            if ports is not None
            else [{"name": "http", "port": 8080, "protocol": "TCP"}],
            **spec,
        },
    }


def endpoint_selector(emu: Emulator, name: str, **kwargs: Any) -> dict[str, Any]:
    return emu.store.create(selector_body(name, **kwargs))


def update_selector(emu: Emulator, name: str, change: Any) -> None:
    current = emu.store.get("endpointselectors", NS, name)
    assert current is not None
    change(current)
    emu.store.update(current)


def selector_slices(emu: Emulator, name: str, *, namespace: str = NS) -> list[dict[str, Any]]:
    found = [
        s
        for s in emu.store.list("endpointslices", namespace)
        if s["metadata"].get("labels", {}).get(LABEL_SELECTOR_NAME) == name
        and s["metadata"]["labels"].get(LABEL_MANAGED_BY) == MANAGED_BY
    ]
    return sorted(found, key=lambda s: (s["addressType"], s["metadata"]["name"]))


def selector_addresses(emu: Emulator, name: str) -> set[str]:
    return {
        a
        for s in selector_slices(emu, name)
        for ep in s.get("endpoints") or []
        for a in ep["addresses"]
    }


def ready_condition(emu: Emulator, name: str) -> dict[str, Any] | None:
    current = emu.store.get("endpointselectors", NS, name)
    assert current is not None
    status = current.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            return dict(condition, observedGeneration=status.get("observedGeneration"))
    return None


def status_counts(emu: Emulator, name: str) -> tuple[int | None, int | None]:
    """``(status.readyEndpoints, status.endpoints)`` of an EndpointSelector."""
    current = emu.store.get("endpointselectors", NS, name)
    assert current is not None
    status = current.get("status") or {}
    return status.get("readyEndpoints"), status.get("endpoints")
