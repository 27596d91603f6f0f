"""Which Services the operator manages, and with which pod selector.

A Service is *opted in* when it carries the annotation ``<prefix>/enabled: "true"`` (exactly
that string) or the KEP-4770 label ``service.kubernetes.io/endpoint-controller-name`` naming our
controller. A label naming another controller hands the Service to that controller, even when
our annotation is present.

An opted-in Service is *managed* when it is not of type ExternalName and has a pod selector:
``spec.selector``, or for a selectorless Service the ``<prefix>/selector`` annotation in label
selector syntax (set-based included, see :mod:`.selectors`).
"""

from __future__ import annotations

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
]

ENDPOINT_CONTROLLER_NAME_LABEL = "service.kubernetes.io/endpoint-controller-name"
"""KEP-4770: names the controller that should publish a Service's EndpointSlices."""

UPSTREAM_CONTROLLER_NAME = "endpointslice-controller.k8s.io"
"""managed-by value of kube-controller-manager's EndpointSlice controller."""


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


def evaluate(
    service: Mapping[str, Any],
    *,
    enabled_annotation: str,
    selector_annotation: str,
    managed_by: str,
) -> Decision:
    """Decide whether and how the operator manages ``service`` (a Service JSON object)."""
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
