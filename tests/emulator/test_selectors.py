"""Label and field selectors, in the parser and on LIST; limit/continue paging."""

from __future__ import annotations

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, run_emulator
from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.selectors import (
    parse_field_selector,
    parse_label_selector,
    selector_from_match_labels,
)
from tests.emulator.conftest import PODS, SLICES, Client, endpoint_slice, pod

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),  # != matches objects without the key
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db, cache)", True),
        ("missing notin (x)", True),
        ("missing in (x)", False),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("app in (web),!missing,tier", True),
        ("version>2", True),
        ("version<3", False),
        ("missing>1", False),
        ("example.com/key=value", False),
    ],
)
def test_label_selector_matching(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


@pytest.mark.parametrize(
    "selector",
    ["app=we b", "-bad=x", "app in ()", "app in (a", "a,,b", "version>x", "app=" + "x" * 64],
)
def test_invalid_label_selectors_are_rejected(selector: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_label_selector(selector)
    assert caught.value.code == 400
    assert caught.value.message.startswith("unable to parse requirement")


def test_match_labels_and_expressions() -> None:
    selector = selector_from_match_labels(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front"]},
                {"key": "gone", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web"})


def test_field_selector_parsing() -> None:
    selector = parse_field_selector(r"metadata.name=a\,b,status.phase!=Running", "pods")
    assert selector.matches({"metadata": {"name": "a,b"}, "status": {"phase": "Pending"}})
    assert not selector.matches({"metadata": {"name": "a,b"}, "status": {"phase": "Running"}})
    with pytest.raises(ApiError) as caught:
        parse_field_selector("spec.nodeName=x", "services")
    assert caught.value.message == "field label not supported: spec.nodeName"


async def test_list_with_label_selectors(emu: Emulator, client: Client) -> None:
    emu.store.create(endpoint_slice("a", metadata={"labels": {"svc": "web", "v": "1"}}))
    emu.store.create(endpoint_slice("b", metadata={"labels": {"svc": "web"}}))
    emu.store.create(endpoint_slice("c", metadata={"labels": {"svc": "db"}}))

    async def names(selector: str) -> list[str]:
        status, body = await client.get(SLICES, labelSelector=selector)
        assert status == 200, body
        return [item["metadata"]["name"] for item in body["items"]]

    assert await names("svc=web") == ["a", "b"]
    assert await names("svc in (web,db),!v") == ["b", "c"]
    assert await names("v") == ["a"]
    status, body = await client.get(SLICES, labelSelector="svc in (")
    assert status == 400 and body["reason"] == "BadRequest"


async def test_list_with_field_selectors(emu: Emulator, client: Client) -> None:
    emu.store.create_namespace("other")
    emu.store.create(pod("a", nodeName="n1") | {"status": {"phase": "Running"}})
    emu.store.create(pod("b", nodeName="n2") | {"status": {"phase": "Pending"}})
    emu.store.create(pod("c", nodeName="n1") | {"status": {"phase": "Pending"}}, namespace="other")

    async def names(path: str, selector: str) -> list[str]:
        status, body = await client.get(path, fieldSelector=selector)
        assert status == 200, body
        return [item["metadata"]["name"] for item in body["items"]]

    assert await names("/api/v1/pods", "spec.nodeName=n1") == [
        "a",
        "c",
    ]  # namespace, then name order
    assert await names("/api/v1/pods", "status.phase=Pending") == ["b", "c"]
    assert await names("/api/v1/pods", "metadata.namespace=other") == ["c"]
    assert await names(PODS, "metadata.name!=a") == ["b"]
    assert await names("/api/v1/pods", "spec.nodeName=n1,status.phase=Running") == ["a"]
    status, body = await client.get(PODS, fieldSelector="spec.bogus=1")
    assert status == 400 and body["message"] == "field label not supported: spec.bogus"


async def test_events_field_selectors(emu: Emulator, client: Client) -> None:
    emu.store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Service", "name": "web", "namespace": "default"},
            "reason": "Synced",
        }
    )
    status, body = await client.get(
        "/api/v1/namespaces/default/events",
        fieldSelector="involvedObject.kind=Service,involvedObject.name=web,reason=Synced",
    )
    assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["e1"]


async def test_limit_and_continue_page_through_a_consistent_version(
    emu: Emulator, client: Client
) -> None:
    for index in range(5):
        emu.store.create(endpoint_slice(f"s{index}"))
    status, page = await client.get(SLICES, limit="2")
    assert status == 200
    assert [i["metadata"]["name"] for i in page["items"]] == ["s0", "s1"]
    assert page["metadata"]["remainingItemCount"] == 3
    list_version = page["metadata"]["resourceVersion"]
    names = ["s0", "s1"]
    while page["metadata"].get("continue"):
        status, page = await client.get(
            SLICES, limit="2", **{"continue": page["metadata"]["continue"]}
        )
        assert status == 200
        assert page["metadata"]["resourceVersion"] == list_version
        names += [i["metadata"]["name"] for i in page["items"]]
    assert names == [f"s{i}" for i in range(5)]
    status, _ = await client.get(SLICES, limit="2", **{"continue": "garbage!"})
    assert status == 400


async def test_remaining_item_count_as_the_real_server_gives_it(
    emu: Emulator, client: Client
) -> None:
    """Counted for unfiltered pages (also across namespaces and after names come and go
    between pages), never for a list filtered by a label or field selector."""
    for index in range(6):
        emu.store.create(endpoint_slice(f"s{index}", metadata={"labels": {"keep": "yes"}}))
    status, page = await client.get(SLICES, limit="2")
    assert status == 200 and page["metadata"]["remainingItemCount"] == 4
    emu.store.delete("endpointslices", "default", "s1")
    emu.store.create(endpoint_slice("s9"))
    status, page = await client.get(SLICES, limit="2")
    assert [i["metadata"]["name"] for i in page["items"]] == ["s0", "s2"]
    assert page["metadata"]["remainingItemCount"] == 4  # s3, s4, s5, s9
    status, page = await client.get(SLICES, limit="2", **{"continue": page["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in page["items"]] == ["s3", "s4"]
    assert page["metadata"]["remainingItemCount"] == 2
    status, page = await client.get("/apis/discovery.k8s.io/v1/endpointslices", limit="5")
    assert page["metadata"]["remainingItemCount"] == 1
    for selector in ({"labelSelector": "keep=yes"}, {"fieldSelector": "metadata.name!=s0"}):
        status, page = await client.get(SLICES, limit="2", **selector)
        assert status == 200 and page["metadata"]["continue"]
        assert "remainingItemCount" not in page["metadata"]


async def test_continued_pages_show_the_first_page_version(emu: Emulator, client: Client) -> None:
    for index in range(4):
        emu.store.create(endpoint_slice(f"s{index}", metadata={"labels": {"keep": "yes"}}))
    status, page = await client.get(SLICES, limit="2", labelSelector="keep=yes")
    assert [i["metadata"]["name"] for i in page["items"]] == ["s0", "s1"]
    before = emu.store.get("endpointslices", "default", "s2")
    emu.store.patch("endpointslices", "default", "s2", {"metadata": {"labels": {"keep": "no"}}})
    emu.store.delete("endpointslices", "default", "s3")
    emu.store.create(endpoint_slice("s4", metadata={"labels": {"keep": "yes"}}))
    status, rest = await client.get(
        SLICES, limit="10", labelSelector="keep=yes", **{"continue": page["metadata"]["continue"]}
    )
    assert status == 200
    assert [i["metadata"]["name"] for i in rest["items"]] == ["s2", "s3"]
    assert rest["items"][0] == before
    assert "continue" not in rest["metadata"]


async def test_continue_after_the_history_is_gone_is_expired(client: Client) -> None:
    async with run_emulator(history_size=2) as emu:
        async with aiohttp.ClientSession() as session:
            other = Client(session, emu.url)
            for index in range(3):
                emu.store.create(endpoint_slice(f"s{index}"))
            _, page = await other.get(SLICES, limit="1")
            for index in range(3):
                emu.store.patch(
                    "endpointslices", "default", f"s{index}", {"metadata": {"labels": {"x": "1"}}}
                )
            status, body = await other.get(
                SLICES, limit="1", **{"continue": page["metadata"]["continue"]}
            )
    assert status == 410
    assert body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")


async def test_list_at_an_exact_version(emu: Emulator, client: Client) -> None:
    emu.store.create(endpoint_slice("a"))
    version = str(emu.store.resource_version)
    emu.store.create(endpoint_slice("b"))
    emu.store.patch("endpointslices", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    status, body = await client.get(SLICES, resourceVersion=version, resourceVersionMatch="Exact")
    assert status == 200
    assert body["metadata"]["resourceVersion"] == version
    assert [(i["metadata"]["name"], i["metadata"].get("labels")) for i in body["items"]] == [
        ("a", None)
    ]
    status, body = await client.get(SLICES, resourceVersion="999999", resourceVersionMatch="Exact")
    assert status == 504 and body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


async def test_list_at_an_exact_version_with_a_label_selector(
    emu: Emulator, client: Client
) -> None:
    # The history keeps past states encoded: a selector is matched against the state at the
    # version asked for, not the current one.
    emu.store.create(endpoint_slice("a", metadata={"labels": {"team": "x"}}))
    emu.store.create(endpoint_slice("b", metadata={"labels": {"team": "y"}}))
    version = str(emu.store.resource_version)
    emu.store.patch("endpointslices", "default", "a", {"metadata": {"labels": {"team": "y"}}})
    emu.store.patch("endpointslices", "default", "b", {"metadata": {"labels": {"team": "x"}}})
    emu.store.delete("endpointslices", "default", "b")
    for selector, expected in (("team=x", ["a"]), ("team=y", ["b"])):
        status, body = await client.get(
            SLICES, resourceVersion=version, resourceVersionMatch="Exact", labelSelector=selector
        )
        assert status == 200
        assert [i["metadata"]["name"] for i in body["items"]] == expected
        assert all(i["metadata"]["resourceVersion"] <= version for i in body["items"])


def test_field_values_of_every_json_type() -> None:
    """Field values as the server spells them: booleans as true/false, numbers as text, and
    a missing field, a null, or a parent that is not an object as the empty string."""
    host = parse_field_selector("spec.hostNetwork=true", "pods")
    assert host.matches({"spec": {"hostNetwork": True}})
    assert not host.matches({"spec": {"hostNetwork": False}})
    assert parse_field_selector("spec.hostNetwork=false", "pods").matches(
        {"spec": {"hostNetwork": False}}
    )
    empty = parse_field_selector("spec.nodeName=", "pods")
    for obj in ({}, {"spec": None}, {"spec": "text"}, {"spec": {"nodeName": None}}):
        assert empty.matches(obj), obj
    assert parse_field_selector("spec.nodeName=7", "pods").matches({"spec": {"nodeName": 7}})
    assert parse_field_selector("source=kubelet", "events").matches(
        {"source": {"component": "kubelet"}}
    )
