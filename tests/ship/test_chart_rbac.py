"""RBAC is least privilege: no wildcards, nothing on secrets, writes only where needed."""

from __future__ import annotations

from typing import Any

from scripts.render_manifests import render_objects
from tests.ship.conftest import rendered
from tests.ship.values import of_kind, rules

READ = {"get", "list", "watch"}

#: (apiGroup, resource) -> the verbs the operator may use on it; nothing else is granted.
ALLOWED: dict[tuple[str, str], set[str]] = {
    ("", "services"): READ,
    ("", "pods"): READ,
    ("", "nodes"): READ,
    ("", "endpoints"): READ,
    ("discovery.k8s.io", "endpointslices"): READ | {"create", "update", "patch", "delete"},
    ("", "events"): {"create", "patch"},
    ("events.k8s.io", "events"): {"create", "patch"},
    # list: cluster-wide and read-only, to see another operator of the same managedBy leading
    # through a Lease in another namespace (controller/runtime/rivals.py).
    ("coordination.k8s.io", "leases"): {"get", "list", "create", "update"},
    # Only with rbac.resourceClaims (the device-network source).
    ("resource.k8s.io", "resourceclaims"): READ,
    # With endpointSelectors.enabled (the default): read them, patch their status only.
    ("endpointslice-operator.io", "endpointselectors"): READ,
    ("endpointslice-operator.io", "endpointselectors/status"): {"patch"},
}
#: With multicluster.enabled (the import side of Multi-Cluster Services), on top of ALLOWED.
MCS_ALLOWED: dict[tuple[str, str], set[str]] = {
    ("multicluster.x-k8s.io", "serviceexports"): READ,
    ("multicluster.x-k8s.io", "serviceexports/status"): {"get", "patch", "update"},
    ("multicluster.x-k8s.io", "serviceimports"): READ | {"create", "update", "patch", "delete"},
    ("multicluster.x-k8s.io", "serviceimports/status"): {"get", "patch", "update"},
    # derived Services (selectorless, owned by their ServiceImport)
    ("", "services"): READ | {"create", "update", "patch", "delete"},
    ("about.k8s.io", "clusterproperties"): READ,
    ("", "namespaces"): READ,
    # the per-peer Leases
    ("coordination.k8s.io", "leases"): READ | {"create", "update", "delete"},
}
#: The only subresources granted: the status of EndpointSelectors (written through Kopf) and
#: of the MCS objects.
SUBRESOURCES = {"endpointselectors/status", "serviceexports/status", "serviceimports/status"}
#: What the peers' read-only ClusterRole grants.
PEER_READER: dict[tuple[str, str], set[str]] = {
    ("multicluster.x-k8s.io", "serviceexports"): READ,
    ("", "services"): READ,
    ("discovery.k8s.io", "endpointslices"): READ,
    ("about.k8s.io", "clusterproperties"): READ,
}
MCS_SETS = {"multicluster", "multicluster-namespaced"}
WRITES = {
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
    "impersonate",
}


