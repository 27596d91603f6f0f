"""Which Services the operator manages, and with which pod selector.

A Service is *opted in* when it carries the annotation ``<prefix>/enabled: "true"`` (exactly
that string) or the KEP-4770 label ``service.kubernetes.io/endpoint-controller-name`` naming our
controller. A label naming another controller hands the Service to that controller, even when
our annotation is present.

An opted-in Service is *managed* when it is not of type ExternalName and has a pod selector:
``spec.selector``, or for a selectorless Service the ``<prefix>/selector`` annotation in label
selector syntax (set-based included, see :mod:`.selectors`).

A *near miss* is a Service that was almost certainly meant to opt in but does not (see
:func:`near_miss`): a truthy-looking ``<prefix>/enabled`` value other than ``"true"``, an
annotation key under our prefix that is none of ours (``<prefix>/enable``, a wrong case), or an
opted-in selectorless Service without the selector annotation. The decision carries the one
sentence that names the fix; the sync records it as a Warning Event ``OptInIgnored`` and
``plan`` prints it. Looking for one costs a scan of the annotation keys, nothing more.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from endpointslice_operator.controller.cache.selectors import (
    Selector,
    SelectorError,
    from_match_labels,
    parse_selector,
)

__all__ = [
    "ENDPOINT_CONTROLLER_NAME_LABEL",
    "UPSTREAM_CONTROLLER_NAME",
    "Decision",
    "Status",
    "evaluate",
    "is_opted_in",
    "near_miss",
]

ENDPOINT_CONTROLLER_NAME_LABEL = "service.kubernetes.io/endpoint-controller-name"
"""KEP-4770: names the controller that should publish a Service's EndpointSlices."""

UPSTREAM_CONTROLLER_NAME = "endpointslice-controller.k8s.io"
"""managed-by value of kube-controller-manager's EndpointSlice controller."""

SERVICE_ANNOTATION_NAMES = (
    "enabled",
    "selector",
    "source",
    "endpoints",
    "network",
    "device-network",
    "view",
)
"""The names of every Service annotation of ours, under ``<prefix>/``."""

_TRUTHY = frozenset({"true", "yes", "y", "on", "1", "enabled", "enable"})


class Status(enum.Enum):
    NOT_OPTED_IN = "not-opted-in"
    EXTERNAL_NAME = "external-name"
    NO_SELECTOR = "no-selector"
    INVALID_SELECTOR = "invalid-selector"
    MANAGED = "managed"


class SelectorSource(enum.Enum):
    SPEC = "spec.selector"
    ANNOTATION = "annotation"


@dataclass(frozen=True, slots=True)
class Decision:
    status: Status
    selector: Selector | None = None
    source: SelectorSource | None = None
    error: str | None = None
    ignored_annotation: bool = False
    """The Service has ``spec.selector`` *and* the selector annotation: the annotation is
    ignored (the operator says so with a Warning Event)."""
    near_miss: str | None = None
    """Not managed, but almost certainly meant to be: the sentence naming the fix (see
    :func:`near_miss`)."""

    @property
    def managed(self) -> bool:
        return self.status is Status.MANAGED

    @property
    def opted_in(self) -> bool:
        return self.status is not Status.NOT_OPTED_IN


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_opted_in(service: Mapping[str, Any], *, enabled_annotation: str, managed_by: str) -> bool:
    metadata = _mapping(service.get("metadata"))
    labels = _mapping(metadata.get("labels"))
    named = labels.get(ENDPOINT_CONTROLLER_NAME_LABEL)
    if named is not None:
        return bool(named == managed_by)
    return bool(_mapping(metadata.get("annotations")).get(enabled_annotation) == "true")


def _unknown_keys(annotations: Mapping[str, Any], prefix: str) -> list[str]:
    """Annotation keys under ``prefix`` (in any case) that are none of ours."""
    lowered = prefix.lower() + "/"
    known = {f"{prefix}/{name}" for name in SERVICE_ANNOTATION_NAMES}
    return sorted(
        key
        for key in annotations
        if isinstance(key, str) and key.lower().startswith(lowered) and key not in known
    )


def _meant(key: str, prefix: str) -> str | None:
    """The annotation of ours ``key`` was probably meant to be (None: no close one)."""
    name = key.split("/", 1)[1].lower()
    if name in SERVICE_ANNOTATION_NAMES:
        return f"{prefix}/{name}"
    close = difflib.get_close_matches(name, SERVICE_ANNOTATION_NAMES, n=1, cutoff=0.75)
    return f"{prefix}/{close[0]}" if close else None


