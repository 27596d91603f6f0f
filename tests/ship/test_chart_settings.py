"""Every operator setting is a Helm value, and what the chart renders is what the operator reads.

The Deployment's environment, rendered from the values, is fed to the operator's own
``load_settings``: the resulting :class:`Settings` must hold the values given to Helm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.settings import ENV_PREFIX, SETTINGS_TABLE, Settings, load_settings
from scripts.render_manifests import render_objects
from tests.ship.conftest import rendered
from tests.ship.values import HELM_VALUES, env_of


def _nested(path: str, value: Any) -> dict[str, Any]:
    head, _, rest = path.partition(".")
    return {head: _nested(rest, value) if rest else value}


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
    return into


def test_every_setting_has_a_helm_value() -> None:
    assert set(HELM_VALUES) == {spec.field for spec in SETTINGS_TABLE}


def test_the_deployment_sets_exactly_the_settings_variables() -> None:
    env = env_of(rendered("everything"))
    ours = {name for name in env if name.startswith(ENV_PREFIX)}
    assert ours == {spec.env for spec in SETTINGS_TABLE}


def test_defaults_render_the_operator_defaults() -> None:
    env = env_of(rendered("defaults"))
    settings = load_settings([], environ=env | {"POD_NAMESPACE": "operators"})
    defaults = Settings.model_construct()
    for spec in SETTINGS_TABLE:
        if spec.field == "lease_namespace":
            # The chart pins the Lease to the release namespace, which is where the operator
            # would look anyway ($POD_NAMESPACE).
            assert settings.lease_namespace == "operators"
        else:
            assert getattr(settings, spec.field) == getattr(defaults, spec.field), spec.field


def test_non_default_values_reach_the_operator(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n", encoding="utf-8")
    given: dict[str, Any] = {
        "kubeconfig": str(kubeconfig),
        "managed_by": "esop.example.com",
        "annotation_prefix": "esop.example.com",
        "max_endpoints_per_slice": 500,
        "batch_period": "1500ms",
        "workers": 10,
        "qps": 20.5,
        "burst": 200,
        "kube_api_qps": 50.5,
        "kube_api_burst": 80,
        "api_timeout": "45s",
        "namespaces": ["team-a", "team-b"],
        "metrics_port": 9090,
        "metrics_host": "::",
        "leader_election": False,
        "lease_name": "esop",
        "lease_namespace": "kube-system",
        "log_format": "json",
        "log_level": "debug",
        "topology_hints": False,
        "prefer_same_traffic_distribution": False,
        "write_endpoints": True,
        "max_endpoints_per_subset": 500,
        "endpoint_selectors": False,
        "kep6116_labels": False,
        "multicluster": True,
        # The chart mounts each peer's Secret and passes the paths.
        "mcs_peers": [{"secretName": "peer-east"}, {"secretName": "peer-west", "key": "config"}],
        "mcs_peer_timeout": "90s",
    }
    peers = [tmp_path / "peer-east" / "kubeconfig", tmp_path / "peer-west" / "config"]
    for peer in peers:
        peer.parent.mkdir()
        peer.write_text("apiVersion: v1\nkind: Config\n", encoding="utf-8")
    assert set(given) == set(HELM_VALUES)
    values: dict[str, Any] = {"multicluster": {"peersMountPath": str(tmp_path)}}
    for field, value in given.items():
        _merge(values, _nested(HELM_VALUES[field], value))
    settings = load_settings([], environ=env_of(render_objects(values)))
    expected = given | {
        "kubeconfig": kubeconfig,
        "batch_period": 1.5,
        "api_timeout": 45.0,
        "namespaces": ("team-a", "team-b"),
        "mcs_peers": tuple(peers),
        "mcs_peer_timeout": 90.0,
    }
    for field, value in expected.items():
        assert getattr(settings, field) == value, field


@pytest.mark.parametrize("replicas", [1, 2])
def test_rendered_environment_is_valid_for_the_operator(replicas: int) -> None:
    env = env_of(render_objects({"replicaCount": replicas}))
    assert load_settings([], environ=env).leader_election is True


@pytest.mark.parametrize(
    ("batch_period", "seconds"),
    [("0s", 0.0), ("500ms", 0.5), ("1m30s", 90.0), ("1.5", 1.5), (2, 2.0)],
)
def test_batch_period_forms(batch_period: str | int, seconds: float) -> None:
    env = env_of(render_objects({"batchPeriod": batch_period}))
    assert load_settings([], environ=env).batch_period == seconds