def _grants(objects: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    granted: dict[tuple[str, str], set[str]] = {}
    for _, rule in rules(objects):
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted.setdefault((group, resource), set()).update(rule["verbs"])
    return granted


def test_no_wildcards_and_no_non_resource_urls(objects: list[dict[str, Any]]) -> None:
    for role, rule in rules(objects):
        name = role["metadata"]["name"]
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in rule.get(field, []), f"{name}: wildcard in {field}"
            assert not any("*" in item for item in rule.get(field, [])), name
        assert "nonResourceURLs" not in rule, name
        assert all("/" not in r or r in SUBRESOURCES for r in rule["resources"]), (
            f"{name}: subresource grant {rule['resources']}"
        )


def test_nothing_on_secrets(objects: list[dict[str, Any]]) -> None:
    for _, rule in rules(objects):
        assert "secrets" not in rule["resources"]
        assert "serviceaccounts" not in rule["resources"]


#: Endpoints writes, only with ``writeEndpoints`` or ``endpoints.write``.
ENDPOINTS_WRITES = {"create", "update", "delete"}
ENDPOINTS_WRITING_SETS = {"write-endpoints", "endpoints-annotation-writes"}


def test_only_the_expected_grants(objects: list[dict[str, Any]], value_set: str) -> None:
    allowed = dict(ALLOWED)
    if value_set in ENDPOINTS_WRITING_SETS:
        allowed[("", "endpoints")] = READ | ENDPOINTS_WRITES
    if value_set.startswith("cleanup-hook"):
        # the uninstall hook deletes our Endpoints too, and the released leader-election Lease
        # (test_chart_cleanup_hook.py)
        allowed[("", "endpoints")] = READ | {"delete"}
        allowed[("coordination.k8s.io", "leases")] = allowed[("coordination.k8s.io", "leases")] | {
            "delete"
        }
    if value_set in MCS_SETS or value_set == "cleanup-hook-multicluster":
        allowed.update(MCS_ALLOWED)
    for key, verbs in _grants(objects).items():
        assert key in allowed, f"unexpected grant on {key}"
        assert verbs <= allowed[key], f"{key}: {verbs - allowed[key]} not allowed"


def test_writes_only_endpointslices_events_and_leases(
    objects: list[dict[str, Any]], value_set: str
) -> None:
    written = {resource for (_, resource), verbs in _grants(objects).items() if verbs & WRITES}
    if value_set in ENDPOINTS_WRITING_SETS or value_set.startswith("cleanup-hook"):
        assert "endpoints" in written
        written.discard("endpoints")
    if value_set in MCS_SETS or value_set == "cleanup-hook-multicluster":
        mcs_written = {"services", "serviceimports", "serviceimports/status"}
        assert mcs_written | {"serviceexports/status"} <= written
        written -= mcs_written | {"serviceexports/status"}
    assert written <= {"endpointslices", "events", "leases", "endpointselectors/status"}


def test_endpoints_are_written_only_when_enabled() -> None:
    for value_set in ("defaults", "namespaced", *sorted(ENDPOINTS_WRITING_SETS)):
        verbs = _grants(rendered(value_set))[("", "endpoints")]
        expected = READ | ENDPOINTS_WRITES if value_set in ENDPOINTS_WRITING_SETS else READ
        assert verbs == expected, value_set


def test_everything_the_operator_needs_is_granted() -> None:
    without_claims = {k: v for k, v in ALLOWED.items() if k[1] != "resourceclaims"}
    without_selectors = {
        k: v for k, v in without_claims.items() if not k[1].startswith("endpointselectors")
    }
    assert _grants(rendered("no-endpoint-selectors")) == without_selectors
    for value_set in ("defaults", "namespaced", "replicas-2"):
        granted = _grants(rendered(value_set))
        assert granted == without_claims, value_set
    assert _grants(rendered("resource-claims")) == ALLOWED
    without_leases = {k: v for k, v in without_claims.items() if k[1] != "leases"}
    assert _grants(rendered("single-no-leader-election")) == without_leases


def test_leases_are_limited_to_our_lease_in_one_namespace() -> None:
    objects = rendered("defaults")
    lease_rules = [(role, rule) for role, rule in rules(objects) if "leases" in rule["resources"]]
    # Cluster-wide, only reading: the Leases of another installation of the same managedBy.
    cluster_wide = [(role, rule) for role, rule in lease_rules if role["kind"] == "ClusterRole"]
    assert [(role["metadata"]["name"], rule["verbs"]) for role, rule in cluster_wide] == [
        ("eso-endpointslice-operator-leases", ["list"])
    ]
    lease_rules = [(role, rule) for role, rule in lease_rules if role["kind"] != "ClusterRole"]
    assert {role["kind"] for role, _ in lease_rules} == {"Role"}
    assert {role["metadata"]["namespace"] for role, _ in lease_rules} == {"operators"}
    for _, rule in lease_rules:
        if rule["verbs"] != ["create"]:  # creation cannot be limited by name
            assert rule["resourceNames"] == ["endpointslice-operator"]


def test_cluster_wide_writes_only_in_cluster_mode() -> None:
    for value_set in ("defaults", "namespaced", "cleanup-hook", "cleanup-hook-namespaced"):
        cluster_rules = [
            rule for role, rule in rules(rendered(value_set)) if role["kind"] == "ClusterRole"
        ]
        cluster_writes = {v for rule in cluster_rules for v in rule["verbs"]} & WRITES
        assert bool(cluster_writes) == ("namespaced" not in value_set)


def test_bindings_reference_rendered_roles_and_our_service_account(
    objects: list[dict[str, Any]],
) -> None:
    roles = {
        (r["kind"], r["metadata"].get("namespace"), r["metadata"]["name"])
        for r in objects
        if r["kind"] in {"Role", "ClusterRole"}
    }
    accounts = [
        {"kind": "ServiceAccount", "name": a["metadata"]["name"], "namespace": "operators"}
        for a in of_kind(objects, "ServiceAccount")
        if a["metadata"]["namespace"] == "operators"
    ]
    bindings = of_kind(objects, "RoleBinding") + of_kind(objects, "ClusterRoleBinding")
    assert bindings
    for binding in bindings:
        if binding["roleRef"]["name"].endswith("-mcs-peer-reader"):
            continue  # bound to the peers' identities (test_the_peer_reader_is_read_only)
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace") if ref["kind"] == "Role" else None
        assert (ref["kind"], namespace, ref["name"]) in roles
        # the operator's account, or the cleanup hook's for the hook's own role
        (subject,) = binding["subjects"]
        assert subject in accounts
        hook_role = ref["name"].endswith(("-cleanup", "-cleanup-lease"))
        assert subject["name"].endswith("-cleanup") == hook_role


def test_multicluster_grants_only_when_enabled() -> None:
    granted = _grants(rendered("multicluster"))
    without_claims = {k: v for k, v in ALLOWED.items() if k[1] != "resourceclaims"}
    expected = {key: set(verbs) for key, verbs in without_claims.items()}
    for key, verbs in MCS_ALLOWED.items():
        expected[key] = expected.get(key, set()) | verbs
    assert granted == expected
    for value_set in ("defaults", "namespaced", "everything"):
        others = _grants(rendered(value_set))
        assert others[("", "services")] == READ
        assert not any(key in others for key in MCS_ALLOWED if key[1] not in {"services", "leases"})


def test_the_peer_reader_is_read_only() -> None:
    objects = rendered("multicluster")
    (reader,) = [
        r
        for r in of_kind(objects, "ClusterRole")
        if r["metadata"]["name"].endswith("-mcs-peer-reader")
    ]
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in reader["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    assert grants == PEER_READER
    (binding,) = [
        b
        for b in of_kind(objects, "ClusterRoleBinding")
        if b["roleRef"]["name"] == reader["metadata"]["name"]
    ]
    assert binding["subjects"] == [
        {"kind": "User", "name": "mcs-reader", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    # Not rendered when asked not to; no binding without subjects.
    names = {o["metadata"]["name"] for o in rendered("multicluster-namespaced")}
    assert not any(name.endswith("-mcs-peer-reader") for name in names)
    unbound = render_objects({"multicluster": {"enabled": True}}, name="eso", namespace="operators")
    assert [r["metadata"]["name"] for r in of_kind(unbound, "ClusterRole")].count(
        "eso-endpointslice-operator-mcs-peer-reader"
    ) == 1
    assert not [
        b
        for b in of_kind(unbound, "ClusterRoleBinding")
        if b["roleRef"]["name"] == "eso-endpointslice-operator-mcs-peer-reader"
    ]


def test_multicluster_namespaced_mode_keeps_cluster_scoped_reads_in_the_cluster_role() -> None:
    objects = rendered("multicluster-namespaced")
    (role,) = [
        r
        for r in of_kind(objects, "Role")
        if r["metadata"]["namespace"] == "team-a"
        and r["metadata"]["name"] == "eso-endpointslice-operator"
    ]
    resources = {res for rule in role["rules"] for res in rule["resources"]}
    assert {
        "serviceexports",
        "serviceimports",
        "serviceexports/status",
        "serviceimports/status",
    } <= resources
    assert "clusterproperties" not in resources and "namespaces" not in resources
    (nodes,) = [
        r
        for r in of_kind(objects, "ClusterRole")
        if r["metadata"]["name"] == "eso-endpointslice-operator-nodes"
    ]
    cluster_resources = {res for rule in nodes["rules"] for res in rule["resources"]}
    assert cluster_resources == {"nodes", "clusterproperties", "namespaces"}
    assert not ({v for rule in nodes["rules"] for v in rule["verbs"]} & WRITES)
