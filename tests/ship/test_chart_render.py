"""The chart renders what each value set asks for (Helm's own engine, via helm-python-sdk)."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from scripts.render_manifests import CHART_DIR, render_notes, render_objects
from tests.ship.conftest import rendered
from tests.ship.values import container, env_of, of_kind, one

pytestmark = pytest.mark.timeout(120)


def test_defaults_render_the_expected_objects() -> None:
    kinds = sorted(obj["kind"] for obj in rendered("defaults"))
    assert kinds == [
        "ClusterRole",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    for obj in rendered("defaults"):
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "endpointslice-operator"
        assert labels["app.kubernetes.io/instance"] == "eso"
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}:
            assert obj["metadata"]["namespace"] == "operators"


def test_every_object_name_is_unique_per_kind_and_namespace(objects: list[dict[str, Any]]) -> None:
    keys = [
        (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]) for obj in objects
    ]
    assert len(keys) == len(set(keys))


def test_default_deployment() -> None:
    objects = rendered("defaults")
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]
    assert (
        deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    )
    assert pod["spec"]["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    main = container(objects)
    assert main["image"] == "localhost/endpointslice-operator:0.1.0"
    # The image's ENTRYPOINT is `endpointslice-operator run`; no args unless extraArgs.
    assert "command" not in main and "args" not in main
    assert main["ports"] == [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert main["resources"]["requests"] and main["resources"]["limits"]["memory"]
    downward = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in main["env"] if "valueFrom" in e
    }
    assert downward == {"POD_NAMESPACE": "metadata.namespace"}


def test_metrics_service_targets_the_metrics_port() -> None:
    objects = rendered("defaults")
    service = one(objects, "Service")
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}
    ]


@pytest.mark.parametrize(
    ("value_set", "replicas", "leader_election"),
    [
        ("defaults", 1, "true"),
        ("single-no-leader-election", 1, "false"),
        ("replicas-2", 2, "true"),
        ("everything", 3, "true"),
    ],
)
def test_leader_election_is_forced_on_with_several_replicas(
    value_set: str, replicas: int, leader_election: str
) -> None:
    objects = rendered(value_set)
    assert one(objects, "Deployment")["spec"]["replicas"] == replicas
    assert env_of(objects)["ENDPOINTSLICE_OPERATOR_LEADER_ELECTION"] == leader_election
    lease_roles = [
        role
        for role in of_kind(objects, "Role")
        if any("leases" in rule["resources"] for rule in role["rules"])
    ]
    assert len(lease_roles) == (1 if leader_election == "true" else 0)


def test_notes_say_when_leader_election_was_forced_on() -> None:
    assert "always elect a leader" in render_notes(
        {"replicaCount": 2, "leaderElection": {"enabled": False}}
    )
    assert "always elect a leader" not in render_notes({"replicaCount": 2})


def test_notes_tell_how_to_opt_in() -> None:
    notes = render_notes({"annotationPrefix": "esop.example.com", "managedBy": "esop"})
    assert "kubectl annotate service <name> esop.example.com/enabled=true" in notes
    assert "service.kubernetes.io/endpoint-controller-name=esop" in notes
    assert "esop.example.com/selector=" in notes


def test_namespaced_mode_grants_roles_per_namespace() -> None:
    objects = rendered("namespaced")
    roles = {
        r["metadata"]["namespace"]: r
        for r in of_kind(objects, "Role")
        if r["metadata"]["name"] == "eso-endpointslice-operator"
    }
    assert sorted(roles) == ["team-a", "team-b"]
    bindings = {
        b["metadata"]["namespace"]: b
        for b in of_kind(objects, "RoleBinding")
        if b["metadata"]["name"] == "eso-endpointslice-operator"
    }
    assert sorted(bindings) == ["team-a", "team-b"]
    for binding in bindings.values():
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": "eso-endpointslice-operator",
                "namespace": "operators",
            }
        ]
    # The only cluster-wide grants left are reading Nodes, and listing Leases (another
    # installation of the same managedBy leading through a Lease elsewhere).
    assert [role["rules"] for role in of_kind(objects, "ClusterRole")] == [
        [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
        [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list"]}],
    ]
    assert env_of(objects)["ENDPOINTSLICE_OPERATOR_NAMESPACES"] == "team-a,team-b"


def test_monitors_and_dashboard() -> None:
    objects = rendered("monitors")
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = one(objects, "Service")

    service_monitor = one(objects, "ServiceMonitor")
    assert service_monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert service_monitor["metadata"]["labels"]["release"] == "prometheus"
    assert (
        service_monitor["spec"]["selector"]["matchLabels"].items()
        <= service["metadata"]["labels"].items()
    )
    assert service_monitor["spec"]["namespaceSelector"] == {"matchNames": ["operators"]}
    (endpoint,) = service_monitor["spec"]["endpoints"]
    assert endpoint == {
        "port": "metrics",
        "path": "/metrics",
        "interval": "30s",
        "scrapeTimeout": "10s",
    }

    pod_monitor = one(objects, "PodMonitor")
    assert pod_monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (pod_endpoint,) = pod_monitor["spec"]["podMetricsEndpoints"]
    assert pod_endpoint["port"] == "metrics" and pod_endpoint["interval"] == "15s"
    assert pod_endpoint["metricRelabelings"] == [{"action": "drop", "regex": "go_.*"}]

    dashboard = one(objects, "ConfigMap")
    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert '"uid": "endpointslice-operator"' in dashboard["data"]["endpointslice-operator.json"]


def test_everything_reaches_the_deployment() -> None:
    objects = rendered("everything")
    pod = one(objects, "Deployment")["spec"]["template"]
    spec = pod["spec"]
    main = container(objects)
    assert main["image"] == "registry.example.com/endpointslice-operator@sha256:" + "ab" * 32
    assert main["args"] == ["--log-level=debug"]
    assert {"name": "PYTHONASYNCIODEBUG", "value": "0"} in main["env"]
    assert {"name": "kubeconfig", "mountPath": "/etc/operator"} in main["volumeMounts"]
    assert {"name": "kubeconfig", "configMap": {"name": "operator-kubeconfig"}} in spec["volumes"]
    assert main["ports"][0]["containerPort"] == 9090
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert "podAntiAffinity" in spec["affinity"]
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["metadata"]["annotations"] == {"example.com/scrape": "true"}
    assert pod["metadata"]["labels"]["tier"] == "control"
    assert all(obj["metadata"]["labels"]["team"] == "platform" for obj in objects)
    assert one(objects, "ServiceAccount")["metadata"]["annotations"] == {
        "example.com/role": "operator"
    }
    assert one(objects, "PodDisruptionBudget")["spec"]["minAvailable"] == 2
    lease_role = next(
        r for r in of_kind(objects, "Role") if r["metadata"]["name"].endswith("-leader-election")
    )
    assert lease_role["metadata"]["namespace"] == "kube-system"
    assert lease_role["rules"][1]["resourceNames"] == ["esop"]


def test_topology_spread_constraints() -> None:
    spec = one(rendered("replicas-2"), "Deployment")["spec"]["template"]["spec"]
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "topology.kubernetes.io/zone"
    assert one(rendered("replicas-2"), "PodDisruptionBudget")["spec"] == {
        "maxUnavailable": 1,
        "selector": {
            "matchLabels": {
                "app.kubernetes.io/name": "endpointslice-operator",
                "app.kubernetes.io/instance": "eso",
            }
        },
    }


def test_network_policy_allows_only_metrics_in_and_api_server_and_dns_out() -> None:
    policy = one(rendered("everything"), "NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["ingress"]
    assert ingress["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    assert ingress["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
    api, dns = policy["egress"]
    assert api["ports"] == [{"port": 6443, "protocol": "TCP"}]
    assert api["to"] == [
        {"ipBlock": {"cidr": "10.96.0.1/32"}},
        {"ipBlock": {"cidr": "172.18.0.0/16"}},
    ]
    assert dns["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]


@pytest.mark.parametrize(
    "values",
    [
        {"workers": 0},
        {"workers": 51},
        {"maxEndpointsPerSlice": 1001},
        {"batchPeriod": "soon"},
        {"logFormat": "xml"},
        {"logLevel": "trace"},
        {"namespaces": ["Team_A"]},
        {"namespaces": ["team-*"]},
        {"managedBy": ""},
        {"qps": 0},
        {"leaderElection": {"enabled": "yes"}},
        {"maxEndpointsPerSlcie": 10},
    ],
    ids=repr,
)
def test_schema_rejects_invalid_values(values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmValuesError):
        render_objects(values)


def test_conflicting_budget_and_monitor_without_service_fail_clearly() -> None:
    with pytest.raises(helm.HelmError, match="only one of minAvailable and maxUnavailable"):
        render_objects({"podDisruptionBudget": {"enabled": True, "minAvailable": 1}})
    with pytest.raises(helm.HelmError, match=r"needs metrics\.service\.enabled"):
        render_objects(
            {"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}}
        )


def test_chart_metadata() -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        metadata = chart.metadata
        assert chart.schema is not None
    assert metadata["apiVersion"] == "v2"
    assert metadata["name"] == "endpointslice-operator"
    from endpointslice_operator import __version__

    assert metadata["appVersion"] == __version__


def test_existing_service_account_and_no_rbac() -> None:
    objects = render_objects(
        {
            "serviceAccount": {"create": False, "name": "platform-operator"},
            "rbac": {"create": False},
        }
    )
    assert sorted(obj["kind"] for obj in objects) == [
        "CustomResourceDefinition",
        "Deployment",
        "Service",
    ]
    spec = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "platform-operator"


def test_pod_monitor_without_the_metrics_service() -> None:
    objects = render_objects(
        {"metrics": {"service": {"enabled": False}, "podMonitor": {"enabled": True}}}
    )
    assert not of_kind(objects, "Service")
    assert one(objects, "PodMonitor")["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def test_names_follow_the_release() -> None:
    assert one(render_objects(name="endpointslice-operator"), "Deployment")["metadata"]["name"] == (
        "endpointslice-operator"
    )
    assert one(render_objects(name="prod"), "Deployment")["metadata"]["name"] == (
        "prod-endpointslice-operator"
    )
    assert (
        one(render_objects({"fullnameOverride": "eso"}), "Deployment")["metadata"]["name"] == "eso"
    )
