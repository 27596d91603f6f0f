"""The MCS library on the edges the main tests leave: malformed objects as read, time zones,
fields set or unset one at a time, and which copy of an endpoint an import keeps."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import (
    ExportedService,
    ImportPort,
    InvalidExport,
    derived_service,
    derived_service_change,
    desired_from_source_slices,
    export_conditions,
    import_slice_labels,
    merge_conditions,
    read_export,
    resolve_import,
    service_import,
)

NS = "demo"


def export_obj(created: str = "2026-01-01T00:00:00Z", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": NS, "creationTimestamp": created},
        "spec": spec,
    }


def service_obj(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "clusterIP": "10.0.0.10",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    body.update(spec)
    return {"metadata": {"name": "web", "namespace": NS}, "spec": body}


def exported(cluster: str, created: str = "2026-01-01T00:00:00Z", **spec: Any) -> ExportedService:
    result = read_export(cluster, export_obj(created), service_obj(**spec))
    assert isinstance(result, ExportedService)
    return result


# -- reading ------------------------------------------------------------------------------------


def test_unset_empty_or_junk_fields_read_as_their_defaults() -> None:
    export = read_export(
        "c1",
        export_obj(exportedLabels={"team": "a", "n": 1}, exportedAnnotations={"x": None}),
        service_obj(
            ports=[
                {"name": "a", "port": 80, "protocol": ""},
                {"name": "b", "port": 81, "protocol": 6},
            ],
            sessionAffinity="",
            internalTrafficPolicy="",
            trafficDistribution=7,
        ),
    )
    assert isinstance(export, ExportedService)
    assert [p.protocol for p in export.ports] == ["TCP", "TCP"]
    assert export.session_affinity == "None"
    assert export.internal_traffic_policy is None
    assert export.traffic_distribution is None
    assert export.exported_labels == (("team", "a"),)
    assert export.exported_annotations == ()
    other = read_export("c1", export_obj(), service_obj(sessionAffinity=3))
    assert isinstance(other, ExportedService) and other.session_affinity == "None"


def test_creation_times_with_an_offset_are_compared_in_utc() -> None:
    # 01:00 at +02:00 is 23:00 UTC the day before: older than midnight UTC.
    east = exported("east", "2026-01-01T01:00:00+02:00", sessionAffinity="ClientIP")
    west = exported("west", "2026-01-01T00:00:00Z")
    assert east.created == datetime(2025, 12, 31, 23, tzinfo=UTC)
    resolution = resolve_import([west, east])
    assert resolution is not None
    assert resolution.decided_by == "east"
    assert resolution.session_affinity == "ClientIP"
    # Without an offset the time is UTC, and still compares with the others.
    naive = exported("north", "2025-12-31T22:00:00")
    assert naive.created == datetime(2025, 12, 31, 22, tzinfo=UTC)
    again = resolve_import([west, east, naive])
    assert again is not None and again.decided_by == "north"


def test_session_affinity_configs_that_differ_only_in_key_order_agree() -> None:
    first = exported(
        "c1",
        sessionAffinity="ClientIP",
        sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}, "extra": {"a": 1, "b": 2}},
    )
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        sessionAffinity="ClientIP",
        sessionAffinityConfig={"extra": {"b": 2, "a": 1}, "clientIP": {"timeoutSeconds": 60}},
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.conflicts == ()


# -- values -------------------------------------------------------------------------------------


def test_exports_and_resolutions_are_immutable_hashable_values() -> None:
    export = exported("c1")
    invalid = read_export("c1", export_obj(), None)
    assert isinstance(invalid, InvalidExport)
    with pytest.raises(FrozenInstanceError):
        export.cluster = "c2"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        invalid.reason = "x"  # type: ignore[misc]
    resolution = resolve_import([export])
    assert resolution is not None
    with pytest.raises(FrozenInstanceError):
        resolution.decided_by = "c2"  # type: ignore[misc]
    # Values: equal when computed from the same exports, usable as set members.
    again = resolve_import([exported("c1")])
    assert len({export, exported("c1")}) == 1
    assert len({invalid, read_export("c1", export_obj(), None)}) == 1
    assert again == resolution and hash(again) == hash(resolution)


def test_resolutions_that_differ_only_in_who_serves_a_port_are_not_equal() -> None:
    # c2's http is another port number in one case and another appProtocol in the other: the
    # import and its conflict are the same, but only in the second does c2 serve http (the
    # message names the port left out). A controller comparing resolutions must see the change.
    first = exported("c1")
    other_number = exported("c2", "2026-01-02T00:00:00Z", ports=[{"name": "http", "port": 81}])
    other_app = exported(
        "c2", "2026-01-02T00:00:00Z", ports=[{"name": "http", "port": 80, "appProtocol": "h2c"}]
    )
    a = resolve_import([first, other_number])
    b = resolve_import([first, other_app])
    assert a is not None and b is not None
    assert (a.ports, a.conflicts) == (b.ports, b.conflicts)
    assert "c2's http/TCP/81 is left out" in a.conflict_message
    assert "left out" not in b.conflict_message
    assert a.cluster_ports["c2"] == frozenset() and b.cluster_ports["c2"] == {"http"}
    assert a != b


def test_import_ports_sort_by_name_protocol_and_number() -> None:
    ports = [
        ImportPort("web", "TCP", 80),
        ImportPort("dns", "UDP", 53),
        ImportPort("dns", "TCP", 53),
    ]
    assert sorted(ports) == [
        ImportPort("dns", "TCP", 53),
        ImportPort("dns", "UDP", 53),
        ImportPort("web", "TCP", 80),
    ]


# -- port merging -------------------------------------------------------------------------------


def test_a_port_left_out_does_not_drop_the_ports_after_it() -> None:
    first = exported("c1", ports=[{"name": "web", "port": 80}])
    # http is 80/TCP, already taken as "web": left out; metrics is new.
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.ports == (ImportPort("web", "TCP", 80), ImportPort("metrics", "TCP", 9090))
    assert resolution.cluster_ports["c2"] == {"metrics"}


def test_an_unnamed_port_left_out_does_not_drop_the_ports_after_it() -> None:
    # As read (the Service API would refuse it): an unnamed port beside a named one.
    first = exported("c1")
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        ports=[{"port": 81}, {"name": "metrics", "port": 9090}],
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.ports == (ImportPort("http", "TCP", 80), ImportPort("metrics", "TCP", 9090))
    assert resolution.cluster_ports == {"c1": {"http"}, "c2": {"metrics"}}


# -- the objects written --------------------------------------------------------------------------


def test_service_import_ips_only_from_allocated_derived_addresses() -> None:
    resolution = resolve_import([exported("c1")])
    assert resolution is not None

    def ips(derived: dict[str, Any]) -> Any:
        return service_import(resolution, derived)["spec"].get("ips")

    assert ips({"spec": {"clusterIPs": ["10.96.0.7"]}}) is None  # no families: not read
    assert ips({"spec": {"ipFamilies": ["IPv4"]}}) is None
    assert ips({"spec": {"clusterIPs": ["None"], "ipFamilies": ["IPv4"]}}) is None
    assert ips({"spec": {"clusterIPs": ["", 7], "ipFamilies": ["IPv4", "IPv6"]}}) is None
    both = {"spec": {"clusterIPs": ["10.96.0.7", "fd00::7"], "ipFamilies": ["IPv4", 6]}}
    assert service_import(resolution, both)["spec"]["ips"] == ["10.96.0.7"]
    assert service_import(resolution, both)["spec"]["ipFamilies"] == ["IPv4"]


def test_optional_fields_are_written_only_when_set() -> None:
    bare = resolve_import([exported("c1")])
    assert bare is not None
    for spec in (service_import(bare)["spec"], derived_service(bare, "u", managed_by="m")["spec"]):
        assert "sessionAffinityConfig" not in spec
        assert "internalTrafficPolicy" not in spec
        assert "trafficDistribution" not in spec
    config = {"clientIP": {"timeoutSeconds": 30}}
    full = resolve_import(
        [
            exported(
                "c1",
                sessionAffinity="ClientIP",
                sessionAffinityConfig=config,
                internalTrafficPolicy="Local",
                trafficDistribution="PreferClose",
            )
        ]
    )
    assert full is not None
    for spec in (service_import(full)["spec"], derived_service(full, "u", managed_by="m")["spec"]):
        assert spec["sessionAffinityConfig"] == config
        assert spec["internalTrafficPolicy"] == "Local"
        assert spec["trafficDistribution"] == "PreferClose"
    # ClientIP without a config: none is made up.
    no_config = resolve_import([exported("c1", sessionAffinity="ClientIP")])
    assert no_config is not None
    assert "sessionAffinityConfig" not in derived_service(no_config, "u", managed_by="m")["spec"]
    # A config beside sessionAffinity None is not written onto the Service (it would refuse it).
    stray = resolve_import([exported("c1", sessionAffinityConfig=config)])
    assert stray is not None
    assert "sessionAffinityConfig" not in derived_service(stray, "u", managed_by="m")["spec"]


def test_derived_service_change_compares_every_field_it_sets() -> None:
    resolution = resolve_import([exported("c1", internalTrafficPolicy="Cluster")])
    assert resolution is not None
    desired = derived_service(resolution, "u", managed_by="m")
    assert "sessionAffinityConfig" not in desired["spec"]
    existing = {"spec": {**desired["spec"], "internalTrafficPolicy": "Local"}}
    assert derived_service_change(existing, desired) == "update"


# -- conditions ---------------------------------------------------------------------------------


def test_merge_conditions_reads_past_junk_entries() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    export = exported("c1")
    desired = export_conditions(export, None, imported=False)
    first = merge_conditions(None, desired, now=t0)
    later = merge_conditions(["junk", *first], desired, now=t0 + timedelta(days=1))
    assert later == first


def test_transition_times_with_an_offset_are_written_in_utc() -> None:
    export = exported("c1")
    desired = export_conditions(export, None, imported=False)
    now = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    (valid, *_) = merge_conditions(None, desired, now=now)
    assert valid["lastTransitionTime"] == "2026-01-01T10:00:00Z"


# -- imported slices ----------------------------------------------------------------------------

HTTP = {"name": "http", "port": 8080, "protocol": "TCP"}


def endpoint(ip: str, zone: str = "zone-a", **conditions: bool) -> dict[str, Any]:
    return {"addresses": [ip], "conditions": conditions, "zone": zone}


def source_slice(
    name: str,
    endpoints: list[Any],
    ports: list[dict[str, Any]] | None = None,
    address_type: str = "IPv4",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS},
        "addressType": address_type,
        "ports": ports if ports is not None else [HTTP],
        "endpoints": endpoints,
    }


def kept(slices: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    desired = desired_from_source_slices(slices, {"http"})
    return {
        e.addresses[0]: (e.state[1], e.state[2], e.state[3])  # zone, ready, serving
        for group in desired.groups["IPv4"].values()
        for e in group.endpoints.values()
    }


def test_of_two_copies_the_ready_then_the_serving_one_is_kept() -> None:
    # Ready wins even over a serving copy that is not ready (a terminating pod).
    terminating = endpoint("10.0.0.1", "zone-a", ready=False, serving=True, terminating=True)
    ready = endpoint("10.0.0.1", "zone-b", ready=True, serving=True, terminating=False)
    assert kept([source_slice("a", [terminating]), source_slice("b", [ready])]) == {
        "10.0.0.1": ("zone-b", True, True)
    }
    # Both not ready: the serving copy wins.
    not_serving = endpoint("10.0.0.1", "zone-a", ready=False, serving=False, terminating=True)
    serving = endpoint("10.0.0.1", "zone-b", ready=False, serving=True, terminating=True)
    assert kept([source_slice("a", [not_serving]), source_slice("b", [serving])]) == {
        "10.0.0.1": ("zone-b", False, True)
    }
    # Unset conditions mean ready and serving (the API's reading of a missing condition).
    unknown = endpoint("10.0.0.1", "zone-b")
    assert kept([source_slice("a", [not_serving]), source_slice("b", [unknown])]) == {
        "10.0.0.1": ("zone-b", None, None)
    }


def test_of_two_equal_copies_the_slice_whose_name_sorts_first_wins() -> None:
    first = source_slice("a", [endpoint("10.0.0.1", "zone-a", ready=True)])
    second = source_slice("b", [endpoint("10.0.0.1", "zone-b", ready=True)])
    for order in ([first, second], [second, first]):
        assert kept(order) == {"10.0.0.1": ("zone-a", True, None)}


def test_slices_and_endpoints_left_out_do_not_stop_the_others() -> None:
    slices = [
        source_slice("a", [{"addresses": ["web.example"]}], address_type="FQDN"),
        source_slice("b", [endpoint("10.0.0.9")], ports=[{"name": "metrics", "port": 9090}]),
        source_slice("c", ["junk", endpoint("10.0.0.1")]),
        source_slice("d", [{"addresses": []}, endpoint("10.0.0.2")]),
        source_slice("e", [endpoint("10.0.0.3")]),
    ]
    assert set(kept(slices)) == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}


def test_a_wrong_service_name_label_alone_rewrites_an_imported_slice() -> None:
    labels = import_slice_labels("web", "derived-abc", "east")
    desired, changed = labels(None, "ours")
    assert changed is True
    assert labels(desired, "ours") == (desired, False)
    wrong = {**desired, "kubernetes.io/service-name": "derived-old"}
    assert labels(wrong, "ours") == (desired, True)
