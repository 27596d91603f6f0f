"""``endpointslice-operator migrate``: which Endpoints object is kube-controller-manager's, when
our slices cover its slices, the namespace it defaults to, and its usage errors (the migration
itself runs against real control planes: tests/realcluster/test_migration.py, and through a
real kube-proxy: tests/dataplane/test_migration_traffic.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from endpointslice_operator.cli import main as cli_main
from endpointslice_operator.commands.migrate import (
    _covers,
    default_namespace,
    is_kcm_endpoints,
    selector_text,
)


def endpoints_metadata(labels: dict[str, str] | None, *managers: str) -> dict[str, Any]:
    return {"labels": labels, "managedFields": [{"manager": m} for m in managers]}


def test_kube_controller_managers_endpoints_by_label_or_by_field_managers() -> None:
    label = {"endpoints.kubernetes.io/managed-by": "endpoint-controller"}
    assert is_kcm_endpoints(endpoints_metadata(label, "kube-controller-manager"))
    # v1.33+: the label decides, whoever else wrote fields
    assert is_kcm_endpoints(endpoints_metadata(label, "kube-controller-manager", "kubectl-edit"))
    other = {"endpoints.kubernetes.io/managed-by": "someone-else"}
    assert not is_kcm_endpoints(endpoints_metadata(other, "kube-controller-manager"))
    # before v1.33 (no label): only kube-controller-manager wrote it
    assert is_kcm_endpoints(endpoints_metadata(None, "kube-controller-manager"))
    assert is_kcm_endpoints(endpoints_metadata({"app": "web"}, "kube-controller-manager"))
    assert not is_kcm_endpoints(endpoints_metadata(None, "kube-controller-manager", "kubectl"))
    assert not is_kcm_endpoints(endpoints_metadata(None, "kubectl-create"))
    assert not is_kcm_endpoints(endpoints_metadata(None))  # no field managers: unknown


def a_slice(ports: list[int], *endpoints: tuple[str, bool]) -> dict[str, Any]:
    return {
        "ports": [{"name": "http", "port": p, "protocol": "TCP"} for p in ports],
        "endpoints": [{"addresses": [ip], "conditions": {"ready": r}} for ip, r in endpoints],
    }


def test_our_slices_cover_theirs_with_the_same_ports_and_readiness() -> None:
    theirs = [a_slice([8080], ("10.0.0.1", True), ("10.0.0.2", False))]
    assert _covers([a_slice([8080], ("10.0.0.1", True), ("10.0.0.2", False))], theirs)
    assert _covers([a_slice([8080], ("10.0.0.1", True), ("10.0.0.2", True))], theirs)
    assert not _covers([a_slice([8080], ("10.0.0.1", True))], theirs)
    assert not _covers([a_slice([8080], ("10.0.0.1", False), ("10.0.0.2", False))], theirs)
    assert not _covers([a_slice([9090], ("10.0.0.1", True), ("10.0.0.2", False))], theirs)
    assert not _covers([], [])  # no slice of ours yet
    assert _covers([a_slice([])], [a_slice([])])  # a Service without endpoints


def test_selector_text_is_the_annotation_syntax() -> None:
    assert selector_text({"tier": "web", "app": "shop"}) == "app=shop,tier=web"


def test_namespace_defaults_to_the_kubeconfig_context(tmp_path: Path) -> None:
    config: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "shop"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert default_namespace(str(path)) == "shop"
    del config["contexts"][0]["context"]["namespace"]
    path.write_text(yaml.safe_dump(config))
    assert default_namespace(str(path)) == "default"
    assert default_namespace(str(tmp_path / "missing")) == "default"


def test_usage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["migrate"])
    assert exit_info.value.code == 2
    assert "SERVICE" in capsys.readouterr().err
    assert cli_main(["--help"]) == 0
    assert "  migrate " in capsys.readouterr().out
    missing = tmp_path / "nowhere"
    assert cli_main(["migrate", "web", "--kubeconfig", str(missing)]) == 2
    assert "no such file" in capsys.readouterr().err
