"""PATCH: JSON merge patch, JSON patch and strategic merge patch, as functions and over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.patch import json_patch, merge_patch, strategic_merge_patch
from tests.emulator.conftest import PODS, SLICES, Client, endpoint_slice, pod


def test_merge_patch_rfc7386() -> None:
    original = {"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]}
    patched = merge_patch(original, {"a": "z", "c": {"f": None}, "list": [3]})
    assert patched == {"a": "z", "c": {"d": "e"}, "list": [3]}
    assert original == {"a": "b", "c": {"d": "e", "f": "g"}, "list": [1, 2]}


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2, 3]}, "c": "x"}
    ops: list[dict[str, Any]] = [
        {"op": "add", "path": "/a/b/-", "value": 4},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "replace", "path": "/c", "value": "y"},
        {"op": "copy", "from": "/c", "path": "/d"},
        {"op": "move", "from": "/d", "path": "/e~1f"},
        {"op": "test", "path": "/a/b", "value": [2, 3, 4]},
    ]
    assert json_patch(doc, ops) == {"a": {"b": [2, 3, 4]}, "c": "y", "e/f": "y"}
    with pytest.raises(ApiError) as caught:
        json_patch(doc, [{"op": "test", "path": "/c", "value": "nope"}])
    assert caught.value.code == 422
    with pytest.raises(ApiError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_strategic_merge_by_keys() -> None:
    original = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"},
            ]
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "v1", "ports": [{"containerPort": 80, "name": "http"}]},
                {"name": "sidecar", "image": "s1"},
            ]
        },
        "metadata": {"finalizers": ["a"]},
    }
    patch = {
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        "spec": {
            "containers": [
                {"name": "app", "ports": [{"containerPort": 443, "name": "https"}]},
                {"name": "sidecar", "$patch": "delete"},
            ]
        },
        "metadata": {"finalizers": ["b", "a"]},
    }
    result = strategic_merge_patch(original, patch)
    assert result["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]
    assert result["spec"]["containers"] == [
        {
            "name": "app",
            "image": "v1",
            "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 443, "name": "https"},
            ],
        }
    ]
    assert result["metadata"]["finalizers"] == ["a", "b"]


def test_strategic_directives() -> None:
    original = {"spec": {"ports": [{"port": 80}, {"port": 81}], "selector": {"a": "1", "b": "2"}}}
    replaced = strategic_merge_patch(
        original, {"spec": {"selector": {"$patch": "replace", "c": "3"}}}
    )
    assert replaced["spec"]["selector"] == {"c": "3"}
    whole_list = strategic_merge_patch(
        original, {"spec": {"ports": [{"$patch": "replace"}, {"port": 90}]}}
    )
    assert whole_list["spec"]["ports"] == [{"port": 90}]
    ordered = strategic_merge_patch(
        original,
        {
            "spec": {
                "$setElementOrder/ports": [{"port": 81}, {"port": 80}],
                "ports": [{"port": 80, "name": "x"}],
            }
        },
    )
    assert ordered["spec"]["ports"] == [{"port": 81}, {"port": 80, "name": "x"}]
    primitive = strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
    )
    assert primitive["metadata"]["finalizers"] == ["b"]
    removed = strategic_merge_patch(original, {"spec": {"selector": None}})
    assert "selector" not in removed["spec"]


def test_atomic_lists_are_replaced() -> None:
    original = {"endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]}
    result = strategic_merge_patch(original, {"endpoints": [{"addresses": ["10.0.0.3"]}]})
    assert result == {"endpoints": [{"addresses": ["10.0.0.3"]}]}


async def test_patch_types_over_http(emu: Emulator, client: Client) -> None:
    await client.post(SLICES, endpoint_slice("web"))
    status, body = await client.patch(f"{SLICES}/web", {"metadata": {"labels": {"m": "1"}}})
    assert status == 200 and body["metadata"]["labels"] == {"m": "1"}
    status, body = await client.patch(
        f"{SLICES}/web", [{"op": "add", "path": "/metadata/labels/j", "value": "2"}], kind="json"
    )
    assert status == 200 and body["metadata"]["labels"] == {"m": "1", "j": "2"}
    status, body = await client.patch(
        f"{SLICES}/web", {"metadata": {"labels": {"m": None}}}, kind="strategic"
    )
    assert status == 200 and body["metadata"]["labels"] == {"j": "2"}
    status, body = await client.request(
        "PATCH", f"{SLICES}/web", {"a": 1}, content_type="application/apply-patch+yaml"
    )
    assert status == 415
    status, body = await client.patch(f"{SLICES}/ghost", {"metadata": {}})
    assert status == 404


async def test_patch_with_a_stale_resource_version_conflicts(client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web"))
    await client.patch(f"{SLICES}/web", {"metadata": {"labels": {"a": "1"}}})
    stale = {
        "metadata": {
            "resourceVersion": created["metadata"]["resourceVersion"],
            "labels": {"b": "2"},
        }
    }
    status, body = await client.patch(f"{SLICES}/web", stale)
    assert status == 409 and body["reason"] == "Conflict"


async def test_failed_json_patch_test_is_unprocessable(client: Client) -> None:
    await client.post(SLICES, endpoint_slice("web"))
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "0"}]
    status, body = await client.patch(f"{SLICES}/web", ops, kind="json")
    assert status == 422 and body["kind"] == "Status"


async def test_strategic_patch_of_pod_conditions(emu: Emulator, client: Client) -> None:
    emu.store.create(
        pod("p")
        | {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "Initialized", "status": "True"},
                ]
            }
        }
    )
    status, body = await client.patch(
        f"{PODS}/p/status",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        kind="strategic",
    )
    assert status == 200
    assert body["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ]
