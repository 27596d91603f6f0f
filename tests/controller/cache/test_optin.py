"""Opt-in rules and the choice of pod selector for a Service."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.controller.cache.optin import (
    ENDPOINT_CONTROLLER_NAME_LABEL,
    SelectorSource,
    Status,
    evaluate,
)

ENABLED = "endpointslice-operator.io/enabled"
SELECTOR = "endpointslice-operator.io/selector"
ME = "endpointslice-operator.io"


def service(
    *,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"name": "s", "namespace": "ns", "annotations": annotations, "labels": labels},
        "spec": spec if spec is not None else {"selector": {"app": "web"}},
    }


def decide(svc: dict[str, Any]) -> Any:
    return evaluate(svc, enabled_annotation=ENABLED, selector_annotation=SELECTOR, managed_by=ME)


def test_not_opted_in_without_annotation_or_label() -> None:
    assert decide(service()).status is Status.NOT_OPTED_IN
    assert not decide(service()).opted_in


def test_annotation_must_be_exactly_true() -> None:
    assert decide(service(annotations={ENABLED: "true"})).status is Status.MANAGED
    for value in ("True", "yes", "1", ""):
        assert decide(service(annotations={ENABLED: value})).status is Status.NOT_OPTED_IN


def test_kep_4770_label() -> None:
    mine = decide(service(labels={ENDPOINT_CONTROLLER_NAME_LABEL: ME}))
    assert mine.managed
    assert mine.source is SelectorSource.SPEC
    assert str(mine.selector) == "app=web"
    other = service(labels={ENDPOINT_CONTROLLER_NAME_LABEL: "other"}, annotations={ENABLED: "true"})
    assert decide(other).status is Status.NOT_OPTED_IN


def test_external_name_ignored() -> None:
    svc = service(
        annotations={ENABLED: "true"}, spec={"type": "ExternalName", "selector": {"a": "b"}}
    )
    assert decide(svc).status is Status.EXTERNAL_NAME
    assert decide(svc).opted_in


def test_selectorless_uses_annotation() -> None:
    svc = service(annotations={ENABLED: "true", SELECTOR: "app in (a,b),!old"}, spec={})
    decision = decide(svc)
    assert decision.managed
    assert decision.source is SelectorSource.ANNOTATION
    assert decision.selector is not None
    assert decision.selector.matches({"app": "a"})
    assert not decision.selector.matches({"app": "a", "old": ""})


def test_spec_selector_wins_over_annotation() -> None:
    svc = service(annotations={ENABLED: "true", SELECTOR: "x=y"})
    assert str(decide(svc).selector) == "app=web"


def test_empty_spec_selector_counts_as_none() -> None:
    assert decide(service(annotations={ENABLED: "true"}, spec={"selector": {}})).status is (
        Status.NO_SELECTOR
    )


def test_invalid_selectors() -> None:
    bad = decide(service(annotations={ENABLED: "true", SELECTOR: "app in a"}, spec={}))
    assert bad.status is Status.INVALID_SELECTOR
    assert bad.error is not None and SELECTOR in bad.error
    bad_spec = decide(service(annotations={ENABLED: "true"}, spec={"selector": {"a": "b c"}}))
    assert bad_spec.status is Status.INVALID_SELECTOR
    assert bad_spec.source is SelectorSource.SPEC


def test_malformed_objects_do_not_crash() -> None:
    assert decide({}).status is Status.NOT_OPTED_IN
    assert decide({"metadata": "x", "spec": 3}).status is Status.NOT_OPTED_IN
    weird = {"metadata": {"annotations": {ENABLED: "true"}}, "spec": {"selector": ["a"]}}
    assert decide(weird).status is Status.INVALID_SELECTOR
