"""List and watch parameters that only make sense together (ValidateListOptions, as v1.36),
and ``generateName`` checked per kind with apimachinery's trailing-dash masking."""

from __future__ import annotations

from typing import Any

import pytest

from tests.emulator.conftest import PODS, SERVICES, SLICES, Client


def causes(answer: Any) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in answer["details"]["causes"]]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"resourceVersionMatch": "NotOlderThan"},
         [("resourceVersionMatch", "FieldValueForbidden")]),
        ({"resourceVersionMatch": "Exact", "resourceVersion": "0"},
         [("resourceVersionMatch", "FieldValueForbidden")]),
        ({"resourceVersionMatch": "Sometimes", "resourceVersion": "1"},
         [("resourceVersionMatch", "FieldValueNotSupported")]),
        ({"sendInitialEvents": "true"}, [("sendInitialEvents", "FieldValueForbidden")]),
        ({"watch": "true", "resourceVersionMatch": "NotOlderThan", "resourceVersion": "0"},
         [("resourceVersionMatch", "FieldValueForbidden")]),
        ({"watch": "true", "continue": "abc"}, [("continue", "FieldValueForbidden")]),
        ({"watch": "true", "sendInitialEvents": "true"},
         [("resourceVersionMatch", "FieldValueForbidden")]),
    ],
)  # fmt: skip
async def test_parameters_that_do_not_go_together(
    client: Client, params: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    status, answer = await client.get(SLICES, **params)
    assert status == 422, answer
    assert answer["details"]["kind"] == "ListOptions"
    assert answer["details"]["group"] == "meta.k8s.io"
    assert causes(answer) == expected


async def test_parameters_that_do_go_together(client: Client) -> None:
    status, answer = await client.get(
        SLICES, resourceVersionMatch="NotOlderThan", resourceVersion="0"
    )
    assert status == 200, answer
    status, answer = await client.get(SLICES, resourceVersionMatch="Exact", resourceVersion="1")
    assert status == 200, answer


@pytest.mark.parametrize(
    ("path", "body", "prefix", "fields"),
    [
        (PODS, {"spec": {"containers": [{"name": "c", "image": "x"}]}}, "P-",
         ["metadata.name"]),  # "P-" masks to "a": only the generated name fails
        (PODS, {"spec": {"containers": [{"name": "c", "image": "x"}]}}, "p.",
         ["metadata.generateName"]),
        (PODS, {"spec": {"containers": [{"name": "c", "image": "x"}]}}, "-p",
         ["metadata.generateName", "metadata.name"]),
        (SERVICES, {"spec": {"ports": [{"port": 80}]}}, "Web-",
         ["metadata.generateName", "metadata.name"]),
        (SERVICES, {"spec": {"ports": [{"port": 80}]}}, "web.", ["metadata.generateName",
                                                                 "metadata.name"]),
    ],
)  # fmt: skip
async def test_generate_name_per_kind(
    client: Client, path: str, body: dict[str, Any], prefix: str, fields: list[str]
) -> None:
    kind = "Pod" if path == PODS else "Service"
    request = {"apiVersion": "v1", "kind": kind, "metadata": {"generateName": prefix}, **body}
    status, answer = await client.request("POST", path, request, params={"dryRun": "All"})
    assert status == 422, answer
    assert sorted(f for f, _ in causes(answer)) == fields


async def test_service_names_are_rfc_1123_labels(client: Client) -> None:
    """v1.36 takes a digit first (v1.24 wanted DNS-1035 labels); dots are still refused."""
    service = {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}}
    status, answer = await client.post(SERVICES, {**service, "metadata": {"name": "1web"}})
    assert status == 201, answer
    status, answer = await client.post(SERVICES, {**service, "metadata": {"name": "web.a"}})
    assert status == 422, answer
