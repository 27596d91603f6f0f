"""Server-side printing: ``meta.k8s.io`` Tables, as ``kubectl get`` asks for them.

The columns follow kube-apiserver's printers for the served kinds, so ``kubectl get
endpointslices`` shows ADDRESSTYPE, PORTS and ENDPOINTS as it does against a cluster.
"""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from endpointslice_operator.testing.resources import ResourceInfo

JSON = dict[str, Any]
Cells = Callable[[JSON, float], list[Any]]

MAX_SHOWN = 3  # kubectl's printers list three items, then "+ N more..."


def wants_table(accept: str) -> str | None:
    """The Table apiVersion asked for in an Accept header (``as=Table;g=meta.k8s.io``)."""
    for option in accept.split(","):
        params = dict(part.strip().split("=", 1) for part in option.split(";")[1:] if "=" in part)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return f"meta.k8s.io/{params.get('v', 'v1')}"
    return None


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _age(timestamp: str | None, now: float) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        then = calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return "<unknown>"
    return human_duration(now - then)


def _more(items: list[str], total: int, empty: str) -> str:
    text = ",".join(items)
    if total > MAX_SHOWN:
        return f"{text} + {total - MAX_SHOWN} more..."
    return text or empty


def _meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def _no_cells(obj: JSON, now: float) -> list[Any]:
    return []


def _slice_cells(obj: JSON, now: float) -> list[Any]:
    ports = obj.get("ports") or []
    shown_ports = [
        str(p["port"]) if p.get("port") is not None else (p.get("name") or "*")
        for p in ports[:MAX_SHOWN]
    ]
    addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    return [
        obj.get("addressType", ""),
        _more(shown_ports, len(ports), "<unset>"),
        _more(addresses[:MAX_SHOWN], len(addresses), "<unset>"),
    ]


def _service_cells(obj: JSON, now: float) -> list[Any]:
    spec = obj.get("spec") or {}
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        external = spec.get("externalName", "<none>")
    elif kind == "LoadBalancer":
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        ips = [i.get("ip") or i.get("hostname") or "" for i in ingress] + list(
            spec.get("externalIPs") or []
        )
        external = ",".join(ips) or "<pending>"
    else:
        external = ",".join(spec.get("externalIPs") or []) or "<none>"
    ports = []
    for port in spec.get("ports") or []:
        number = (
            f"{port.get('port')}:{port['nodePort']}"
            if port.get("nodePort")
            else str(port.get("port"))
        )
        ports.append(f"{number}/{port.get('protocol', 'TCP')}")
    return [kind, spec.get("clusterIP") or "<none>", external, ",".join(ports) or "<none>"]


def _pod_cells(obj: JSON, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    return [f"{ready}/{len(spec.get('containers') or [])}", reason, restarts]


def _node_cells(obj: JSON, now: float) -> list[Any]:
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown"
    if ready is not None:
        state = "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix) :] for k in _meta(obj).get("labels") or {} if k.startswith(prefix))
    version = (status.get("nodeInfo") or {}).get("kubeletVersion", "")
    return [state, ",".join(roles) or "<none>", version]


def _endpoints_cells(obj: JSON, now: float) -> list[Any]:
    shown: list[str] = []
    total = 0
    for subset in obj.get("subsets") or []:
        for address in subset.get("addresses") or []:
            for port in subset.get("ports") or [{}]:
                total += 1
                if len(shown) < MAX_SHOWN:
                    suffix = f":{port['port']}" if "port" in port else ""
                    shown.append(address.get("ip", "") + suffix)
    return [_more(shown, total, "<none>")]


def _event_cells(obj: JSON, now: float) -> list[Any]:
    regarding = obj.get("involvedObject") or obj.get("regarding") or {}
    last = (
        obj.get("lastTimestamp")
        or obj.get("deprecatedLastTimestamp")
        or (obj.get("eventTime") or "")[:19] + ("Z" if obj.get("eventTime") else "")
        or _meta(obj).get("creationTimestamp")
    )
    involved = f"{str(regarding.get('kind', '')).lower()}/{regarding.get('name', '')}"
    return [
        _age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        involved,
        obj.get("message") or obj.get("note", ""),
    ]


def _namespace_cells(obj: JSON, now: float) -> list[Any]:
    return [(obj.get("status") or {}).get("phase", "")]


def _lease_cells(obj: JSON, now: float) -> list[Any]:
    return [(obj.get("spec") or {}).get("holderIdentity", "")]


def _endpoint_selector_cells(obj: JSON, now: float) -> list[Any]:
    """The CRD's additionalPrinterColumns (deploy/crds/endpointselectors...yaml): a value the
    object lacks is null, an object is its JSON, as the API server renders a JSONPath."""
    status = obj.get("status") or {}
    ready: JSON = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"),
        {},
    )
    selector = (obj.get("spec") or {}).get("selector")
    return [
        ready.get("status"),
        ready.get("reason"),
        status.get("endpoints"),
        status.get("readyEndpoints"),
        None if selector is None else json.dumps(selector, separators=(",", ":"), sort_keys=True),
    ]


def _condition_status(obj: JSON, kind: str) -> Any:
    """``.status.conditions[?(@.type==kind)].status`` as the API server renders it (null when
    absent)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c.get("status") for c in conditions if c.get("type") == kind), None)


def _service_export_cells(obj: JSON, now: float) -> list[Any]:
    """The ServiceExport CRD's printer columns (deploy/crds/serviceexports...yaml)."""
    return [_condition_status(obj, kind) for kind in ("Valid", "Ready", "Conflict")]


def _service_import_cells(obj: JSON, now: float) -> list[Any]:
    """The ServiceImport CRD's printer columns: ``.spec.type``, ``.spec.ips[0]``."""
    spec = obj.get("spec") or {}
    ips = spec.get("ips") or []
    return [spec.get("type"), ips[0] if ips else None]


