"""PodRecord, IP canonicalisation, configuration and small helpers."""

from __future__ import annotations

import gc
import ipaddress
import json
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from endpointslice_operator.reconciler import (
    DesiredEndpoints,
    EndpointGroup,
    PodRecord,
    ReconcilerConfig,
    desired_from_service_pods,
    format_trigger_time,
    pod_record,
)
from endpointslice_operator.reconciler import records as records_module
from endpointslice_operator.reconciler.desired import address_types_for_service, node_zones
from endpointslice_operator.reconciler.ipaddr import (
    NOT_AN_IP,
    canonical_ip,
    endpoint_ip,
    pod_endpoint_ip,
)
from endpointslice_operator.reconciler.records import (
    SHARED_RECORD_CACHE,
    PodRecordCache,
    as_pod_record,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2.3.4", ("1.2.3.4", False)),
        ("010.001.002.003", ("10.1.2.3", False)),  # Go's ParseIPSloppy reads leading zeros
        ("1234::5678:0000:0000:9abc:def0", ("1234::5678:0:0:9abc:def0", True)),
        ("2001:DB8:0:0:1:0:0:1", ("2001:db8::1:0:0:1", True)),  # first longest zero run
        ("::ffff:1.2.3.4", ("1.2.3.4", False)),  # IPv4-mapped IPv6 is IPv4
        ("::ffff:010.1.1.1", ("10.1.1.1", False)),
        ("::1.2.3.4", ("::102:304", True)),
        ("fe80::1%eth0", None),
        ("1.2.3.256", None),
        ("1.2.3", None),
        ("1..2.3", None),
        ("1.2.3.x", None),
        ("1.2.3.\u0664", None),  # a digit, but not an ASCII one (Arabic-Indic four)
        ("1.2.3.+4", None),
        ("not-an-ip", None),
        ("", None),
    ],
)
def test_canonical_ip(text: str, expected: tuple[str, bool] | None) -> None:
    assert canonical_ip(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0", "unspecified address"),
        ("000.0.0.0", "unspecified address"),
        ("::", "unspecified address"),
        ("::ffff:0.0.0.0", "unspecified address"),  # IPv4-mapped: read as IPv4
        ("127.0.0.1", "loopback address"),
        ("127.255.3.4", "loopback address"),
        ("::1", "loopback address"),
        ("::ffff:127.0.0.1", "loopback address"),
        ("169.254.1.1", "link-local address"),
        ("169.254.169.254", "link-local address"),
        ("fe80::1", "link-local address"),
        ("febf:ffff::1", "link-local address"),
        ("224.0.0.5", "link-local multicast address"),
        ("224.0.0.255", "link-local multicast address"),
        ("ff02::1", "link-local multicast address"),
        ("ff12::1:2", "link-local multicast address"),  # Go ignores the flags nibble
        ("not-an-ip", NOT_AN_IP),
        ("fe80::1%eth0", NOT_AN_IP),
        # Next to the special ranges, and ordinary: published.
        ("10.0.0.1", ("10.0.0.1", False)),
        ("126.255.255.255", ("126.255.255.255", False)),
        ("128.0.0.1", ("128.0.0.1", False)),
        ("169.253.255.255", ("169.253.255.255", False)),
        ("169.255.0.1", ("169.255.0.1", False)),
        ("224.0.1.1", ("224.0.1.1", False)),
        ("0.0.0.1", ("0.0.0.1", False)),
        ("::2", ("::2", True)),
        ("fec0::1", ("fec0::1", True)),
        ("ff05::1", ("ff05::1", True)),
        ("fd00::0001", ("fd00::1", True)),
    ],
)
def test_endpoint_ip_refuses_what_the_api_refuses(
    text: str, expected: tuple[str, bool] | str
) -> None:
    assert endpoint_ip(text) == expected


