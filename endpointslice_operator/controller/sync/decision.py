"""The one opt-in ladder: what a sync does with a Service, for the operator and for ``plan``.

From the Service and its opt-in decision (:func:`~..cache.optin.evaluate`), in this order:

1. opted in, with ``<prefix>/source`` other than ``pods``: the mirroring controller's
   (:attr:`Route.MIRROR`);
2. an invalid selector: no writes (:attr:`Route.INVALID_SELECTOR`);
3. not managed (not opted in, ExternalName, no selector): the slices of ours are deleted
   (:attr:`Route.UNMANAGED`); a near miss of the opt-in (:func:`~..cache.optin.near_miss`:
   ``enabled: "True"``, ``<prefix>/enable``, a selectorless Service without the selector
   annotation) carries the sentence naming the fix, which the operator records as a Warning
   Event ``OptInIgnored`` and ``plan`` prints;
4. a network annotation that cannot be used: no writes (:attr:`Route.INVALID_NETWORK`);
5. otherwise planned from its pods, on the cluster network or the chosen one
   (:attr:`Route.PODS`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.cache.optin import Decision, Status
from endpointslice_operator.controller.sync.networks import (
    NetworkAnnotations,
    NetworkChoice,
    choose,
)

__all__ = [
    "REASON_OPT_IN_IGNORED",
    "SOURCE_ENDPOINTS",
    "SOURCE_PODS",
    "Route",
    "Verdict",
    "decide",
    "source_of",
]

SOURCE_PODS = "pods"
SOURCE_ENDPOINTS = "endpoints"
"""Values of ``<prefix>/source``: slices from the pods (default) or mirrored from Endpoints."""


REASON_OPT_IN_IGNORED = "OptInIgnored"
"""Warning Event reason of a near miss of the opt-in (:attr:`Verdict.near_miss`)."""


class Route(enum.Enum):
    MIRROR = "mirror"
    INVALID_SELECTOR = "invalid selector"
    UNMANAGED = "unmanaged"
    INVALID_NETWORK = "invalid network"
    PODS = "pods"


@dataclass(frozen=True, slots=True)
class Verdict:
    route: Route
    source: str = SOURCE_PODS
    """The ``<prefix>/source`` value (not ``pods`` for :attr:`Route.MIRROR`)."""
    network: NetworkChoice | None = None
    """:attr:`Route.PODS`: the address source chosen (None: the cluster network)."""
    error: str | None = None
    """Why not (:attr:`Route.INVALID_SELECTOR`, :attr:`Route.INVALID_NETWORK`)."""
    near_miss: str | None = None
    """:attr:`Route.UNMANAGED`: the Service was almost certainly meant to opt in; the sentence
    naming the fix."""


def source_of(service: Mapping[str, Any], annotation: str) -> str:
    """The Service's ``<prefix>/source`` value (``pods`` when absent or not a string)."""
    annotations = (service.get("metadata") or {}).get("annotations")
    value = annotations.get(annotation) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else SOURCE_PODS


def decide(
    service: Mapping[str, Any],
    decision: Decision,
    *,
    source_annotation: str | None,
    networks: NetworkAnnotations | None,
) -> Verdict:
    """The ladder above; ``source_annotation`` None: no mirroring, ``networks`` None: the
    cluster network only."""
    if source_annotation is not None and decision.opted_in:
        source = source_of(service, source_annotation)
        if source != SOURCE_PODS:
            return Verdict(Route.MIRROR, source)
    if decision.status is Status.INVALID_SELECTOR:
        return Verdict(Route.INVALID_SELECTOR, error=decision.error)
    if decision.status is not Status.MANAGED:
        return Verdict(Route.UNMANAGED, near_miss=decision.near_miss)
    choice = choose(service, networks) if networks is not None else None
    if isinstance(choice, str):
        return Verdict(Route.INVALID_NETWORK, error=choice)
    return Verdict(Route.PODS, network=choice)