def _deployment_cells(obj: JSON, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"
    return [ready, status.get("updatedReplicas", 0), status.get("availableReplicas", 0)]


def _replica_set_cells(obj: JSON, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [spec.get("replicas", 0), status.get("replicas", 0), status.get("readyReplicas", 0)]


def _column(name: str, description: str, kind: str = "string", fmt: str = "") -> JSON:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": 0}


NAME = _column("Name", "Name must be unique within a namespace.", fmt="name")
AGE = _column("Age", "CreationTimestamp is the time the object was created.")

# plural -> (columns after Name, their cells); Age comes last unless AGE_POSITION says otherwise
# (as for nodes: NAME STATUS ROLES AGE VERSION). Events have their own layout.
AGE_POSITION = {"nodes": 2}
PRINTERS: dict[str, tuple[list[JSON], Cells]] = {
    "endpointslices": (
        [
            _column("AddressType", "The type of address carried by this EndpointSlice."),
            _column("Ports", "Port numbers offered by this EndpointSlice."),
            _column("Endpoints", "Endpoints offered by this EndpointSlice."),
        ],
        _slice_cells,
    ),
    "services": (
        [
            _column("Type", "The type of the service."),
            _column("Cluster-IP", "The cluster IP of the service."),
            _column("External-IP", "The external IPs of the service."),
            _column("Port(s)", "The ports exposed by the service."),
        ],
        _service_cells,
    ),
    "pods": (
        [
            _column("Ready", "The aggregate readiness state of the pod's containers."),
            _column("Status", "The aggregate status of the pod's containers."),
            _column("Restarts", "The number of times the containers were restarted.", "integer"),
        ],
        _pod_cells,
    ),
    "nodes": (
        [
            _column("Status", "The status of the node."),
            _column("Roles", "The roles of the node."),
            _column("Version", "Kubelet Version reported by the node."),
        ],
        _node_cells,
    ),
    "deployments": (
        [
            _column("Ready", "Number of the pod with ready state."),
            _column("Up-to-date", "Total number of updated pods.", "integer"),
            _column("Available", "Number of available pods.", "integer"),
        ],
        _deployment_cells,
    ),
    "replicasets": (
        [
            _column("Desired", "Number of desired pods.", "integer"),
            _column("Current", "Number of current pods.", "integer"),
            _column("Ready", "Number of ready pods.", "integer"),
        ],
        _replica_set_cells,
    ),
    # A custom resource: its CRD's printer columns.
    "endpointselectors": (
        [
            _column("Ready", "Custom resource definition column (in JSONPath format)."),
            _column("Reason", "Custom resource definition column (in JSONPath format)."),
            _column("Endpoints", "Endpoints in the published EndpointSlices.", "integer"),
            _column("Ready-Endpoints", "Those of them ready.", "integer"),
            {**_column("Selector", "Custom resource definition column."), "priority": 1},
        ],
        _endpoint_selector_cells,
    ),
    "serviceexports": (
        [
            _column("Valid", "Whether the Service can be exported (the Valid condition)."),
            _column(
                "Ready", "Whether the export is in effect in the clusterset (the Ready condition)."
            ),
            _column(
                "Conflict",
                "Whether other clusters export it with other properties (the Conflict condition).",
            ),
        ],
        _service_export_cells,
    ),
    "serviceimports": (
        [
            _column("Type", "Custom resource definition column (in JSONPath format)."),
            _column(
                "IP",
                "The first of spec.ips (its primary family), as kubectl shows a Service's "
                "cluster IP.",
            ),
        ],
        _service_import_cells,
    ),
    "endpoints": ([_column("Endpoints", "Endpoints of the object.")], _endpoints_cells),
    "namespaces": ([_column("Status", "The status of the namespace.")], _namespace_cells),
    "leases": ([_column("Holder", "The holder of the lease.")], _lease_cells),
}
EVENT_COLUMNS = [
    _column("Last Seen", "Time since the event was last seen."),
    _column("Type", "Type of the event (Normal or Warning)."),
    _column("Reason", "Why the event was raised."),
    _column("Object", "The object the event is about."),
    _column("Message", "A human-readable description."),
]


def columns(info: ResourceInfo) -> list[JSON]:
    if info.plural == "events":
        return EVENT_COLUMNS
    extra, _ = PRINTERS.get(info.plural, ([], _no_cells))
    at = AGE_POSITION.get(info.plural, len(extra))
    return [NAME, *extra[:at], AGE, *extra[at:]]


def row(info: ResourceInfo, obj: JSON, now: float, include: str, version: str) -> JSON:
    if info.plural == "events":
        cells = _event_cells(obj, now)
    else:
        _, printer = PRINTERS.get(info.plural, ([], _no_cells))
        extra = printer(obj, now)
        at = AGE_POSITION.get(info.plural, len(extra))
        age = _age(_meta(obj).get("creationTimestamp"), now)
        cells = [_meta(obj).get("name", ""), *extra[:at], age, *extra[at:]]
    result: JSON = {"cells": cells}
    if include == "Object":
        result["object"] = obj
    elif include != "None":
        result["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": version,
            "metadata": _meta(obj),
        }
    return result


def table(
    info: ResourceInfo,
    objects: Iterable[JSON],
    *,
    version: str,
    now: float,
    include: str = "Metadata",
    metadata: JSON | None = None,
) -> JSON:
    """A Table of ``objects``; ``include`` is the request's includeObject (None/Metadata/Object)."""
    body: JSON = {"kind": "Table", "apiVersion": version, "metadata": metadata or {}}
    body["columnDefinitions"] = columns(info)
    body["rows"] = [row(info, obj, now, include, version) for obj in objects]
    return body
