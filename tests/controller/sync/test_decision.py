"""The one opt-in ladder (sync/decision.py): its order, as the operator and ``plan`` use it."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.controller.cache.optin import evaluate
from endpointslice_operator.controller.sync.decision import Route, decide
from endpointslice_operator.controller.sync.networks import NetworkAnnotations

P = "example.io"
NETWORKS = NetworkAnnotations(f"{P}/network", f"{P}/device-network")


def service(annotations: dict[str, str], spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "web", "annotations": annotations},
        "spec": {"selector": {"app": "web"}} if spec is None else spec,
    }


def route(svc: dict[str, Any], *, mirroring: bool = True) -> Route:
    decision = evaluate(
        svc,
        enabled_annotation=f"{P}/enabled",
        selector_annotation=f"{P}/selector",
        managed_by=P,
    )
    source = f"{P}/source" if mirroring else None
    return decide(svc, decision, source_annotation=source, networks=NETWORKS).route


ON = {f"{P}/enabled": "true"}
BAD_NETWORK = {f"{P}/network": "a/b/c"}


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        (service(ON), Route.PODS),
        (service({**ON, f"{P}/network": "ns/net"}), Route.PODS),
        # The source comes first: mirroring judges the rest itself (ConflictingSource).
        (service({**ON, f"{P}/source": "endpoints", **BAD_NETWORK}), Route.MIRROR),
        (service({**ON, f"{P}/source": "other"}, {}), Route.MIRROR),
        (service({**ON, f"{P}/selector": "a in ("}, {}), Route.INVALID_SELECTOR),
        (service({**ON, f"{P}/selector": "a in (", **BAD_NETWORK}, {}), Route.INVALID_SELECTOR),
        (service({**ON, **BAD_NETWORK}, {"type": "ExternalName"}), Route.UNMANAGED),
        (service({f"{P}/source": "endpoints"}), Route.UNMANAGED),
        (service(BAD_NETWORK), Route.UNMANAGED),
        (service({**ON, **BAD_NETWORK}), Route.INVALID_NETWORK),
    ],
)
def test_the_ladder_in_order(svc: dict[str, Any], expected: Route) -> None:
    assert route(svc) is expected


def test_without_mirroring_the_source_annotation_is_not_read() -> None:
    assert route(service({**ON, f"{P}/source": "endpoints"}), mirroring=False) is Route.PODS
