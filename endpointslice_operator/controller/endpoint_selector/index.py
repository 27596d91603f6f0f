"""The EndpointSelector owner kind's index, spec validation and status.

An EndpointSelector (``endpointslice-operator.io/v1alpha1``, KEP-6116's shape; see
docs/endpointselector.md) selects pods and ports without a Service. Its slices come from the
same planner, queue and write pipeline as a Service's (:mod:`.sync`):

* :class:`EndpointSelectorIndex`: slim objects with their parsed selector, entered in the same
  per-namespace pod/selector index as the Services (``ServiceIndex.put_selector``), so a pod
  event queues the EndpointSelectors that select it beside the Services.
* :func:`validate`: what the CRD's schema cannot refuse (an empty or malformed selector,
  duplicate port names, an unknown protocol, ...): one ``(reason, message)`` per problem.
* :func:`desired_status`: ``status.observedGeneration`` and the ``Ready`` condition, written
  through Kopf's patch by the watch (:mod:`.watch`).
* :func:`endpoint_counts` / :func:`counts_patch`: ``status.endpoints`` and
  ``status.readyEndpoints``, the counts of the slices a sync published: the syncer records them
  in ``EndpointSelectorIndex.counts``, the index keeps those each object's status shows
  (``shown``), and :mod:`.status` writes the differences, at most once per
  interval per object.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from endpointslice_operator.controller.cache.indexes import ObjectEntry, ServiceIndex
from endpointslice_operator.controller.cache.owner_kinds import ENDPOINT_SELECTOR
from endpointslice_operator.controller.cache.selectors import (
    Selector,
    SelectorError,
    from_label_selector,
)
from endpointslice_operator.reconciler.plan import Plan

__all__ = [
    "CONDITION_READY",
    "PROTOCOLS",
    "REASON_ACCEPTED",
    "REASON_DUPLICATE_PORT_NAME",
    "REASON_INVALID_IP_FAMILY",
    "REASON_INVALID_NAME",
    "REASON_INVALID_PORT",
    "REASON_INVALID_SELECTOR",
    "REASON_UNKNOWN_PROTOCOL",
    "REASON_UNRESOLVED_PORT",
    "EndpointCounts",
    "EndpointSelectorEntry",
    "EndpointSelectorIndex",
    "counts_patch",
    "desired_status",
    "endpoint_counts",
    "status_patch",
    "validate",
]

log = logging.getLogger(__name__)

CONDITION_READY = "Ready"
REASON_ACCEPTED = "Accepted"
REASON_INVALID_SELECTOR = "InvalidSelector"
REASON_DUPLICATE_PORT_NAME = "DuplicatePortName"
REASON_UNKNOWN_PROTOCOL = "UnknownProtocol"
REASON_INVALID_PORT = "InvalidPort"
REASON_INVALID_IP_FAMILY = "InvalidIPFamily"
REASON_UNRESOLVED_PORT = "UnresolvedPort"
REASON_INVALID_NAME = "InvalidName"
"""A name longer than 63 characters: not a label value, and the slices carry it as one."""
LABEL_VALUE_MAX = 63
"""``Ready=False``: a named port of ``spec.ports`` exists on no selected pod (the slices are
published all the same, as kube-controller-manager would for such a Service)."""
PROTOCOLS = ("TCP", "UDP", "SCTP")
_IANA_SVC_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?=[a-z0-9])){0,14}$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_META_FIELDS = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "labels",
    "ownerReferences",
)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _target_problem(where: str, port: Mapping[str, Any]) -> str | None:
    """What is wrong with a port's ``port`` (KEP-6116's field) or ``targetPort`` (its alias,
    in a Service's spelling): both given and different, or neither a port number nor a
    container port name."""
    if "port" in port and "targetPort" in port and port["port"] != port["targetPort"]:
        return (
            f"{where}: port {port['port']!r} and its alias targetPort {port['targetPort']!r} "
            "differ; give one of them"
        )
    field = "targetPort" if "targetPort" in port and "port" not in port else "port"
    number = port.get(field)
    if isinstance(number, bool) or not (
        (isinstance(number, int) and 1 <= number <= 65535)
        or (isinstance(number, str) and _IANA_SVC_NAME.match(number))
    ):
        return (
            f"{where}.{field} {number!r} is neither a number from 1 to 65535 nor a "
            "container port name"
        )
    return None


def validate(body: Mapping[str, Any]) -> tuple[Selector | None, list[tuple[str, str]]]:
    """The parsed selector (None if unusable) and every problem of the spec, as
    ``(condition reason, message)``."""
    spec = _mapping(body.get("spec"))
    problems: list[tuple[str, str]] = []
    selector: Selector | None = None
    name = _mapping(body.get("metadata")).get("name")
    if isinstance(name, str) and len(name) > LABEL_VALUE_MAX:
        problems.append(
            (
                REASON_INVALID_NAME,
                f"metadata.name is {len(name)} characters long: the slices carry it as a label "
                f"value, at most {LABEL_VALUE_MAX}",
            )
        )
    try:
        selector = from_label_selector(spec.get("selector"))
    except SelectorError as exc:
        problems.append((REASON_INVALID_SELECTOR, f"spec.selector: {exc}"))
    ports = spec.get("ports") or []
    if not isinstance(ports, list):
        problems.append((REASON_INVALID_PORT, "spec.ports must be a list"))
        ports = []
    names: set[str] = set()
    for index, port in enumerate(ports):
        where = f"spec.ports[{index}]"
        if not isinstance(port, Mapping):
            problems.append((REASON_INVALID_PORT, f"{where} is not an object"))
            continue
        name = port.get("name") or ""
        if not isinstance(name, str) or (name and not _PORT_NAME.match(name)) or len(name) > 63:
            problems.append((REASON_INVALID_PORT, f"{where}.name {name!r} is not a DNS label"))
        elif name in names:
            problems.append((REASON_DUPLICATE_PORT_NAME, f"{where}.name {name!r} is used twice"))
        elif not name and len(ports) > 1:
            problems.append(
                (REASON_INVALID_PORT, f"{where}.name is required when there are several ports")
            )
        names.add(str(name))
        protocol = port.get("protocol", "TCP")
        if protocol not in PROTOCOLS:
            problems.append(
                (
                    REASON_UNKNOWN_PROTOCOL,
                    f"{where}.protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}",
                )
            )
        port_problem = _target_problem(where, port)
        if port_problem is not None:
            problems.append((REASON_INVALID_PORT, port_problem))
        app_protocol = port.get("appProtocol")
        if app_protocol is not None and not isinstance(app_protocol, str):
            problems.append((REASON_INVALID_PORT, f"{where}.appProtocol must be a string"))
    families = spec.get("ipFamilies")
    if families is not None and (
        not isinstance(families, list)
        or not all(f in ("IPv4", "IPv6") for f in families)
        or len(set(families)) != len(families)
    ):
        problems.append(
            (REASON_INVALID_IP_FAMILY, f"spec.ipFamilies {families!r}: IPv4 and/or IPv6, once")
        )
    return (selector if not problems else None), problems


def slim(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the syncs, Events and status read of an EndpointSelector."""
    metadata = _mapping(body.get("metadata"))
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {k: metadata[k] for k in _META_FIELDS if k in metadata},
        "spec": dict(_mapping(body.get("spec"))),
    }