@given(st.ip_addresses(v=4))
def test_ipv4_special_ranges_agree_with_the_ipaddress_module(
    address: ipaddress.IPv4Address,
) -> None:
    # The IPv4 check works on the octets; Go's predicates are ipaddress's for these ranges.
    if address.is_unspecified:
        expected: str | None = "unspecified address"
    elif address.is_loopback:
        expected = "loopback address"
    elif address.is_link_local:
        expected = "link-local address"
    elif address in ipaddress.IPv4Network("224.0.0.0/24"):
        expected = "link-local multicast address"
    else:
        expected = None
    result = endpoint_ip(str(address))
    assert (result if isinstance(result, str) else None) == expected


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("0.0.0.0", "unspecified address"),
        ("::", "unspecified address"),
        ("127.0.0.1", "loopback address"),
        ("::1", "loopback address"),
        ("169.254.1.1", "link-local address"),
        ("fe80::1", "link-local address"),
        ("224.0.0.5", "link-local multicast address"),
        ("ff02::2", "link-local multicast address"),
    ],
)
def test_special_pod_ips_are_dropped_and_reported(ip: str, reason: str) -> None:
    ok = "fd00::9" if ":" in ip else "10.0.0.9"
    family = "IPv6" if ":" in ip else "IPv4"
    record = pod_record(_pod(phase="Running", podIPs=[{"ip": ip}, {"ip": ok}]))
    assert record.ipv4 + record.ipv6 == (ok,)
    message = f"invalid pod IP {ip!r}: {reason}, which the API server refuses in an EndpointSlice"
    assert record.errors == (message,)
    service = {
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"ipFamilies": [family], "ports": [{"port": 80}]},
    }
    desired = desired_from_service_pods(service, [record], [{"metadata": {"name": "n"}}])
    assert desired.errors == [f"Pod ns/p: {message}"]
    assert desired.endpoint_count(family) == 1


def _pod(**status: object) -> dict[str, object]:
    return {
        "metadata": {"namespace": "ns", "name": "p", "uid": "u", "labels": {"app": "a"}},
        "spec": {
            "nodeName": "n",
            "hostname": "h",
            "subdomain": "s",
            "containers": [{"ports": [{"name": "http", "containerPort": 80}]}],
            "initContainers": [
                {
                    "restartPolicy": "Always",
                    "ports": [{"name": "side", "containerPort": 81, "protocol": "UDP"}],
                },
                {"ports": [{"name": "init", "containerPort": 82}]},
            ],
        },
        "status": status,
    }


def test_pod_record_projects_what_the_reconciler_reads() -> None:
    record = pod_record(
        _pod(
            phase="Running",
            podIP="10.0.0.1",
            podIPs=[{"ip": "10.0.0.1"}, {"ip": "fd00::0001"}, {"ip": "::ffff:10.0.0.2"}],
            conditions=[
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            ],
        )
    )
    assert record.ipv4 == ("10.0.0.1", "10.0.0.2")
    assert record.ipv6 == ("fd00::1",)
    assert record.pod_ips == ("10.0.0.1", "fd00::0001", "::ffff:10.0.0.2")
    assert record.ready and record.ready_transition == "2026-01-01T00:00:00Z"
    assert not record.terminating
    assert record.container_ports == (("http", "TCP", 80),)
    assert record.sidecar_ports == (("side", "UDP", 81),)
    assert (record.node_name, record.hostname, record.subdomain) == ("n", "h", "s")
    assert dict(record.labels) == {"app": "a"}
    assert record.errors == ()


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param({}, id="empty"),
        pytest.param({"metadata": None, "spec": [], "status": "x"}, id="wrong types"),
        pytest.param(
            _pod(podIPs=[{"ip": "bogus"}, {"ip": 7}, "x", {"ip": "10.0.0.9"}]), id="bad IPs"
        ),
        pytest.param(_pod(conditions="Ready"), id="bad conditions"),
        pytest.param(
            {"spec": {"containers": [{"ports": [{"name": "x", "containerPort": "80"}]}, None]}},
            id="bad container port",
        ),
    ],
)
def test_malformed_pods_never_raise(pod: dict[str, object]) -> None:
    record = pod_record(pod)
    assert isinstance(record, PodRecord)
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}
    desired = desired_from_service_pods(service, [pod, record, None], [])  # type: ignore[list-item]
    assert "skipping a pod that is not an object: NoneType" in desired.errors


def test_bad_ips_are_dropped_and_reported() -> None:
    record = pod_record(_pod(phase="Running", podIPs=[{"ip": "bogus"}, {"ip": "10.0.0.9"}]))
    assert record.ipv4 == ("10.0.0.9",)
    assert record.errors == ("invalid pod IP 'bogus'",)
    service = {
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"ipFamilies": ["IPv4"], "ports": [{"port": 80}]},
    }
    desired = desired_from_service_pods(service, [record], [{"metadata": {"name": "n"}}])
    assert desired.errors == ["Pod ns/p: invalid pod IP 'bogus'"]
    assert desired.endpoint_count("IPv4") == 1


