"""Builders for the Kubernetes objects that demos, benchmarks and tests seed the emulator with."""

from __future__ import annotations

from typing import Any

READY_SINCE = "2026-01-01T00:00:00Z"
"""The Ready condition's lastTransitionTime that seeded pods carry."""


def running_pod(
    name: str,
    namespace: str,
    labels: dict[str, str],
    ip: str,
    node_name: str,
    *,
    ready: bool = True,
    image: str = "registry.example/app:1",
    ready_since: str = READY_SINCE,
) -> dict[str, Any]:
    """A scheduled, Running Pod with one IP and one container serving ``http`` on 8080/TCP."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "nodeName": node_name,
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                }
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": ready_since,
                }
            ],
        },
    }