@dataclass(frozen=True, slots=True)
class EndpointSelectorEntry(ObjectEntry):
    key: str
    body: dict[str, Any]
    selector: Selector | None
    """None when the spec is invalid (see ``problems``)."""
    problems: tuple[tuple[str, str], ...]

    @property
    def generation(self) -> int:
        generation = self.body["metadata"].get("generation")
        return generation if isinstance(generation, int) else 0


class EndpointSelectorIndex:
    """EndpointSelectors as last seen; their selectors live in the Services' selector index.

    ``synced`` turns true once every watched scope has been listed: before that, a sync of an
    EndpointSelector key must not take a missing object for a deleted one.
    """

    def __init__(self, services: ServiceIndex) -> None:
        self._services = services
        self._entries: dict[str, EndpointSelectorEntry] = {}
        self.synced = False
        self.served = False
        """The API server serves the CRD (found by discovery)."""
        self.counts: dict[str, EndpointCounts] = {}
        """Per key, the endpoints of the slices the last successful sync published (written by
        the syncer, read by :mod:`.status`)."""
        self.shown: dict[str, EndpointCounts] = {}
        """Per key, the counts the object's status showed when last seen."""
        self.unresolved: dict[str, str] = {}
        """Per key, the last sync's message naming the ports of ``spec.ports`` that match no
        selected pod (written by the syncer; ``Ready=False/UnresolvedPort``)."""
        self.statuses: dict[str, Mapping[str, Any]] = {}
        """Per key, the object's status when last seen (or as last written)."""

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> EndpointSelectorEntry | None:
        return self._entries.get(key)

    def keys(self) -> list[str]:
        return list(self._entries)

    def upsert(
        self, body: Mapping[str, Any]
    ) -> tuple[EndpointSelectorEntry | None, EndpointSelectorEntry]:
        slim_body = slim(body)
        metadata = slim_body["metadata"]
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        selector, problems = validate(slim_body)
        entry = EndpointSelectorEntry(
            ENDPOINT_SELECTOR.key(namespace, name), slim_body, selector, tuple(problems)
        )
        previous = self._entries.get(entry.key)
        self._entries[entry.key] = entry
        self.statuses[entry.key] = _mapping(body.get("status"))
        shown = _shown_counts(body.get("status"))
        if shown is None:
            self.shown.pop(entry.key, None)
        else:
            self.shown[entry.key] = shown
        self._services.put_selector(entry.key, namespace, selector)
        return previous, entry

    def remove(self, namespace: str, name: str) -> EndpointSelectorEntry | None:
        key = ENDPOINT_SELECTOR.key(namespace, name)
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._services.put_selector(key, namespace, None)
        self.counts.pop(key, None)
        self.shown.pop(key, None)
        self.unresolved.pop(key, None)
        self.statuses.pop(key, None)
        return entry

    def clear(self) -> list[str]:
        """Remove every EndpointSelector (their CRD was deleted); their keys."""
        keys = list(self._entries)
        for key in keys:
            self._services.put_selector(key, self._entries.pop(key).namespace, None)
            self.counts.pop(key, None)
            self.shown.pop(key, None)
        return keys


