"""The Multi-Cluster Services CRDs (deploy/crds/) and what the chart renders for multicluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from scripts.render_manifests import CRD_SOURCE_DIR, render_objects
from tests.ship.conftest import rendered
from tests.ship.values import container, of_kind, one

MCS_GROUPS = ("multicluster.x-k8s.io", "about.k8s.io")


def _crds(groups: tuple[str, ...] = MCS_GROUPS) -> dict[str, dict[str, Any]]:
    """The CRDs of deploy/crds/ in ``groups`` (those of Multi-Cluster Services by default)."""
    return {
        path.name: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted(CRD_SOURCE_DIR.glob("*.yaml"))
        if path.name.removesuffix(".yaml").endswith(groups)
    }


def _mcs_crds(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        crd
        for crd in of_kind(objects, "CustomResourceDefinition")
        if crd["spec"]["group"] in MCS_GROUPS
    ]


def test_one_file_per_crd_named_after_it() -> None:
    crds = _crds(groups=(*MCS_GROUPS, "endpointslice-operator.io"))
    assert sorted(crds) == [
        "clusterproperties.about.k8s.io.yaml",
        "endpointselectors.endpointslice-operator.io.yaml",
        "serviceexports.multicluster.x-k8s.io.yaml",
        "serviceimports.multicluster.x-k8s.io.yaml",
    ]
    for name, crd in crds.items():
        assert crd["kind"] == "CustomResourceDefinition"
        assert f"{crd['metadata']['name']}.yaml" == name
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
        kubernetes_validate.validate(crd, "1.33", strict=True)


def test_versions_and_schemas() -> None:
    crds = _crds()
    for name in ("serviceexports", "serviceimports"):
        crd = crds[f"{name}.multicluster.x-k8s.io.yaml"]
        assert crd["spec"]["scope"] == "Namespaced"
        versions = {v["name"]: v for v in crd["spec"]["versions"]}
        assert {n: (v["served"], v["storage"]) for n, v in versions.items()} == {
            "v1alpha1": (True, False),
            "v1beta1": (True, True),
        }
        assert versions["v1alpha1"]["schema"] == versions["v1beta1"]["schema"]
        assert all(v["subresources"] == {"status": {}} for v in versions.values())
        assert crd["metadata"]["labels"]["multicluster.x-k8s.io/release-version"] == "v0.5.0"
    spec = crds["serviceimports.multicluster.x-k8s.io.yaml"]["spec"]["versions"][1]["schema"]
    props = spec["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert props["type"]["enum"] == ["ClusterSetIP", "Headless"]
    assert props["ips"]["maxItems"] == 2 and props["ipFamilies"]["maxItems"] == 2
    assert set(props) == {
        "ports",
        "ips",
        "type",
        "sessionAffinity",
        "sessionAffinityConfig",
        "ipFamilies",
        "internalTrafficPolicy",
        "trafficDistribution",
    }
    prop = crds["clusterproperties.about.k8s.io.yaml"]
    assert prop["spec"]["group"] == "about.k8s.io"
    assert prop["spec"]["scope"] == "Cluster"
    assert prop["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("https://")


def test_the_chart_installs_the_crds_only_when_asked() -> None:
    assert not _mcs_crds(rendered("defaults"))
    assert not _mcs_crds(rendered("multicluster-namespaced"))
    installed = _mcs_crds(rendered("multicluster"))
    assert sorted(installed, key=lambda c: c["metadata"]["name"]) == list(_crds().values())
    for crd in installed:
        assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    off = render_objects({"multicluster": {"enabled": False, "installCRDs": True}})
    assert not _mcs_crds(off)


def test_peer_secrets_are_mounted_read_only_and_passed() -> None:
    objects = rendered("multicluster")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["mcs-peer-0"]["secret"] == {
        "secretName": "peer-west",
        "items": [{"key": "kubeconfig", "path": "kubeconfig"}],
    }
    assert volumes["mcs-peer-1"]["secret"]["items"] == [{"key": "config", "path": "config"}]
    mounts = {m["name"]: m for m in container(objects)["volumeMounts"]}
    root = Path("/etc/endpointslice-operator/mcs-peers")
    assert mounts["mcs-peer-0"] == {
        "name": "mcs-peer-0",
        "mountPath": str(root / "peer-west"),
        "readOnly": True,
    }
    env = {e["name"]: e.get("value") for e in container(objects)["env"]}
    assert env["ENDPOINTSLICE_OPERATOR_MULTICLUSTER"] == "true"
    assert env["ENDPOINTSLICE_OPERATOR_MCS_PEERS"] == (
        f"{root / 'peer-west' / 'kubeconfig'},{root / 'peer-south' / 'config'}"
    )
    assert env["ENDPOINTSLICE_OPERATOR_MCS_PEER_TIMEOUT"] == "90s"
    # Off: no peer volumes even if peers are listed.
    off = render_objects({"multicluster": {"enabled": False, "peers": [{"secretName": "x"}]}})
    names = {v["name"] for v in one(off, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    assert names == {"tmp"}
    assert {e["name"]: e.get("value") for e in container(off)["env"]}[
        "ENDPOINTSLICE_OPERATOR_MCS_PEERS"
    ] == ""
