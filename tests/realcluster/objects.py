"""Objects for real-cluster tests. The real server resets a Pod's and a Node's status on create,
so status is always set afterwards through the ``status`` subresource, as a kubelet would."""

from __future__ import annotations

from typing import Any

from tests.e2e.harness import pod_body, service_body
from tests.realcluster.kube import JSON, Kube

ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
CONTROLLER_NAME_LABEL = "service.kubernetes.io/endpoint-controller-name"
TRANSITION = "2026-01-01T00:00:00Z"


async def node(kube: Kube, name: str, zone: str | None = "zone-a", *, cpu: str = "4") -> JSON:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
    status, body = await kube.status_of(
        "POST",
        "/api/v1/nodes",
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
    )
    assert status in (200, 409), body
    return await kube.patch(
        f"/api/v1/nodes/{name}/status",
        {
            "status": {
                "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "lastHeartbeatTime": TRANSITION,
                        "lastTransitionTime": TRANSITION,
                    }
                ],
            }
        },
    )


async def service(kube: Kube, ns: str, name: str, **kwargs: Any) -> JSON:
    body = service_body(name, namespace=None, **kwargs)
    return await kube.create(f"/api/v1/namespaces/{ns}/services", body)


def pod_status(ip: str | list[str], *, ready: bool = True, transition: str = TRANSITION) -> JSON:
    return pod_body("status", ip, ready=ready, ready_time=transition)["status"]  # type: ignore[no-any-return]


async def pod(
    kube: Kube,
    ns: str,
    name: str,
    ip: str | list[str],
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    node_name: str | None = "node-a",
    container_ports: list[JSON] | None = None,
    **spec: Any,
) -> JSON:
    """The e2e harness's pod, created without status (the server would drop it), then given
    its status as a kubelet would."""
    body = pod_body(
        name,
        ip,
        labels=labels,
        ready=ready,
        node_name=node_name,
        container_ports=container_ports,
        namespace=ns,
        ready_time=TRANSITION,
    )
    status = body.pop("status")
    body["spec"].update(spec)
    await kube.create(f"/api/v1/namespaces/{ns}/pods", body)
    return await set_status(kube, ns, name, status)


async def set_status(kube: Kube, ns: str, name: str, status: JSON) -> JSON:
    return await kube.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status", {"status": status})


async def set_ready(kube: Kube, ns: str, name: str, ready: bool, *, at: str = TRANSITION) -> JSON:
    current = await kube.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    ip = [entry["ip"] for entry in current["status"]["podIPs"]]
    return await set_status(kube, ns, name, pod_status(ip, ready=ready, transition=at))


def endpoint_view(slices: list[JSON]) -> dict[str, tuple[Any, ...]]:
    """pod name -> (addresses, ready, serving, terminating, nodeName, zone, hostname)."""
    view: dict[str, tuple[Any, ...]] = {}
    for item in slices:
        for endpoint in item.get("endpoints") or []:
            conditions = endpoint.get("conditions", {})
            name = (endpoint.get("targetRef") or {}).get("name", "")
            view[name] = (
                tuple(endpoint["addresses"]),
                conditions.get("ready"),
                conditions.get("serving"),
                conditions.get("terminating"),
                endpoint.get("nodeName"),
                endpoint.get("zone"),
                endpoint.get("hostname"),
            )
    return view


def addresses(slices: list[JSON]) -> set[str]:
    return {a for s in slices for e in s.get("endpoints") or [] for a in e["addresses"]}


def ready_addresses(slices: list[JSON]) -> set[str]:
    return {
        a
        for s in slices
        for e in s.get("endpoints") or []
        if e.get("conditions", {}).get("ready")
        for a in e["addresses"]
    }
