"""What kube-controller-manager left behind for a Service the operator now publishes.

A selectorless Service keeps kube-controller-manager's slices, its Endpoints object and the
mirroring controller's slices made from it, none ever updated again; kube-proxy merges them with
ours. None is ours, so the operator only reports them: a Warning Event ``LeftoverEndpoints`` and
a log line, once per Service and state, with the command that removes them (docs/operations.md).
Counted: EndpointSlice-controller slices of a Service without ``spec.selector``, mirroring slices
of a Service sourced from pods, and (when the Endpoints watch runs) an Endpoints object labelled
``endpoints.kubernetes.io/managed-by: endpoint-controller``.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.cache.indexes import Indexes, ServiceEntry, split_key
from endpointslice_operator.reconciler.core_endpoints import LABEL_ENDPOINTS_MANAGED_BY
from endpointslice_operator.reconciler.labels import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    UPSTREAM_CONTROLLER_NAME,
)
from endpointslice_operator.reconciler.mirroring import MIRRORING_CONTROLLER_NAME

__all__ = [
    "DEFAULT_MANAGED_BY",
    "KCM_ENDPOINTS_CONTROLLER",
    "REASON_LEFTOVER_ENDPOINTS",
    "LeftoverReporter",
    "Leftovers",
    "find_leftovers",
    "removal_commands",
]

REASON_LEFTOVER_ENDPOINTS = "LeftoverEndpoints"
KCM_ENDPOINTS_CONTROLLER = "endpoint-controller"
"""kube-controller-manager's value (v1.33+) of ``endpoints.kubernetes.io/managed-by``."""
DEFAULT_MANAGED_BY = "endpointslice-operator.io"

Record = Callable[[Mapping[str, Any], str, str, str], Awaitable[None]]
"""``recorder.record(service, type, reason, message)``."""


@dataclass(frozen=True, slots=True)
class Leftovers:
    """What kube-controller-manager left for one Service."""

    slices: bool = False
    """Slices of its EndpointSlice controller (the Service has no ``spec.selector``)."""
    mirrored: bool = False
    """Slices of its mirroring controller (from an Endpoints object not ours)."""
    endpoints: bool = False
    """Its Endpoints object (labelled ``endpoint-controller``), seen by the Endpoints watch."""

    def __bool__(self) -> bool:
        return self.slices or self.mirrored or self.endpoints


def find_leftovers(entry: ServiceEntry, indexes: Indexes) -> Leftovers:
    """What kube-controller-manager left for a Service the operator publishes from pods."""
    namespace, name = split_key(entry.key)
    endpoints = False
    if indexes.endpoints.synced:
        found = indexes.endpoints.get(namespace, name)
        if found is not None and not indexes.endpoints.is_ours(found):
            labels = (found.get("metadata") or {}).get("labels") or {}
            endpoints = labels.get(LABEL_ENDPOINTS_MANAGED_BY) == KCM_ENDPOINTS_CONTROLLER
    return Leftovers(
        slices=not entry.has_spec_selector and indexes.slices.has_upstream(entry.key),
        mirrored=indexes.slices.has_upstream_mirrored(entry.key),
        endpoints=endpoints,
    )


def removal_commands(
    namespace: str, name: str, managed_by: str = DEFAULT_MANAGED_BY, *, endpoints: bool = True
) -> str:
    """The commands that remove what kube-controller-manager left for a Service: ours, and the
    kubectl ones; with ``endpoints`` (an Endpoints object is among the leftovers, or mirrored)
    the Endpoints object first: while it exists the mirroring controller writes its slices
    again."""
    migrate = ["endpointslice-operator", "migrate", "-n", namespace, name]
    if managed_by != DEFAULT_MANAGED_BY:
        migrate += ["--managed-by", managed_by]
    selector = (
        f"{LABEL_SERVICE_NAME}={name},{LABEL_MANAGED_BY} in "
        f"({UPSTREAM_CONTROLLER_NAME},{MIRRORING_CONTROLLER_NAME})"
    )
    ns = shlex.quote(namespace)
    kubectl = f"kubectl -n {ns} delete endpointslices -l {shlex.quote(selector)}"
    if endpoints:
        kubectl = f"kubectl -n {ns} delete endpoints {shlex.quote(name)} --ignore-not-found && " + (
            kubectl
        )
    return f"{shlex.join(migrate)} (or, by hand: {kubectl})"


def describe(leftovers: Leftovers, namespace: str, name: str) -> str:
    parts: list[str] = []
    if leftovers.slices:
        parts.append(
            f"EndpointSlices of {UPSTREAM_CONTROLLER_NAME}, written before spec.selector was "
            "removed and never updated since"
        )
    if leftovers.mirrored:
        parts.append(
            f"EndpointSlices of {MIRRORING_CONTROLLER_NAME}, mirrored from the Endpoints object "
            f"{namespace}/{name} that this operator does not manage"
        )
    if leftovers.endpoints:
        parts.append(
            f"the Endpoints object {namespace}/{name} of kube-controller-manager's "
            f"{KCM_ENDPOINTS_CONTROLLER}, no longer updated"
        )
    return "; ".join(parts)


class LeftoverReporter:
    """Reports kube-controller-manager's leftovers once per Service and state."""

    def __init__(self, indexes: Indexes, record: Record, managed_by: str) -> None:
        self.indexes = indexes
        self.record = record
        self.managed_by = managed_by
        self._reported: dict[str, Leftovers] = {}

    def start_term(self) -> None:
        self._reported.clear()

    def forget(self, key: str) -> None:
        self._reported.pop(key, None)

    async def check(self, entry: ServiceEntry) -> None:
        """A Warning Event (the recorder logs it too) when what is left for ``entry`` changed
        and is not nothing; forget it when nothing is left."""
        leftovers = find_leftovers(entry, self.indexes)
        if not leftovers:
            self._reported.pop(entry.key, None)
            return
        if self._reported.get(entry.key) == leftovers:
            return
        self._reported[entry.key] = leftovers
        namespace, name = split_key(entry.key)
        commands = removal_commands(
            namespace, name, self.managed_by, endpoints=leftovers.mirrored or leftovers.endpoints
        )
        message = (
            f"Objects of kube-controller-manager's controllers exist for this Service and no "
            f"longer follow its pods: {describe(leftovers, namespace, name)}. kube-proxy merges "
            f"such slices with ours. This operator never deletes them; remove them with: "
            f"{commands}"
        )
        await self.record(entry.body, "Warning", REASON_LEFTOVER_ENDPOINTS, message)