def test_an_update_reuses_the_previous_records_parsed_ips() -> None:
    ips = [{"ip": "10.0.0.1"}, {"ip": "fd00::0001"}, {"ip": "::ffff:10.0.0.2"}]
    first = pod_record(_pod(phase="Pending", podIPs=ips))
    endpoint_ip.cache_clear()
    update = pod_record(_pod(phase="Running", podIPs=[dict(ip) for ip in ips]), first)
    assert endpoint_ip.cache_info().currsize == 0  # nothing parsed again
    assert update.phase == "Running"
    assert update.pod_ips is first.pod_ips
    assert (update.ipv4, update.ipv6) == (("10.0.0.1", "10.0.0.2"), ("fd00::1",))
    assert update.ipv4 is first.ipv4 and update.ipv6 is first.ipv6


@pytest.mark.parametrize(
    ("before", "after", "ipv4", "errors"),
    [
        pytest.param(["10.0.0.1"], ["10.0.0.3"], ("10.0.0.3",), (), id="changed"),
        pytest.param(
            ["10.0.0.1"], ["10.0.0.1", "10.0.0.3"], ("10.0.0.1", "10.0.0.3"), (), id="added"
        ),
        pytest.param(["10.0.0.1", "10.0.0.3"], ["10.0.0.1"], ("10.0.0.1",), (), id="removed"),
        pytest.param(
            ["bogus", "10.0.0.1"],
            ["bogus", "10.0.0.1"],
            ("10.0.0.1",),
            ("invalid pod IP 'bogus'",),
            id="invalid reported again",
        ),
    ],
)
def test_an_update_with_other_ips_parses_them(
    before: list[str], after: list[str], ipv4: tuple[str, ...], errors: tuple[str, ...]
) -> None:
    first = pod_record(_pod(podIPs=[{"ip": ip} for ip in before]))
    update = pod_record(_pod(podIPs=[{"ip": ip} for ip in after]), first)
    assert update == pod_record(_pod(podIPs=[{"ip": ip} for ip in after]))
    assert (update.ipv4, update.errors) == (ipv4, errors)


def test_records_share_label_maps_and_port_tables() -> None:
    first = pod_record(_pod(phase="Running"))
    second = pod_record(_pod(phase="Running"))
    assert first.labels is second.labels
    assert first.container_ports is second.container_ports


def test_label_maps_are_read_only_and_live_only_as_long_as_their_pods() -> None:
    record = pod_record(_pod(phase="Running"))
    with pytest.raises(TypeError):
        record.labels["app"] = "b"  # type: ignore[index]
    with pytest.raises(TypeError):
        record.labels.update(app="b")  # type: ignore[attr-defined]
    assert dict(record.labels) == {"app": "a"}
    # Jobs give each pod a label set of its own: the intern table must not keep them.
    before = len(records_module._label_maps)
    jobs = [pod_record({"metadata": {"labels": {"controller-uid": f"u{i}"}}}) for i in range(500)]
    assert len(records_module._label_maps) == before + 500
    del jobs
    gc.collect()
    assert len(records_module._label_maps) == before


def test_pod_record_memory_per_replica_is_under_2_kib() -> None:
    def replica(i: int) -> dict[str, object]:
        ip = f"10.1.{i // 250}.{i % 250 + 1}"
        return {
            "metadata": {
                "namespace": "production",
                "name": f"checkout-7d9f8b6c5d-{i:05x}",
                "uid": f"3f0c1a2e-5b6d-4e7f-8a9b-{i:012x}",
                "resourceVersion": str(1234567 + i),
                "labels": {"app": "checkout", "pod-template-hash": "7d9f8b6c5d", "tier": "web"},
            },
            "spec": {
                "nodeName": f"ip-10-0-{i % 50}-17.ec2.internal",
                "containers": [{"name": "app", "ports": [{"name": "http", "containerPort": 8080}]}],
            },
            "status": {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            },
        }

    # Bodies arrive as JSON text and are dropped once projected, as in the operator's index:
    # the record must pay for every string it keeps.
    text = json.dumps([replica(i) for i in range(2000)])
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    bodies = json.loads(text)
    records = [pod_record(body) for body in bodies]
    del bodies
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(records) == 2000
    assert (after - before) / len(records) <= 2048