class EndpointCounts(NamedTuple):
    """``status.readyEndpoints`` and ``status.endpoints``."""

    ready: int
    total: int


def endpoint_counts(slices: Iterable[Mapping[str, Any]]) -> EndpointCounts:
    """Endpoints in these slices, and those ready (``ready`` unset counts as ready, as
    kube-proxy reads it). A dual-stack pod is one endpoint in each family's slices."""
    ready = total = 0
    for endpoint_slice in slices:
        for endpoint in endpoint_slice.get("endpoints") or ():
            if not isinstance(endpoint, Mapping):
                continue
            total += 1
            conditions = _mapping(endpoint.get("conditions"))
            if conditions.get("ready") is not False:
                ready += 1
    return EndpointCounts(ready, total)


def _shown_counts(status: Any) -> EndpointCounts | None:
    status = _mapping(status)
    total, ready = status.get("endpoints"), status.get("readyEndpoints")
    if isinstance(total, int) and isinstance(ready, int):
        return EndpointCounts(ready, total)
    return None


def published_slices(existing: Iterable[Mapping[str, Any]], plan: Plan) -> list[Mapping[str, Any]]:
    """The slices once ``plan`` is applied to ``existing``."""
    replaced = {
        str(_mapping(s.get("metadata")).get("name") or "") for s in (*plan.updates, *plan.deletes)
    }
    kept = [s for s in existing if _mapping(s.get("metadata")).get("name") not in replaced]
    return [*kept, *plan.updates, *plan.creates]


def counts_patch(
    counts: EndpointCounts | None, current: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``status.endpoints`` and ``status.readyEndpoints`` to write, or None when unknown
    (no sync published yet) or already shown."""
    if counts is None:
        return None
    current = _mapping(current)
    if current.get("endpoints") == counts.total and current.get("readyEndpoints") == counts.ready:
        return None
    return {"endpoints": counts.total, "readyEndpoints": counts.ready}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def desired_status(
    entry: EndpointSelectorEntry, unresolved: str | None = None
) -> tuple[str, str, str]:
    """``(status, reason, message)`` of the ``Ready`` condition for this spec, and
    ``unresolved``: the last sync's message about ports that match no selected pod."""
    if entry.problems:
        reason = entry.problems[0][0]
        return "False", reason, "; ".join(message for _, message in entry.problems)
    if unresolved is not None:
        return "False", REASON_UNRESOLVED_PORT, unresolved
    return "True", REASON_ACCEPTED, "The operator publishes the EndpointSlices of this selector"


def status_patch(
    entry: EndpointSelectorEntry,
    current: Mapping[str, Any] | None,
    unresolved: str | None = None,
) -> dict[str, Any] | None:
    """The status to write (observedGeneration and the Ready condition), or None when the
    object's status says so already (a restart with nothing changed writes nothing)."""
    status, reason, message = desired_status(entry, unresolved)
    current = _mapping(current)
    conditions = current.get("conditions")
    held = next(
        (
            c
            for c in (conditions if isinstance(conditions, list) else ())
            if isinstance(c, Mapping) and c.get("type") == CONDITION_READY
        ),
        None,
    )
    generation = entry.generation
    if (
        held is not None
        and current.get("observedGeneration") == generation
        and held.get("status") == status
        and held.get("reason") == reason
        and held.get("message") == message
        and held.get("observedGeneration") == generation
    ):
        return None
    transition = (
        held.get("lastTransitionTime")
        if held is not None and held.get("status") == status and held.get("lastTransitionTime")
        else _now()
    )
    return {
        "observedGeneration": generation,
        "conditions": [
            {
                "type": CONDITION_READY,
                "status": status,
                "reason": reason,
                "message": message,
                "observedGeneration": generation,
                "lastTransitionTime": transition,
            }
        ],
    }
