"""Mirroring: what it takes from an Endpoints object as the API gives it (a list item without
apiVersion and kind, an object without subsets, a targetRef with a fieldPath)."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler import (
    MIRRORING_CONTROLLER_NAME,
    ReconcilerConfig,
    desired_from_endpoints,
    plan_mirroring,
)
from endpointslice_operator.reconciler.mirroring import mirroring_owner

CONFIG = ReconcilerConfig(controller_name=MIRRORING_CONTROLLER_NAME)
METADATA = {"name": "web", "namespace": "default", "uid": "ep-uid"}


def test_the_owner_is_a_v1_endpoints_object() -> None:
    item: dict[str, Any] = {"metadata": METADATA, "subsets": []}
    assert mirroring_owner(item) == {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": METADATA,
        "subsets": [],
    }
    assert item == {"metadata": METADATA, "subsets": []}  # a copy: the item is left as it was


def test_an_endpoints_object_without_subsets_mirrors_nothing() -> None:
    """The API leaves ``subsets`` out of an Endpoints object without addresses."""
    for endpoints in ({"metadata": METADATA}, {"metadata": METADATA, "subsets": "junk"}):
        plan, mirrored = plan_mirroring(endpoints, [], CONFIG)
        assert (plan.creates, plan.updates, plan.deletes, plan.events) == ([], [], [], [])
        assert mirrored.desired.endpoint_count("IPv4") == 0


def test_the_target_ref_is_copied_with_its_field_path() -> None:
    ref = {
        "kind": "Pod",
        "namespace": "default",
        "name": "web-0",
        "uid": "pod-uid",
        "apiVersion": "v1",
        "fieldPath": "spec.containers{web}",
    }
    ports = [{"name": "http", "port": 80, "protocol": "TCP"}]
    mirrored = desired_from_endpoints(
        {
            "metadata": METADATA,
            "subsets": [{"ports": ports, "addresses": [{"ip": "10.0.0.1", "targetRef": ref}]}],
        }
    )
    [endpoint] = [e for g in mirrored.desired.groups["IPv4"].values() for e in g.endpoints.values()]
    assert endpoint.to_dict()["targetRef"] == ref