def test_config_validation() -> None:
    config = ReconcilerConfig(controller_name="endpointslice-operator.example.io")
    assert config.max_endpoints_per_slice == 100
    assert config.placeholder and config.ownership_enforced and config.topology_hints
    assert config.prefer_same_traffic_distribution
    for bad in (0, 1001, -5):
        with pytest.raises(ValidationError):
            ReconcilerConfig(controller_name="x", max_endpoints_per_slice=bad)
    for name in ("", "-x", "a b", "x" * 64, "x/y"):
        with pytest.raises(ValidationError):
            ReconcilerConfig(controller_name=name)
    # The bounds themselves are valid: a 63-character label value, 1 and 1000 per slice.
    for good in (1, 1000):
        edge = ReconcilerConfig(controller_name="x" * 63, max_endpoints_per_slice=good)
        assert (edge.controller_name, edge.max_endpoints_per_slice) == ("x" * 63, good)
    with pytest.raises(ValidationError):
        config.max_endpoints_per_slice = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), "2026-01-02T03:04:05.12Z"),
        (datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), "2026-01-02T03:04:05.123456Z"),
        (
            datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:05Z",
        ),
        (datetime(2026, 1, 2, 3, 4, 5, 500), "2026-01-02T03:04:05.0005Z"),  # naive is UTC
    ],
)
def test_format_trigger_time(moment: datetime, text: str) -> None:
    assert format_trigger_time(moment) == text


@given(
    st.one_of(
        st.ip_addresses(v=4).map(str),
        st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,4}){2,4}", fullmatch=True),
        st.ip_addresses(v=6).map(str),
        st.text(max_size=20),
    )
)
def test_the_pod_ip_fast_path_agrees_with_the_full_parse(text: str) -> None:
    assert pod_endpoint_ip(text) == endpoint_ip.__wrapped__(text)


def test_label_sets_in_another_order_share_one_map() -> None:
    first = pod_record({"metadata": {"labels": {"b": "2", "a": "1"}}})
    second = pod_record({"metadata": {"labels": {"a": "1", "b": "2"}}})
    third = pod_record({"metadata": {"labels": {"b": "2", "a": "1"}}})
    assert first.labels is second.labels is third.labels
    assert list(first.labels) == ["a", "b"]
    # Labels that are not all strings are dropped, never looked up under their given order.
    odd = pod_record({"metadata": {"labels": {"b": "2", "a": 1}}})
    assert dict(odd.labels) == {"b": "2"}


def test_the_record_cache_reuses_a_record_for_the_same_object_and_version() -> None:
    cache = PodRecordCache(max_pods=2)
    pod: dict[str, Any] = _pod(phase="Running", podIPs=[{"ip": "10.0.0.1"}])
    pod["metadata"].update(uid="u-1", resourceVersion="7")
    record = cache.record(pod)
    assert cache.record(pod) is record
    # An equal but different dict is parsed again (the cache holds objects, not contents).
    copy = json.loads(json.dumps(pod))
    assert cache.record(copy) == record and cache.record(copy) is not record
    # A new version of the same pod is read again, reusing the parsed IPs.
    newer = json.loads(json.dumps(pod))
    newer["metadata"]["resourceVersion"] = "8"
    newer["status"]["phase"] = "Failed"
    updated = cache.record(newer)
    assert updated.phase == "Failed" and updated.ipv4 is record.ipv4
    # Without a uid nothing is kept; and the cache holds at most max_pods.
    anonymous: dict[str, Any] = _pod(phase="Running")
    del anonymous["metadata"]["uid"]
    cache.record(anonymous)
    assert len(cache) == 1
    for i in range(5):
        other: dict[str, Any] = _pod(phase="Running")
        other["metadata"].update(uid=f"u-{i + 2}", resourceVersion="1")
        cache.record(other)
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_pod_dicts_are_read_through_the_shared_cache() -> None:
    pod: dict[str, Any] = _pod(phase="Running")
    pod["metadata"].update(uid="shared-cache-pod", resourceVersion="1")
    record = as_pod_record(pod)
    assert as_pod_record(pod) is record is SHARED_RECORD_CACHE.record(pod)
    assert as_pod_record(record) is record


