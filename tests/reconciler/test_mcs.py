"""The pure MCS library (KEP-1645): derived names, conflict resolution, imports, conditions."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from endpointslice_operator.reconciler.mcs import (
    ANNOTATION_DERIVED_SERVICE,
    CONFLICT_REASONS,
    ExportedService,
    ImportPort,
    InvalidExport,
    cluster_id_of,
    derived_service,
    derived_service_change,
    derived_service_name,
    export_conditions,
    is_cluster_id,
    merge_conditions,
    read_export,
    resolve_import,
    service_import,
)

NS = "demo"


def export_obj(
    name: str = "web",
    created: str = "2026-01-01T00:00:00Z",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if labels is not None:
        spec["exportedLabels"] = labels
    if annotations is not None:
        spec["exportedAnnotations"] = annotations
    return {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": created},
        "spec": spec,
    }


def service_obj(
    name: str = "web",
    ports: list[dict[str, Any]] | None = None,
    headless: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "ClusterIP",
        "clusterIP": "None" if headless else "10.0.0.10",
        "ports": ports if ports is not None else [{"name": "http", "port": 80, "protocol": "TCP"}],
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "internalTrafficPolicy": "Cluster",
    }
    body.update(spec)
    return {"metadata": {"name": name, "namespace": NS}, "spec": body}


def exported(cluster: str, created: str = "2026-01-01T00:00:00Z", **kwargs: Any) -> ExportedService:
    labels = kwargs.pop("labels", None)
    annotations = kwargs.pop("annotations", None)
    result = read_export(
        cluster,
        export_obj(created=created, labels=labels, annotations=annotations),
        service_obj(**kwargs),
    )
    assert isinstance(result, ExportedService)
    return result


# -- the derived Service name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "name", "expected"),
    [
        # Computed independently: printf '%s' ns/name | openssl dgst -sha256 -binary | basenc
        # --base32hex | head -c 10, lowercased.
        ("default", "web", "derived-gapqrqeg1j"),
        ("kube-system", "kube-dns", "derived-bnmpvejc1s"),
        ("mcs-test", "hello", "derived-e1ltrs2bmf"),
    ],
)
def test_derived_service_name_known_values(namespace: str, name: str, expected: str) -> None:
    assert derived_service_name(namespace, name) == expected


@given(st.text(min_size=1, max_size=63), st.text(min_size=1, max_size=253))
def test_derived_service_name_is_a_service_name(namespace: str, name: str) -> None:
    derived = derived_service_name(namespace, name)
    # "derived-" + 10 base32hex digits: a DNS-1035 label, so a valid Service name.
    assert re.fullmatch(r"derived-[0-9a-v]{10}", derived)


def test_import_annotation_names_the_derived_service() -> None:
    # The reference controller's test: the import's annotation is derivedName(import), and the
    # derived Service has that name.
    resolution = resolve_import([exported("c1")])
    assert resolution is not None
    imported = service_import(resolution)
    service = derived_service(resolution, "uid-1", managed_by="ours")
    assert imported["metadata"]["annotations"][ANNOTATION_DERIVED_SERVICE] == derived_service_name(
        NS, "web"
    )
    assert service["metadata"]["name"] == derived_service_name(NS, "web")


# -- cluster ids -------------------------------------------------------------------------------


def test_cluster_id_of() -> None:
    prop = {"metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "east-1"}}
    assert cluster_id_of(prop) == "east-1"
    assert cluster_id_of(None) is None
    assert (
        cluster_id_of({"metadata": {"name": "clusterset.k8s.io"}, "spec": {"value": "x"}}) is None
    )
    assert (
        cluster_id_of(
            {"metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "Not_A_Label"}}
        )
        is None
    )
    assert cluster_id_of({"metadata": {"name": "cluster.clusterset.k8s.io"}}) is None
    assert cluster_id_of({"metadata": "junk", "spec": []}) is None
    assert is_cluster_id("a" * 63) and not is_cluster_id("a" * 64)
    assert not is_cluster_id("-a") and not is_cluster_id("") and not is_cluster_id(3)


# -- reading an export -------------------------------------------------------------------------


def test_no_service_is_invalid() -> None:
    result = read_export("c1", export_obj(), None)
    assert isinstance(result, InvalidExport)
    assert result.reason == "NoService"


def test_external_name_is_invalid() -> None:
    result = read_export(
        "c1", export_obj(), service_obj(type="ExternalName", externalName="x.example")
    )
    assert isinstance(result, InvalidExport)
    assert result.reason == "InvalidServiceType"


def test_read_export_fields_and_defaults() -> None:
    export = read_export(
        "c1",
        export_obj(labels={"l": "1"}, annotations={"a": "2"}),
        {
            "metadata": {"name": "web", "namespace": NS},
            "spec": {
                "type": "LoadBalancer",
                "clusterIP": "10.0.0.3",
                "ports": [
                    {"port": 53, "protocol": "UDP"},
                    {"port": "junk"},
                    "junk",
                    {"port": 8080, "appProtocol": "h2c", "name": "x"},
                ],
                "sessionAffinity": "ClientIP",
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 30}},
                "trafficDistribution": "PreferClose",
            },
        },
    )
    assert isinstance(export, ExportedService)
    assert export.type == "ClusterSetIP"
    assert export.ports == (ImportPort("", "UDP", 53), ImportPort("x", "TCP", 8080, "h2c"))
    assert export.session_affinity == "ClientIP"
    assert export.session_affinity_config == '{"clientIP":{"timeoutSeconds":30}}'
    assert export.traffic_distribution == "PreferClose"
    assert export.internal_traffic_policy is None
    assert export.exported_labels == (("l", "1"),)
    assert export.exported_annotations == (("a", "2"),)
    assert export.created == datetime(2026, 1, 1, tzinfo=UTC)
    headless = exported("c1", headless=True)
    assert headless.type == "Headless"


def test_read_export_survives_junk() -> None:
    result = read_export("c1", {"metadata": "junk", "spec": 3}, {"spec": "junk"})
    assert isinstance(result, ExportedService)
    assert result.ports == ()
    assert result.created == datetime.max.replace(tzinfo=UTC)


# -- conflict resolution ----------------------------------------------------------------------


def test_single_export_has_no_conflicts() -> None:
    resolution = resolve_import([exported("c1")])
    assert resolution is not None
    assert resolution.conflicts == ()
    assert resolution.conflict_reason == "NoConflicts"
    assert resolution.clusters == ("c1",)
    assert resolution.cluster_ports == {"c1": frozenset({"http"})}
    assert resolve_import([]) is None


def test_port_union_raises_port_conflict() -> None:
    # The conformance case: the second cluster adds a port; the import has the union.
    first = exported("c1", "2026-01-01T00:00:00Z")
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "stcp", "port": 142, "protocol": "SCTP"},
        ],
    )
    resolution = resolve_import([second, first])
    assert resolution is not None
    assert resolution.ports == (ImportPort("http", "TCP", 80), ImportPort("stcp", "SCTP", 142))
    assert resolution.conflicts == ("PortConflict",)
    assert resolution.cluster_ports == {
        "c1": frozenset({"http"}),
        "c2": frozenset({"http", "stcp"}),
    }


def test_conflicting_port_number_the_oldest_wins() -> None:
    first = exported("c2", "2026-01-01T00:00:00Z")
    second = exported(
        "c1", "2026-01-05T00:00:00Z", ports=[{"name": "http", "port": 81, "protocol": "TCP"}]
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.ports == (ImportPort("http", "TCP", 80),)
    assert resolution.conflict_reason == "PortConflict"
    # c1's http is another port: its traffic goes only to c2.
    assert resolution.cluster_ports == {"c2": frozenset({"http"}), "c1": frozenset()}
    # The message says what happens to the ports: the union, not the oldest export's.
    assert resolution.conflict_message == (
        "ports of c1 differ from c2's: the import has the union of the ports (merged by name, "
        "oldest export first; c1's http/TCP/81 is left out, its name or protocol and number "
        "being taken, and c1 does not serve it)"
    )


def test_the_conflict_message_says_the_ports_are_the_union_and_the_rest_the_oldests() -> None:
    first = exported("c1", "2026-01-01T00:00:00Z")
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        ports=[{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}],
        sessionAffinity="ClientIP",
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.ports == (ImportPort("http", "TCP", 80), ImportPort("metrics", "TCP", 9090))
    assert resolution.conflicts == ("PortConflict", "SessionAffinityConflict")
    assert resolution.conflict_message == (
        "ports of c2 differ from c1's: the import has the union of the ports (merged by name, "
        "oldest export first); session affinity of c2 differ from c1's: the oldest export "
        "(cluster c1) decides"
    )


def test_port_taken_under_another_name_and_unnamed_ports() -> None:
    first = exported("c1", "2026-01-01T00:00:00Z", ports=[{"port": 80, "protocol": "TCP"}])
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        ports=[{"name": "web", "port": 80}, {"name": "metrics", "port": 9090}],
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    # 80/TCP is taken under "" and an unnamed port cannot stand beside named ones.
    assert resolution.ports == (ImportPort("", "TCP", 80),)
    assert resolution.cluster_ports == {"c1": frozenset({""}), "c2": frozenset()}
    assert resolution.conflicts == ("PortConflict",)


def test_app_protocol_difference_is_a_conflict_but_served() -> None:
    first = exported(
        "c1", "2026-01-01T00:00:00Z", ports=[{"name": "http", "port": 80, "appProtocol": "http"}]
    )
    second = exported(
        "c2", "2026-01-02T00:00:00Z", ports=[{"name": "http", "port": 80, "appProtocol": "h2c"}]
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.ports == (ImportPort("http", "TCP", 80, "http"),)
    assert resolution.conflicts == ("PortConflict",)
    assert resolution.cluster_ports == {"c1": frozenset({"http"}), "c2": frozenset({"http"})}


def test_type_conflict_the_oldest_wins() -> None:
    clusterip = exported("c1", "2026-01-01T00:00:00Z")
    headless = exported("c2", "2026-01-02T00:00:00Z", headless=True)
    resolution = resolve_import([headless, clusterip])
    assert resolution is not None
    assert resolution.type == "ClusterSetIP"
    assert resolution.conflicts == ("TypeConflict",)
    assert resolution.decided_by == "c1"
    # The other way round: the headless export is older.
    older_headless = exported("c2", "2025-12-31T00:00:00Z", headless=True)
    resolution = resolve_import([clusterip, older_headless])
    assert resolution is not None
    assert resolution.type == "Headless"
    assert resolution.decided_by == "c2"


def test_same_timestamp_cluster_id_breaks_the_tie() -> None:
    a = exported("alpha", sessionAffinity="ClientIP")
    b = exported("beta")
    resolution = resolve_import([b, a])
    assert resolution is not None
    assert resolution.decided_by == "alpha"
    assert resolution.session_affinity == "ClientIP"
    assert resolution.conflicts == ("SessionAffinityConflict",)


def test_labels_and_annotations_of_the_oldest_only() -> None:
    first = exported(
        "c1",
        "2026-01-01T00:00:00Z",
        labels={"dummy-label": "true"},
        annotations={"dummy-annotation": "true"},
    )
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        labels={"dummy-label2": "true"},
        annotations={"dummy-annotation2": "true"},
    )
    resolution = resolve_import([second, first])
    assert resolution is not None
    assert resolution.conflicts == ("AnnotationsConflict", "LabelsConflict")
    assert resolution.conflict_reason == "AnnotationsConflict,LabelsConflict"
    imported = service_import(resolution)
    assert imported["metadata"]["labels"] == {"dummy-label": "true"}
    assert imported["metadata"]["annotations"] == {
        "dummy-annotation": "true",
        ANNOTATION_DERIVED_SERVICE: derived_service_name(NS, "web"),
    }


def test_every_conflict_reason_in_order() -> None:
    first = exported("c1", "2026-01-01T00:00:00Z")
    second = exported(
        "c2",
        "2026-01-02T00:00:00Z",
        headless=True,
        ports=[{"name": "http", "port": 81}],
        sessionAffinity="ClientIP",
        sessionAffinityConfig={"clientIP": {"timeoutSeconds": 5}},
        internalTrafficPolicy="Local",
        trafficDistribution="PreferClose",
        ipFamilies=["IPv6"],
        labels={"x": "y"},
        annotations={"x": "y"},
    )
    resolution = resolve_import([first, second])
    assert resolution is not None
    assert resolution.conflicts == CONFLICT_REASONS
    assert resolution.conflict_reason == (
        "PortConflict,TypeConflict,SessionAffinityConflict,SessionAffinityConfigConflict,"
        "AnnotationsConflict,LabelsConflict,InternalTrafficPolicyConflict,"
        "TrafficDistributionConflict,IPFamilyConflict"
    )


def test_duplicate_cluster_ids_count_once() -> None:
    older = exported("c1", "2026-01-01T00:00:00Z")
    newer = exported("c1", "2026-01-03T00:00:00Z", ports=[{"name": "x", "port": 1}])
    for order in ([older, newer], [newer, older]):
        resolution = resolve_import(order)
        assert resolution is not None
        assert resolution.clusters == ("c1",)
        assert resolution.ports == (ImportPort("http", "TCP", 80),)
        assert resolution.conflicts == ()


def test_exports_of_different_services_are_refused() -> None:
    a = exported("c1")
    b = read_export("c2", export_obj(name="other"), service_obj(name="other"))
    assert isinstance(b, ExportedService)
    with pytest.raises(ValueError, match="one Service"):
        resolve_import([a, b])


# -- the import side ---------------------------------------------------------------------------


def test_service_import_takes_ips_from_the_derived_service() -> None:
    resolution = resolve_import(
        [exported("c2"), exported("c1", "2025-01-01T00:00:00Z", sessionAffinity="ClientIP")]
    )
    assert resolution is not None
    before = service_import(resolution)
    assert "ips" not in before["spec"] and "ipFamilies" not in before["spec"]
    derived = {"spec": {"clusterIPs": ["10.96.0.7", "fd00::7"], "ipFamilies": ["IPv4", "IPv6"]}}
    imported = service_import(resolution, derived)
    assert imported["spec"]["ips"] == ["10.96.0.7", "fd00::7"]
    assert len(imported["spec"]["ips"]) == len(imported["spec"]["ipFamilies"])
    assert imported["spec"]["type"] == "ClusterSetIP"
    assert imported["spec"]["ports"] == [{"name": "http", "protocol": "TCP", "port": 80}]
    assert imported["spec"]["sessionAffinity"] == "ClientIP"
    assert imported["spec"]["internalTrafficPolicy"] == "Cluster"
    assert imported["status"] == {"clusters": [{"cluster": "c1"}, {"cluster": "c2"}]}
    assert imported["metadata"]["name"] == "web" and imported["metadata"]["namespace"] == NS
    # A ragged or junk derived Service gives matched pairs only.
    ragged = service_import(
        resolution, {"spec": {"clusterIPs": ["10.96.0.7", "fd00::7"], "ipFamilies": ["IPv4"]}}
    )
    assert ragged["spec"]["ips"] == ["10.96.0.7"] and ragged["spec"]["ipFamilies"] == ["IPv4"]
    assert "ips" not in service_import(resolution, {"spec": "junk"})["spec"]


def test_headless_import_and_derived_service() -> None:
    resolution = resolve_import([exported("c1", headless=True)])
    assert resolution is not None
    derived = derived_service(resolution, "uid-9", managed_by="endpointslice-operator")
    imported = service_import(
        resolution, {"spec": {"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4"]}}
    )
    assert imported["spec"]["type"] == "Headless"
    assert "ips" not in imported["spec"]
    assert derived["spec"]["clusterIP"] == "None"
    assert derived["spec"]["type"] == "ClusterIP"
    assert "selector" not in derived["spec"]
    assert derived["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "multicluster.x-k8s.io/v1beta1",
            "kind": "ServiceImport",
            "name": "web",
            "uid": "uid-9",
            "controller": True,
        }
    ]
    assert derived["metadata"]["labels"] == {
        "multicluster.kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-operator",
    }


def test_derived_service_families_and_affinity() -> None:
    dual = resolve_import(
        [
            exported(
                "c1",
                ipFamilies=["IPv6", "IPv4"],
                sessionAffinity="ClientIP",
                sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}},
            )
        ]
    )
    assert dual is not None
    spec = derived_service(dual, "u", managed_by="m")["spec"]
    assert spec["ipFamilies"] == ["IPv6", "IPv4"] and spec["ipFamilyPolicy"] == "PreferDualStack"
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 60}}
    single = resolve_import([exported("c1")])
    assert single is not None
    spec = derived_service(single, "u", managed_by="m")["spec"]
    assert spec["ipFamilyPolicy"] == "SingleStack" and "sessionAffinityConfig" not in spec


def test_derived_service_change() -> None:
    resolution = resolve_import([exported("c1")])
    assert resolution is not None
    desired = derived_service(resolution, "u", managed_by="m")
    # As read back: the server filled in clusterIP(s), targetPort and defaults.
    existing = {
        "spec": {
            **desired["spec"],
            "clusterIP": "10.96.0.1",
            "clusterIPs": ["10.96.0.1"],
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}],
        }
    }
    assert derived_service_change(existing, desired) == "none"
    moved = {
        "spec": {**existing["spec"], "ports": [{"name": "http", "protocol": "TCP", "port": 81}]}
    }
    assert derived_service_change(moved, desired) == "update"
    assert (
        derived_service_change(
            {"spec": {**existing["spec"], "sessionAffinity": "ClientIP"}}, desired
        )
        == "update"
    )
    assert (
        derived_service_change({"spec": {**existing["spec"], "clusterIP": "None"}}, desired)
        == "replace"
    )
    assert (
        derived_service_change({"spec": {**existing["spec"], "ipFamilies": ["IPv6"]}}, desired)
        == "replace"
    )
    # A dual-stack wish on a single-stack cluster holds the first family only: fine.
    dual = resolve_import([exported("c1", ipFamilies=["IPv4", "IPv6"])])
    assert dual is not None
    wanted = derived_service(dual, "u", managed_by="m")
    assert (
        derived_service_change({"spec": {**wanted["spec"], "ipFamilies": ["IPv4"]}}, wanted)
        == "none"
    )
    assert derived_service_change({"spec": "junk"}, wanted) == "update"


# -- ServiceExport conditions ------------------------------------------------------------------


def by_type(conditions: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in conditions}


def test_conditions_of_an_invalid_export() -> None:
    invalid = read_export("c1", export_obj(), service_obj(type="ExternalName"))
    assert isinstance(invalid, InvalidExport)
    assert by_type(export_conditions(invalid, None, imported=False)) == {
        "Valid": ("False", "InvalidServiceType"),
        "Ready": ("False", "Failed"),
    }
    missing = read_export("c1", export_obj(), None)
    assert isinstance(missing, InvalidExport)
    assert by_type(export_conditions(missing, None, imported=False))["Valid"] == (
        "False",
        "NoService",
    )


def test_conditions_pending_ready_failed() -> None:
    export = exported("c1")
    resolution = resolve_import([export])
    assert by_type(export_conditions(export, None, imported=False)) == {
        "Valid": ("True", "Valid"),
        "Ready": ("False", "Pending"),
    }
    assert by_type(export_conditions(export, resolution, imported=True)) == {
        "Valid": ("True", "Valid"),
        "Ready": ("True", "Ready"),
        "Conflict": ("False", "NoConflicts"),
    }
    failed = export_conditions(export, resolution, imported=True, failure="forbidden")
    assert by_type(failed)["Ready"] == ("False", "Failed")
    assert [c["message"] for c in failed if c["type"] == "Ready"] == ["forbidden"]


def test_conflict_is_set_on_every_exporting_cluster() -> None:
    first = exported("c1", "2026-01-01T00:00:00Z")
    second = exported("c2", "2026-01-02T00:00:00Z", headless=True)
    # Each cluster resolves from the exports in the order it happened to see them.
    seen_by_c1 = resolve_import([first, second])
    seen_by_c2 = resolve_import([second, first])
    assert seen_by_c1 == seen_by_c2
    c1 = export_conditions(first, seen_by_c1, imported=True)
    c2 = export_conditions(second, seen_by_c2, imported=True)
    assert by_type(c1)["Conflict"] == by_type(c2)["Conflict"] == ("True", "TypeConflict")
    assert [c for c in c1 if c["type"] == "Conflict"] == [c for c in c2 if c["type"] == "Conflict"]


def test_merge_conditions_keeps_transition_times() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    t1 = datetime(2026, 1, 2, tzinfo=UTC)
    export = exported("c1")
    pending = export_conditions(export, None, imported=False)
    first = merge_conditions(None, pending, now=t0, generation=1)
    assert all(c["lastTransitionTime"] == "2026-01-01T00:00:00Z" for c in first)
    assert all(c["observedGeneration"] == 1 for c in first)
    # Nothing changed: the same list, so no write.
    assert merge_conditions(first, pending, now=t1, generation=1) == first
    ready = export_conditions(export, resolve_import([export]), imported=True)
    second = merge_conditions(
        [*first, {"type": "Other", "status": "True"}, "junk"], ready, now=t1, generation=1
    )
    times = {c["type"]: c["lastTransitionTime"] for c in second if c["type"] != "Other"}
    assert times == {
        "Valid": "2026-01-01T00:00:00Z",
        "Ready": "2026-01-02T00:00:00Z",
        "Conflict": "2026-01-02T00:00:00Z",
    }
    assert {"type": "Other", "status": "True"} in second
    # Ours that are no longer desired go (an export turned invalid loses its Conflict).
    invalid = export_conditions(
        InvalidExport("c1", NS, "web", "NoService", "gone"), None, imported=False
    )
    third = merge_conditions(second, invalid, now=t1)
    assert sorted(c["type"] for c in third) == ["Other", "Ready", "Valid"]
    # A naive "now" is UTC.
    assert (
        merge_conditions(None, pending, now=datetime(2026, 3, 1))[0]["lastTransitionTime"]
        == "2026-03-01T00:00:00Z"
    )


# -- properties --------------------------------------------------------------------------------

PORTS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["", "http", "https", "grpc"]),
            "port": st.sampled_from([80, 81, 443]),
            "protocol": st.sampled_from(["TCP", "UDP"]),
        },
        optional={"appProtocol": st.sampled_from(["http", "h2c"])},
    ),
    max_size=3,
)


@st.composite
def exports(draw: st.DrawFn) -> list[ExportedService]:
    clusters = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5))
    result = []
    for cluster in clusters:
        raw_ports = draw(PORTS)
        # A Service's own ports are valid: unique names, unique protocol/port, named when > 1.
        ports: list[dict[str, Any]] = []
        for port in raw_ports:
            if any(
                p["name"] == port["name"]
                or (p["port"], p["protocol"]) == (port["port"], port["protocol"])
                for p in ports
            ):
                continue
            ports.append(port)
        if len(ports) > 1:
            ports = [p for p in ports if p["name"]]
        day = draw(st.integers(1, 3))
        result.append(
            exported(
                cluster,
                f"2026-01-0{day}T00:00:00Z",
                ports=ports,
                headless=draw(st.booleans()),
                sessionAffinity=draw(st.sampled_from(["None", "ClientIP"])),
                ipFamilies=draw(st.sampled_from([["IPv4"], ["IPv6"], ["IPv4", "IPv6"]])),
                labels=draw(st.sampled_from([None, {"a": "1"}, {"a": "2"}])),
            )
        )
    return result


@settings(max_examples=300, deadline=None)
@given(exports(), st.randoms(use_true_random=False))
def test_every_cluster_computes_the_same_result(exports: list[ExportedService], rnd: Any) -> None:
    reference = resolve_import(exports)
    shuffled = list(exports)
    rnd.shuffle(shuffled)
    assert resolve_import(shuffled) == reference
    assert reference is not None
    # And so the same Conflict condition on every exporting cluster.
    conflicts = {
        c["reason"]
        for e in exports
        for c in export_conditions(e, resolve_import(shuffled), imported=True)
        if c["type"] == "Conflict"
    }
    assert conflicts == {reference.conflict_reason}
    assert service_import(reference) == service_import(resolve_import(list(reversed(exports))))  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(exports())
def test_merged_ports_are_a_valid_service_port_list(exports: list[ExportedService]) -> None:
    resolution = resolve_import(exports)
    assert resolution is not None
    names = [p.name for p in resolution.ports]
    assert len(set(names)) == len(names)
    assert len({(p.protocol, p.port) for p in resolution.ports}) == len(resolution.ports)
    assert len(names) <= 1 or all(names)
    winners = {
        e.cluster: e for e in sorted(exports, key=lambda e: (e.order_key, repr(e)), reverse=True)
    }
    oldest = min(winners.values(), key=lambda e: e.order_key)
    # The oldest export's ports are all in; every port comes from some export.
    assert set(oldest.ports) <= set(resolution.ports)
    every = {p for e in winners.values() for p in e.ports}
    assert set(resolution.ports) <= every
    # A cluster serves only names it has, with the merged protocol and number.
    merged = {p.name: p for p in resolution.ports}
    for cluster, served in resolution.cluster_ports.items():
        own = {p.name: p for p in winners[cluster].ports}
        for name in served:
            assert (own[name].protocol, own[name].port) == (
                merged[name].protocol,
                merged[name].port,
            )
    # PortConflict exactly when the port lists differ.
    distinct = {frozenset(e.ports) for e in winners.values()}
    assert ("PortConflict" in resolution.conflicts) == (len(distinct) > 1)
    assert list(resolution.conflicts) == sorted(resolution.conflicts, key=CONFLICT_REASONS.index)