def near_miss(
    service: Mapping[str, Any],
    status: Status,
    *,
    enabled_annotation: str,
    selector_annotation: str,
) -> str | None:
    """The sentence naming the fix when a Service not managed was almost certainly meant to be
    (None otherwise): only for :attr:`Status.NOT_OPTED_IN` and :attr:`Status.NO_SELECTOR`."""
    if status not in (Status.NOT_OPTED_IN, Status.NO_SELECTOR):
        return None
    metadata = _mapping(service.get("metadata"))
    annotations = _mapping(metadata.get("annotations"))
    prefix = enabled_annotation.rsplit("/", 1)[0]
    opt_in = f'{enabled_annotation}: "true"'
    if status is Status.NOT_OPTED_IN:
        if ENDPOINT_CONTROLLER_NAME_LABEL in _mapping(metadata.get("labels")):
            return None  # handed to another controller on purpose
        value = annotations.get(enabled_annotation)
        if isinstance(value, str) and value.strip().lower() in _TRUTHY:
            return (
                f"The Service is not opted in: {enabled_annotation} is {value!r}, and only "
                f'the exact string "true" opts in. Set {opt_in}.'
            )
    unknown = _unknown_keys(annotations, prefix)
    if unknown:
        key = unknown[0]
        meant = _meant(key, prefix)
        fix = (
            f"rename it to {meant}"
            if meant is not None
            else f"ours are {', '.join(f'{prefix}/{n}' for n in SERVICE_ANNOTATION_NAMES)}"
        )
        state = (
            "is not opted in"
            if status is Status.NOT_OPTED_IN
            else "is opted in but has no pod selector"
        )
        return f"The Service {state}: the annotation {key} is not one of ours; {fix}."
    if status is Status.NO_SELECTOR:
        source = annotations.get(f"{prefix}/source")
        if isinstance(source, str) and source != "pods":
            return None  # mirrored from its Endpoints object (or an InvalidSource Event)
        return (
            f"The Service is opted in but has neither spec.selector nor the annotation "
            f"{selector_annotation}, so no EndpointSlices are published. Add "
            f"{selector_annotation} (label selector syntax, e.g. app=web), or set "
            f"{prefix}/source: endpoints to mirror its Endpoints object."
        )
    return None


def evaluate(
    service: Mapping[str, Any],
    *,
    enabled_annotation: str,
    selector_annotation: str,
    managed_by: str,
) -> Decision:
    """Decide whether and how the operator manages ``service`` (a Service JSON object)."""
    decision = _evaluate(
        service,
        enabled_annotation=enabled_annotation,
        selector_annotation=selector_annotation,
        managed_by=managed_by,
    )
    if decision.status in (Status.NOT_OPTED_IN, Status.NO_SELECTOR):
        miss = near_miss(
            service,
            decision.status,
            enabled_annotation=enabled_annotation,
            selector_annotation=selector_annotation,
        )
        if miss is not None:
            return Decision(decision.status, near_miss=miss)
    return decision


def _evaluate(
    service: Mapping[str, Any],
    *,
    enabled_annotation: str,
    selector_annotation: str,
    managed_by: str,
) -> Decision:
    if not is_opted_in(service, enabled_annotation=enabled_annotation, managed_by=managed_by):
        return Decision(Status.NOT_OPTED_IN)
    spec = _mapping(service.get("spec"))
    if spec.get("type") == "ExternalName":
        return Decision(Status.EXTERNAL_NAME)
    spec_selector = spec.get("selector")
    # The API server stores an empty selector map as no selector at all, so ``{}`` is treated as
    # absent (upstream would read a non-nil empty map as "select every pod").
    if spec_selector:
        if not isinstance(spec_selector, Mapping):
            return Decision(
                Status.INVALID_SELECTOR,
                source=SelectorSource.SPEC,
                error="spec.selector is not a map",
            )
        ignored = selector_annotation in _mapping(
            _mapping(service.get("metadata")).get("annotations")
        )
        try:
            return Decision(
                Status.MANAGED,
                from_match_labels(spec_selector),
                SelectorSource.SPEC,
                ignored_annotation=ignored,
            )
        except SelectorError as exc:
            return Decision(Status.INVALID_SELECTOR, source=SelectorSource.SPEC, error=str(exc))
    annotations = _mapping(_mapping(service.get("metadata")).get("annotations"))
    text = annotations.get(selector_annotation)
    if text is None:
        return Decision(Status.NO_SELECTOR)
    if not isinstance(text, str):
        return Decision(
            Status.INVALID_SELECTOR,
            source=SelectorSource.ANNOTATION,
            error=f"annotation {selector_annotation} is not a string",
        )
    try:
        return Decision(Status.MANAGED, parse_selector(text), SelectorSource.ANNOTATION)
    except SelectorError as exc:
        return Decision(
            Status.INVALID_SELECTOR,
            source=SelectorSource.ANNOTATION,
            error=f"annotation {selector_annotation}: {exc}",
        )