def test_a_pod_given_as_any_mapping_is_read_like_a_dict() -> None:
    """The types allow any ``Mapping`` for a pod (a read-only view, an informer's frozen
    object), not only a dict: it is read, never rejected as "not an object"."""
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}
    pod = _pod(podIPs=[{"ip": "10.0.0.9"}])
    nodes = [{"metadata": {"name": "n", "labels": {}}}]
    as_dict = desired_from_service_pods(service, [pod], nodes)
    as_view = desired_from_service_pods(service, [MappingProxyType(pod)], nodes)
    assert as_view.errors == as_dict.errors == []
    assert as_view.groups == as_dict.groups
    (group,) = as_view.groups["IPv4"].values()
    assert [key[0] for key in group.endpoints] == [("10.0.0.9",)]


def test_desired_endpoints_defaults_and_compact_groups() -> None:
    """The library types a caller may build by hand: nothing published not-ready, no errors,
    nobody left out unless said; both keep no per-instance ``__dict__`` (one group per port
    set of every Service is held while planning)."""
    desired = DesiredEndpoints(("IPv4",), {"IPv4": {}})
    assert (desired.publish_not_ready, desired.errors, desired.left_out) == (False, [], [])
    group = EndpointGroup(())
    assert group.endpoints == {}
    assert not hasattr(group, "__dict__") and not hasattr(desired, "__dict__")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"clusterIP": "fd00::10"}, ("IPv6",)),
        ({"clusterIP": "10.96.0.10"}, ("IPv4",)),
        ({"clusterIP": "not-an-ip"}, ("IPv4",)),
        ({"clusterIP": "None"}, ("IPv4", "IPv6")),
        ({}, ("IPv4", "IPv6")),
        ({"ipFamilies": ["IPv6", "IPv4"], "clusterIP": "10.96.0.10"}, ("IPv4", "IPv6")),
    ],
)
def test_address_types_without_ip_families_follow_the_cluster_ip(
    spec: dict[str, Any], expected: tuple[str, ...]
) -> None:
    """Upstream's ``getAddressTypesForService``: ``ipFamilies`` when set, else the family of
    the ClusterIP, else (headless, none) both."""
    assert address_types_for_service({"spec": spec}) == expected


def test_bad_entries_are_skipped_and_the_rest_still_read() -> None:
    """A bad pod or node early in the list does not stop the reading of those after it."""
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}
    pod = _pod(podIPs=[{"ip": "10.0.0.9"}])
    nodes: list[Any] = [
        None,
        {"metadata": {"labels": {"topology.kubernetes.io/zone": "z0"}}},  # no name
        {"metadata": {"name": "n", "labels": {"topology.kubernetes.io/zone": "z1"}}},
    ]
    assert node_zones(nodes) == {"n": "z1"}
    desired = desired_from_service_pods(service, [None, pod], nodes)  # type: ignore[list-item]
    assert "skipping a pod that is not an object: NoneType" in desired.errors
    (group,) = desired.groups["IPv4"].values()
    assert [key[0] for key in group.endpoints] == [("10.0.0.9",)]


@pytest.mark.parametrize(
    ("subdomain", "pod_namespace", "hostname"),
    [("s", "ns", "h"), ("other", "ns", None), ("s", "elsewhere", None), (None, "ns", None)],
)
def test_hostname_only_for_a_pod_of_the_services_subdomain_and_namespace(
    subdomain: str | None, pod_namespace: str, hostname: str | None
) -> None:
    """Upstream: ``hostname`` when the pod's ``spec.subdomain`` is the Service's name and the
    pod is in the Service's namespace."""
    service = {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 80}]}}
    pod: dict[str, Any] = _pod(podIPs=[{"ip": "10.0.0.9"}])
    pod["metadata"] = {**pod["metadata"], "namespace": pod_namespace}
    spec = dict(pod["spec"])
    spec["hostname"] = "h"
    if subdomain is None:
        spec.pop("subdomain", None)
    else:
        spec["subdomain"] = subdomain
    pod["spec"] = spec
    nodes = [{"metadata": {"name": "n", "labels": {}}}]
    desired = desired_from_service_pods(service, [pod], nodes)
    (group,) = desired.groups["IPv4"].values()
    (endpoint,) = group.endpoints.values()
    assert endpoint.hostname == hostname


def test_the_ip_parse_caches_hold_at_most_4096_addresses() -> None:
    """Pod IPs churn: an unbounded cache grows with the cluster's history (docs/reliability.md,
    the soak). Both caches keep the 4,096 most recent."""
    for parse in (canonical_ip, endpoint_ip):
        parse.cache_clear()
        for i in range(4100):
            parse(f"fd00::{i:x}")
        assert parse.cache_info().currsize == 4096
        parse.cache_clear()
