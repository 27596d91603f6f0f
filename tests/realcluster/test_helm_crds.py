"""Helm and the CRDs, with a real helm binary on fresh control planes: every documented path
composes.

- CRDs applied with ``kubectl apply -f deploy/crds/`` (docs/multicluster.md and
  docs/endpointselector.md suggest it), then ``helm install``;
- ``helm uninstall`` (the CRDs are kept on purpose), then ``helm install`` under another name;
- ``helm upgrade`` from the previous chart.

Before, the second install failed on Helm's ownership check of a CRD it did not own
(``invalid ownership metadata`` / ``missing key "app.kubernetes.io/managed-by"``). A CRD that
exists and is not the release's is now left as it is, and NOTES says so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_readme_commands import bash
from tests.readme_commands import ROOT
from tests.realcluster.conftest import assets_dir
from tests.realcluster.helm import helm_env, helm_folder
from tests.realcluster.kube import Kube
from tests.realcluster.mcs_clusters import extra_plane

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

#: The chart as it last landed before CRDs were left alone (stop 29's submission).
PREVIOUS_CHART = "069e048"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
NAMES = (
    "endpointselectors.endpointslice-operator.io",
    "serviceexports.multicluster.x-k8s.io",
    "serviceimports.multicluster.x-k8s.io",
    "clusterproperties.about.k8s.io",
)
MULTICLUSTER = "--set multicluster.enabled=true"


@pytest.fixture(scope="module")
def helm_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return helm_folder(tmp_path_factory.mktemp("helm-bin"))


async def run(command: str, env: dict[str, str]) -> str:
    code, out, err = await bash(command, cwd=ROOT, env=env)
    assert code == 0, f"{command}\n{out}\n{err}"
    return out


async def owners(kubeconfig: Path) -> dict[str, str | None]:
    """CRD name -> the Helm release that owns it (None: installed otherwise)."""
    async with await Kube.load(kubeconfig) as kube:
        found = {}
        for name in NAMES:
            crd = await kube.get(f"{CRDS}/{name}")
            annotations = crd["metadata"].get("annotations") or {}
            found[name] = annotations.get("meta.helm.sh/release-name")
        return found


async def test_crds_applied_with_kubectl_then_helm_install(helm_bin: Path, tmp_path: Path) -> None:
    with extra_plane(assets_dir(), "helm-kubectl") as plane:
        env = helm_env(helm_bin, tmp_path / "helm", plane.kubeconfig)
        await run("kubectl apply -f deploy/crds/", env)
        out = await run(f"helm install one ./chart -n one --create-namespace {MULTICLUSTER}", env)
        for name in NAMES:
            assert f"The CRD {name} exists and is not this release's" in out
        assert await owners(plane.kubeconfig) == dict.fromkeys(NAMES)
        await run(f"helm upgrade one ./chart -n one {MULTICLUSTER}", env)
        await run("helm uninstall one -n one", env)
        assert await owners(plane.kubeconfig) == dict.fromkeys(NAMES)


async def test_upgrade_from_the_previous_chart_then_reinstall_under_another_name(
    helm_bin: Path, tmp_path: Path
) -> None:
    previous = tmp_path / "previous"
    previous.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PREVIOUS_CHART, "chart"],
        capture_output=True,
        check=False,
    )
    if archive.returncode != 0:
        pytest.skip(f"no commit {PREVIOUS_CHART} in this clone: {archive.stderr.decode()[-200:]}")
    subprocess.run(["tar", "-x", "-C", str(previous)], input=archive.stdout, check=True)
    with extra_plane(assets_dir(), "helm-reinstall") as plane:
        env = helm_env(helm_bin, tmp_path / "helm", plane.kubeconfig)
        await run(
            f"helm install prev {previous / 'chart'} -n prev --create-namespace {MULTICLUSTER}",
            env,
        )
        assert await owners(plane.kubeconfig) == dict.fromkeys(NAMES, "prev")
        out = await run(f"helm upgrade prev ./chart -n prev {MULTICLUSTER}", env)
        assert "is not this release's" not in out
        assert await owners(plane.kubeconfig) == dict.fromkeys(NAMES, "prev")
        await run("helm uninstall prev -n prev", env)
        # Kept (helm.sh/resource-policy: keep), still carrying the old release's name.
        assert await owners(plane.kubeconfig) == dict.fromkeys(NAMES, "prev")
        out = await run(
            f"helm install other ./chart -n other --create-namespace {MULTICLUSTER}", env
        )
        assert "The CRD serviceexports.multicluster.x-k8s.io exists" in out
        await run("helm uninstall other -n other", env)
