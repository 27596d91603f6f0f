"""The optional uninstall hook (cleanupOnUninstall): off by default; when on, a post-delete Job
that runs `endpointslice-operator cleanup` with nothing more than list/delete on EndpointSlices."""

from __future__ import annotations

import yaml

from scripts.render_manifests import render_documents
from tests.ship.conftest import rendered
from tests.ship.values import VALUE_SETS, of_kind, one, rules

HOOK = "helm.sh/hook"


def test_off_by_default() -> None:
    assert not of_kind(rendered("defaults"), "Job")
    assert not [o for o in rendered("defaults") if HOOK in o["metadata"].get("annotations", {})]


def test_a_post_delete_job_with_its_own_account_and_rbac() -> None:
    objects = rendered("cleanup-hook")
    hooks = [o for o in objects if HOOK in o["metadata"].get("annotations", {})]
    assert sorted(o["kind"] for o in hooks) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Job",
        "Role",
        "RoleBinding",
        "ServiceAccount",
    ]
    # One hook (a List): created together, and deleted together whether the Job succeeds or
    # fails (Helm applies a hook's delete policy to that hook alone).
    for obj in hooks:
        annotations = obj["metadata"]["annotations"]
        assert annotations[HOOK] == "post-delete"
        assert (
            annotations["helm.sh/hook-delete-policy"]
            == "before-hook-creation,hook-succeeded,hook-failed"
        )
    (hook_list,) = [
        yaml.safe_load(text)
        for template, text in render_documents(
            VALUE_SETS["cleanup-hook"], name="eso", namespace="operators"
        )
        if template.endswith("cleanup-hook.yaml")
    ]
    assert hook_list["kind"] == "List"
    assert [item["kind"] for item in hook_list["items"]] == [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Job",
    ]
    job = one(objects, "Job")
    # Bounded below Helm's default --timeout (300 s): a Job that cannot run fails first.
    assert job["spec"]["activeDeadlineSeconds"] == 180
    assert job["spec"]["backoffLimit"] == 2
    spec = job["spec"]["template"]["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["serviceAccountName"] == "eso-endpointslice-operator-cleanup"
    (main,) = spec["containers"]
    assert main["command"] == ["endpointslice-operator", "cleanup"]
    assert main["args"] == [
        "--managed-by=endpointslice-operator.io",
        "--lease-name=endpointslice-operator",
        "--lease-namespace=operators",
        "--wait-for-operator=50",
    ]
    hook_rules = [rule for role, rule in rules(hooks) if role["kind"] == "ClusterRole"]
    assert hook_rules == [
        {
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "verbs": ["list", "delete"],
        },
        {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["list", "delete"]},
    ]
    # The leader-election Lease, by name, in its namespace: read (to warn while it is held) and
    # deleted once released.
    assert [rule for role, rule in rules(hooks) if role["kind"] == "Role"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["endpointslice-operator"],
            "verbs": ["get", "delete"],
        }
    ]


def test_with_multicluster_it_cleans_the_import_side_too() -> None:
    objects = rendered("cleanup-hook-multicluster")
    hooks = [o for o in objects if HOOK in o["metadata"].get("annotations", {})]
    (main,) = one(objects, "Job")["spec"]["template"]["spec"]["containers"]
    assert main["args"] == [
        "--managed-by=endpointslice-operator.io",
        "--lease-name=eso-leader",
        "--lease-namespace=kube-system",
        "--wait-for-operator=50",
        "--multicluster",
    ]
    cluster_rules = [rule for role, rule in rules(hooks) if role["kind"] == "ClusterRole"]
    assert cluster_rules[2:] == [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "delete"]},
        {
            "apiGroups": ["multicluster.x-k8s.io"],
            "resources": ["serviceimports"],
            "verbs": ["list", "delete"],
        },
    ]
    (lease_role,) = [o for o in hooks if o["kind"] == "Role"]
    assert lease_role["metadata"]["namespace"] == "kube-system"
    assert lease_role["rules"][0]["resourceNames"] == ["eso-leader"]


def test_namespaced_mode_cleans_only_the_watched_namespaces() -> None:
    objects = rendered("cleanup-hook-namespaced")
    (main,) = one(objects, "Job")["spec"]["template"]["spec"]["containers"]
    assert main["args"] == [
        "--managed-by=esop.example.com",
        "--namespace=team-a",
        "--namespace=team-b",
        "--lease-name=endpointslice-operator",
        "--lease-namespace=operators",
        "--wait-for-operator=50",
    ]
    hook_roles = [o for o in objects if o["metadata"]["name"].endswith("-cleanup")]
    assert sorted((o["kind"], o["metadata"].get("namespace")) for o in hook_roles) == [
        ("Job", "operators"),
        ("Role", "team-a"),
        ("Role", "team-b"),
        ("RoleBinding", "team-a"),
        ("RoleBinding", "team-b"),
        ("ServiceAccount", "operators"),
    ]
