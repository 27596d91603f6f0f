"""The value sets the chart is rendered with in these tests, and small helpers over the render."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: Named value sets: the defaults, and the combinations users deploy.
VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "replicas-2": {
        "replicaCount": 2,
        # Asked off, but two replicas force it on.
        "leaderElection": {"enabled": False},
        "podDisruptionBudget": {"enabled": True},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {
                    "matchLabels": {"app.kubernetes.io/name": "endpointslice-operator"}
                },
            }
        ],
    },
    "namespaced": {"namespaces": ["team-a", "team-b"]},
    "resource-claims": {"rbac": {"resourceClaims": True}},
    "no-endpoint-selectors": {"endpointSelectors": {"enabled": False}, "kep6116Labels": False},
    "endpoint-selectors-crd-elsewhere": {"endpointSelectors": {"installCRD": False}},
    "monitors": {
        "metrics": {
            "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
            "podMonitor": {
                "enabled": True,
                "interval": "15s",
                "metricRelabelings": [{"action": "drop", "regex": "go_.*"}],
            },
            "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
        },
        "grafanaDashboard": {"enabled": True, "namespace": "monitoring"},
    },
    "single-no-leader-election": {"leaderElection": {"enabled": False}},
    "write-endpoints": {"writeEndpoints": True},
    "endpoints-annotation-writes": {"endpoints": {"write": True}, "namespaces": ["team-a"]},
    "cleanup-hook": {"cleanupOnUninstall": {"enabled": True}},
    "cleanup-hook-multicluster": {
        "cleanupOnUninstall": {"enabled": True},
        "multicluster": {"enabled": True},
        "leaderElection": {"leaseName": "eso-leader", "leaseNamespace": "kube-system"},
    },
    "multicluster": {
        "multicluster": {
            "enabled": True,
            "peers": [{"secretName": "peer-west"}, {"secretName": "peer-south", "key": "config"}],
            "peerTimeout": "90s",
            "peerReader": {
                "subjects": [
                    {"kind": "User", "name": "mcs-reader", "apiGroup": "rbac.authorization.k8s.io"}
                ]
            },
        }
    },
    "multicluster-namespaced": {
        "multicluster": {"enabled": True, "installCRDs": False, "peerReader": {"create": False}},
        "namespaces": ["team-a"],
    },
    "cleanup-hook-namespaced": {
        "cleanupOnUninstall": {"enabled": True},
        "namespaces": ["team-a", "team-b"],
        "managedBy": "esop.example.com",
    },
    "everything": {
        "replicaCount": 3,
        "image": {
            "repository": "registry.example.com/endpointslice-operator",
            "digest": "sha256:" + "ab" * 32,
        },
        "imagePullSecrets": [{"name": "registry"}],
        "commonLabels": {"team": "platform"},
        "kubeconfig": "/etc/operator/kubeconfig",
        "managedBy": "esop.example.com",
        "annotationPrefix": "esop.example.com",
        "maxEndpointsPerSlice": 500,
        "batchPeriod": "1500ms",
        "workers": 10,
        "qps": 20.5,
        "burst": 200,
        "kubeApiQps": 50.5,
        "kubeApiBurst": 80,
        "apiTimeout": "45s",
        "metrics": {"port": 9090, "host": "::", "service": {"port": 9090}},
        "leaderElection": {"leaseName": "esop", "leaseNamespace": "kube-system"},
        "logFormat": "json",
        "logLevel": "debug",
        "topologyHints": False,
        "preferSameTrafficDistribution": False,
        "extraArgs": ["--log-level=debug"],
        "extraEnv": [{"name": "PYTHONASYNCIODEBUG", "value": "0"}],
        "extraVolumes": [{"name": "kubeconfig", "configMap": {"name": "operator-kubeconfig"}}],
        "extraVolumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/operator"}],
        "serviceAccount": {"annotations": {"example.com/role": "operator"}},
        "podAnnotations": {"example.com/scrape": "true"},
        "podLabels": {"tier": "control"},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {
                                "matchLabels": {"app.kubernetes.io/name": "endpointslice-operator"}
                            },
                        },
                    }
                ]
            }
        },
        "podDisruptionBudget": {"enabled": True, "minAvailable": 2, "maxUnavailable": None},
        "networkPolicy": {
            "enabled": True,
            "metricsFrom": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
                    }
                }
            ],
            "apiServer": {"ports": [6443], "cidrs": ["10.96.0.1/32", "172.18.0.0/16"]},
        },
        "grafanaDashboard": {"enabled": True},
    },
}


#: Settings field -> Helm value path (the README's configuration table lists the same).
HELM_VALUES: dict[str, str] = {
    "kubeconfig": "kubeconfig",
    "managed_by": "managedBy",
    "annotation_prefix": "annotationPrefix",
    "max_endpoints_per_slice": "maxEndpointsPerSlice",
    "batch_period": "batchPeriod",
    "workers": "workers",
    "qps": "qps",
    "burst": "burst",
    "kube_api_qps": "kubeApiQps",
    "kube_api_burst": "kubeApiBurst",
    "api_timeout": "apiTimeout",
    "namespaces": "namespaces",
    "metrics_port": "metrics.port",
    "metrics_host": "metrics.host",
    "leader_election": "leaderElection.enabled",
    "lease_name": "leaderElection.leaseName",
    "lease_namespace": "leaderElection.leaseNamespace",
    "log_format": "logFormat",
    "log_level": "logLevel",
    "topology_hints": "topologyHints",
    "prefer_same_traffic_distribution": "preferSameTrafficDistribution",
    "write_endpoints": "writeEndpoints",
    "max_endpoints_per_subset": "maxEndpointsPerSubset",
    "endpoint_selectors": "endpointSelectors.enabled",
    "kep6116_labels": "kep6116Labels",
    "multicluster": "multicluster.enabled",
    "mcs_peers": "multicluster.peers",
    "mcs_peer_timeout": "multicluster.peerTimeout",
}


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


def env_of(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The container's literal environment variables (downward-API ones left out)."""
    return {e["name"]: e["value"] for e in container(objects)["env"] if "value" in e}


def rules(objects: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (Role or ClusterRole, rule) pair."""
    for obj in objects:
        if obj["kind"] in {"Role", "ClusterRole"}:
            for rule in obj.get("rules") or []:
                yield obj, rule
