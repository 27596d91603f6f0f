"""Validation as kube-apiserver does it, with EndpointSlices in detail."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest

from endpointslice_operator.testing import Emulator
from endpointslice_operator.testing.defaults import ip_family
from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.names import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from endpointslice_operator.testing.validation import ip_address_error
from endpointslice_operator.testing.watch import decode
from tests.emulator.conftest import SLICES, Client, endpoint_slice, pod


def test_name_rules() -> None:
    assert dns1123_label_errors("web-1") == []
    assert dns1123_label_errors("Web") != []
    assert dns1123_label_errors("a" * 64) != []
    assert dns1123_subdomain_errors("a.b-c.d") == []
    assert dns1123_subdomain_errors("a..b") != []
    assert dns1035_label_errors("1abc") != []
    assert qualified_name_errors("example.com/My_Name.1") == []
    assert qualified_name_errors("a/b/c") != []
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert label_value_errors("") == []
    assert label_value_errors("-x") != []


async def post_invalid(client: Client, body: dict[str, Any]) -> list[tuple[str, str]]:
    status, answer = await client.post(SLICES, body)
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    assert answer["message"].startswith('EndpointSlice.discovery.k8s.io "')
    return [(c["field"], c["reason"]) for c in answer["details"]["causes"]]


def endpoints(*addresses: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"addresses": list(addresses), **extra}]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"addressType": None}, [("addressType", "FieldValueRequired")]),
        ({"addressType": "IP"}, [("addressType", "FieldValueNotSupported")]),
        ({"endpoints": endpoints()}, [("endpoints[0].addresses", "FieldValueRequired")]),
        (
            # v1.36 reports the address-type check only (v1.24 added "must be a valid IP
            # address": two causes; the conformance table names the difference).
            {"endpoints": endpoints("10.0.0.256")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        (
            {"endpoints": endpoints("10.0.0")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        # v1.36 parses strictly and wants the canonical form (v1.24 accepted all three)
        (
            {"endpoints": endpoints("010.0.0.1")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        (
            {"endpoints": endpoints("::ffff:10.0.0.1")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        (
            {"addressType": "IPv6", "endpoints": endpoints("fd00:0::0001")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        (
            {"endpoints": endpoints("127.0.0.1")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        (
            {"endpoints": endpoints("169.254.1.1")},
            [("endpoints[0].addresses[0]", "FieldValueInvalid")],
        ),
        ({"endpoints": endpoints("0.0.0.0")}, [("endpoints[0].addresses[0]", "FieldValueInvalid")]),
        ({"endpoints": endpoints("fd00::1")}, [("endpoints[0].addresses[0]", "FieldValueInvalid")]),
        (
            {"endpoints": endpoints(*[f"10.0.0.{i}" for i in range(1, 102)])},
            [("endpoints[0].addresses", "FieldValueTooMany")],
        ),
        (
            {"endpoints": endpoints("10.0.0.1", hostname="Not_A_Label")},
            [("endpoints[0].hostname", "FieldValueInvalid")],
        ),
        (
            {"endpoints": endpoints("10.0.0.1", nodeName="bad..node")},
            [("endpoints[0].nodeName", "FieldValueInvalid")],
        ),
        (
            {
                "endpoints": endpoints(
                    "10.0.0.1", hints={"forZones": [{"name": f"z{i}"} for i in range(9)]}
                )
            },
            [("endpoints[0].hints.forZones", "FieldValueTooMany")],
        ),
        (
            {
                "endpoints": endpoints(
                    "10.0.0.1", hints={"forZones": [{"name": "a"}, {"name": "a"}]}
                )
            },
            [("endpoints[0].hints.forZones[1].name", "FieldValueDuplicate")],
        ),
        ({"ports": [{"name": "HTTP", "port": 80}]}, [("ports[0].name", "FieldValueInvalid")]),
        (
            {"ports": [{"name": "a", "port": 80}, {"name": "a", "port": 81}]},
            [("ports[1].name", "FieldValueDuplicate")],
        ),
        (
            {"ports": [{"port": 80}, {"port": 81}]},
            [("ports[1].name", "FieldValueDuplicate")],  # two unnamed ports share the name ""
        ),
        (
            {"ports": [{"port": 80, "protocol": "ICMP"}]},
            [("ports[0].protocol", "FieldValueNotSupported")],
        ),
        (
            {"ports": [{"port": 80, "appProtocol": "not valid!"}]},
            [("ports[0].appProtocol", "FieldValueInvalid")],
        ),
        (
            {"metadata": {"name": "web", "labels": {"bad key!": "v"}}},
            [("metadata.labels", "FieldValueInvalid")],
        ),
        (
            {"metadata": {"name": "web", "annotations": {"big": "x" * (256 * 1024)}}},
            [("metadata.annotations", "FieldValueTooLong")],
        ),
    ],
)
async def test_invalid_endpoint_slices(
    client: Client, changes: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    body = endpoint_slice("web")
    for key, value in changes.items():
        if value is None:
            body.pop(key)
        else:
            body[key] = value
    assert await post_invalid(client, body) == expected


async def test_valid_endpoint_slices(client: Client) -> None:
    valid = [
        endpoint_slice(
            "v4",
            endpoints=endpoints(
                "10.0.0.1", "10.0.0.2", hostname="pod-1", nodeName="node.a", zone="z"
            ),
        ),
        endpoint_slice("v6", addressType="IPv6", endpoints=endpoints("fd00::1", "2001:db8::1")),
        endpoint_slice("fqdn", addressType="FQDN", endpoints=endpoints("db.example.com")),
        endpoint_slice("empty", endpoints=[], ports=[]),
        endpoint_slice(
            "many",
            endpoints=[{"addresses": [f"10.1.{i // 250}.{i % 250 + 1}"]} for i in range(1000)],
        ),
    ]
    for body in valid:
        status, answer = await client.post(SLICES, body)
        assert status == 201, answer
    status, answer = await client.post(
        SLICES, endpoint_slice("too-many", endpoints=endpoints("10.0.0.1") * 1001)
    )
    assert status == 422
    assert (
        answer["details"]["causes"][0]["message"] == "Too many: 1001: must have at most 1000 items"
    )


@pytest.mark.parametrize(
    ("address", "version", "refused"),
    [
        ("224.0.0.5", 4, True),
        ("224.0.1.5", 4, False),
        ("ff02::1", 6, True),
        ("ff12::1", 6, True),  # Go's IsLinkLocalMulticast ignores the flags nibble
        ("ff32::1:2", 6, True),
        ("ff05::1", 6, False),
        ("fe80::1", 6, True),
        ("fec0::1", 6, False),
        ("169.254.0.1", 4, True),
        ("127.255.0.1", 4, True),
        ("::1", 6, True),
        ("::", 6, True),
    ],
)
def test_special_endpoint_addresses(address: str, version: int, refused: bool) -> None:
    assert (ip_address_error(address, version) is not None) is refused


async def test_ipv6_rejects_ipv4(client: Client) -> None:
    body = endpoint_slice("web", addressType="IPv6", endpoints=endpoints("10.0.0.1"))
    assert await post_invalid(client, body) == [("endpoints[0].addresses[0]", "FieldValueInvalid")]


async def test_address_type_is_immutable(emu: Emulator, client: Client) -> None:
    _, created = await client.post(SLICES, endpoint_slice("web", endpoints=[]))
    status, body = await client.put(f"{SLICES}/web", dict(created, addressType="IPv6"))
    assert status == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "IPv6": field is immutable',
            "field": "addressType",
        }
    ]


async def test_defaults_for_ports_and_conditions(client: Client) -> None:
    status, body = await client.post(SLICES, endpoint_slice("web", ports=[{"port": 80}]))
    assert status == 201
    assert body["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]
    assert body["endpoints"][0]["conditions"] == {"ready": True}


async def test_service_validation_and_defaults(client: Client) -> None:
    path = "/api/v1/namespaces/default/services"
    status, body = await client.post(
        path,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "bad.name"},  # v1.36: an RFC 1123 label
            "spec": {"ports": [{"port": 80}]},
        },
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"
    status, body = await client.post(
        path, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"}, "spec": {}}
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.ports"
    status, body = await client.post(
        path,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "ok"},
            "spec": {"ports": [{"port": 80}]},
        },
    )
    assert status == 201
    spec = body["spec"]
    assert spec["clusterIP"] == spec["clusterIPs"][0]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    status, body = await client.post(
        path,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "headless"},
            "spec": {"clusterIP": "None"},
        },
    )
    assert status == 201 and body["spec"]["clusterIP"] == "None"


async def test_cluster_scoped_objects_lose_a_given_namespace(client: Client) -> None:
    # BeforeCreate clears the namespace of cluster-scoped objects rather than rejecting it.
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "namespace": "default"}}
    status, body = await client.post("/api/v1/nodes", node)
    assert status == 201
    assert "namespace" not in body["metadata"]


def _service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec},
    }


async def test_dual_stack_services(client: Client) -> None:
    path = "/api/v1/namespaces/default/services"
    _, single = await client.post(path, _service("single"))
    assert single["spec"]["ipFamilyPolicy"] == "SingleStack"
    assert single["spec"]["ipFamilies"] == ["IPv4"]
    _, dual = await client.post(path, _service("dual", ipFamilyPolicy="PreferDualStack"))
    spec = dual["spec"]
    assert spec["ipFamilies"] == ["IPv4", "IPv6"]
    assert [ip_family(ip) for ip in spec["clusterIPs"]] == ["IPv4", "IPv6"]
    assert spec["clusterIP"] == spec["clusterIPs"][0]
    _, v6 = await client.post(path, _service("v6", ipFamilies=["IPv6"]))
    assert v6["spec"]["ipFamilies"] == ["IPv6"] and ":" in v6["spec"]["clusterIP"]
    _, v6first = await client.post(
        path, _service("v6first", ipFamilies=["IPv6"], ipFamilyPolicy="RequireDualStack")
    )
    assert v6first["spec"]["ipFamilies"] == ["IPv6", "IPv4"]
    _, headless = await client.post(path, _service("hl", clusterIP="None"))
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "SingleStack"
    status, body = await client.post(path, _service("bad", ipFamilies=["IPv4", "IPv6"]))
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.ipFamilyPolicy"


async def test_selectorless_headless_services_default_to_dual_stack(client: Client) -> None:
    body = _service("hl", clusterIP="None")
    del body["spec"]["selector"]
    _, created = await client.post("/api/v1/namespaces/default/services", body)
    assert created["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    assert created["spec"]["ipFamilies"] == ["IPv4", "IPv6"]


async def test_cluster_ips_are_unique_and_released(emu: Emulator) -> None:
    first = emu.store.create(_service("a"))["spec"]["clusterIP"]
    second = emu.store.create(_service("b"))["spec"]["clusterIP"]
    assert first != second
    with pytest.raises(ApiError) as caught:
        emu.store.create(_service("taken", clusterIP=second))
    assert caught.value.code == 422
    assert "provided IP is already allocated" in caught.value.message
    # A failed create gives back the IP it took (IPs are handed out in order).
    taken_by_failure = str(ipaddress.ip_address(second) + 1)
    with pytest.raises(ApiError):
        emu.store.create(_service("Invalid_Name"))
    assert not emu.store.cluster_ips.in_use(taken_by_failure)
    assert emu.store.cluster_ips.in_use(second)
    emu.store.delete("services", "default", "a")
    assert emu.store.create(_service("c", clusterIP=first))["spec"]["clusterIP"] == first
    # A dry run shows an IP and gives it back.
    services = emu.store.resolve("services")
    body = _service("dry")
    body["metadata"]["namespace"] = "default"
    shown = emu.store.api_create(services, body, dry_run=True)
    shown_ip = decode(shown.raw)["spec"]["clusterIP"]
    assert shown_ip and not emu.store.cluster_ips.in_use(shown_ip)


def test_the_codec_keeps_integers_beyond_64_bits() -> None:
    from endpointslice_operator.testing.watch import decode, encode

    big = {"n": 2**70, "uid": "12345678901234567890123"}
    assert decode(encode(big)) == big and type(decode(encode(big))["n"]) is int
    assert decode(b'{"a":1}') == {"a": 1}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b'{"n":123456789012345678}',  # eighteen digits
        b'{"n":1234567890123456789}',  # nineteen
        b'{"n":-99999999999999999999999}',
        b'{"a":"12345678901234567890","b":1}',  # in a string: found too (then decoded slowly)
        b'{"a":"1234567890 123456789012"}',
        '{"a":"\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660'
        '\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660"}'.encode(),
        b"1234567890123456789",
        bytes(range(256)) * 2,
    ],
)
def test_the_long_number_check_finds_what_the_regular_expression_finds(raw: bytes) -> None:
    from endpointslice_operator.testing.watch import has_long_number

    assert has_long_number(raw) == (re.search(rb"\d{19}", raw) is not None)


async def test_an_integer_beyond_64_bits_is_not_rounded(client: Client) -> None:
    """orjson would decode it as a float; the emulator must see the integer the client sent.
    (kube-apiserver refuses this one with 400, "cannot unmarshal number ... of type int32": the
    emulator does not check integer ranges while decoding and stores it.)"""
    body = endpoint_slice("huge-port")
    body["ports"] = [{"name": "http", "port": 2**70, "protocol": "TCP"}]
    status, answer = await client.post(SLICES, body)
    assert status == 201, answer
    assert answer["ports"][0]["port"] == 2**70 and type(answer["ports"][0]["port"]) is int


async def test_updates_check_the_parts_they_change(client: Client) -> None:
    """Parts equal to the stored object's are not checked again on an update (a shortcut);
    a changed part still is, with the same causes as on a create."""
    pods = "/api/v1/namespaces/default/pods"
    status, created = await client.post(pods, pod("web", labels={"app": "web"}))
    assert status == 201
    status, updated = await client.put(f"{pods}/web", dict(created, status={"phase": "Running"}))
    assert status == 200 and updated["metadata"]["labels"] == {"app": "web"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"labels": {"app": "-bad-"}}, "metadata.labels"),
        ({"annotations": {"bad key": "x"}}, "metadata.annotations"),
        ({"finalizers": ["a/b/c"]}, "metadata.finalizers"),
        ({"ownerReferences": [{"apiVersion": "v1"}]}, "metadata.ownerReferences"),
    ]
    for change, field in cases:
        meta = dict(updated["metadata"], **change)
        status, answer = await client.put(f"{pods}/web", dict(updated, metadata=meta))
        assert status == 422, answer
        fields = {cause["field"].split("[")[0] for cause in answer["details"]["causes"]}
        assert field in fields or any(f.startswith(field) for f in fields), answer
    containers = [dict(updated["spec"]["containers"][0], name="Bad_Name")]
    status, answer = await client.put(
        f"{pods}/web", dict(updated, spec=dict(updated["spec"], containers=containers))
    )
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "spec.containers[0].name"


async def test_slice_updates_check_changed_endpoints_and_ports(client: Client) -> None:
    """Endpoints equal to the stored ones at their index, and equal ports, are not checked
    again; a changed endpoint, new ports or another addressType are, with their own paths."""
    body = endpoint_slice("web", endpoints=endpoints("10.0.0.1") + endpoints("10.0.0.2"))
    status, created = await client.post(SLICES, body)
    assert status == 201, created
    bad_second = [created["endpoints"][0], dict(created["endpoints"][1], addresses=["x"])]
    status, answer = await client.put(f"{SLICES}/web", dict(created, endpoints=bad_second))
    assert status == 422
    assert [c["field"] for c in answer["details"]["causes"]] == ["endpoints[1].addresses[0]"]
    status, answer = await client.put(
        f"{SLICES}/web", dict(created, ports=[{"port": 80, "protocol": "SCTP2"}])
    )
    assert status == 422
    assert [c["field"] for c in answer["details"]["causes"]] == ["ports[0].protocol"]
    status, answer = await client.put(f"{SLICES}/web", dict(created, addressType="IPv6"))
    assert status == 422
    fields = [c["field"] for c in answer["details"]["causes"]]
    assert fields.count("endpoints[0].addresses[0]") == 1 and "addressType" in fields
    flipped = [dict(created["endpoints"][0], conditions={"ready": False})]
    status, answer = await client.put(f"{SLICES}/web", dict(created, endpoints=flipped))
    assert status == 200, answer


@pytest.mark.parametrize("ip", ["10.052.0.3", "::ffff:10.52.0.4", "nope"])
async def test_pod_ips_must_parse_strictly(client: Client, ip: str) -> None:
    """v1.36 refuses a pod IP with leading zeros or IPv4-mapped (v1.24 accepted them); an
    IPv6 text in another form than the canonical one is kept with a warning
    (test_ip_shapes.py); an unchanged one is not checked again (a pod written before keeps
    its IPs)."""
    pods = "/api/v1/namespaces/default/pods"
    status, created = await client.post(pods, pod("p", labels={"app": "web"}))
    assert status == 201, created
    status, answer = await client.patch(
        f"{pods}/p/status", {"status": {"podIP": ip, "podIPs": [{"ip": ip}]}}
    )
    assert status == 422, answer
    assert [c["field"] for c in answer["details"]["causes"]] == ["status.podIPs[0].ip"]
    status, answer = await client.patch(
        f"{pods}/p/status", {"status": {"podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}]}}
    )
    assert status == 200, answer
