"""``helm uninstall`` with ``cleanupOnUninstall`` when the hook's Job cannot run, with a real
helm on a control plane whose kube-controller-manager runs the job controller and which has no
node: the Job's pod is never scheduled.

Before, Helm waited out its whole ``--timeout``, exited 1, and left the hook's ServiceAccount,
ClusterRole, ClusterRoleBinding, Role, RoleBinding and Job behind. Now the Job fails after
``cleanupOnUninstall.activeDeadlineSeconds``, ``helm uninstall`` exits 1 naming it well before
its timeout, and nothing of the hook is left.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from endpointslice_operator.testing.controlplane import ControlPlane
from tests.e2e.test_readme_commands import bash
from tests.readme_commands import ROOT
from tests.realcluster.conftest import assets_dir
from tests.realcluster.helm import helm_env, helm_folder
from tests.realcluster.kube import Kube

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

HOOK = "eso-endpointslice-operator-cleanup"
DEADLINE = 20
HELM_TIMEOUT = 240


@contextmanager
def plane_with_jobs() -> Iterator[ControlPlane]:
    """A control plane whose kube-controller-manager also runs the job controller (the list
    of ``--controllers`` is appended to), and no node; stopped by PID afterwards."""
    assets = assets_dir()
    if assets is None:
        pytest.skip("needs KUBEBUILDER_ASSETS: a control plane is started")
    plane = ControlPlane(
        assets=assets,
        workdir=Path(tempfile.mkdtemp(prefix="eso-hook-")),
        kcm_args=("--controllers=job",),
    )
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
        shutil.rmtree(plane.workdir, ignore_errors=True)


async def hook_objects(kube: Kube) -> list[str]:
    """What is left of the uninstall hook."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    paths = {
        "ServiceAccount": f"/api/v1/namespaces/eso/serviceaccounts/{HOOK}",
        "ClusterRole": f"{rbac}/clusterroles/{HOOK}",
        "ClusterRoleBinding": f"{rbac}/clusterrolebindings/{HOOK}",
        "Role": f"{rbac}/namespaces/eso/roles/{HOOK}-lease",
        "RoleBinding": f"{rbac}/namespaces/eso/rolebindings/{HOOK}-lease",
        "Job": f"/apis/batch/v1/namespaces/eso/jobs/{HOOK}",
    }
    left = []
    for kind, path in paths.items():
        status, _ = await kube.status_of("GET", path)
        if status != 404:
            left.append(kind)
    return left


async def test_a_hook_job_that_cannot_run_fails_in_bounded_time_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "bin").mkdir()
    helm_bin = helm_folder(tmp_path / "bin")
    with plane_with_jobs() as plane:
        env = helm_env(helm_bin, tmp_path / "helm", plane.kubeconfig)
        code, out, err = await bash(
            "helm install eso ./chart -n eso --create-namespace "
            "--set cleanupOnUninstall.enabled=true "
            f"--set cleanupOnUninstall.activeDeadlineSeconds={DEADLINE} "
            "--set multicluster.enabled=true",
            cwd=ROOT,
            env=env,
        )
        assert code == 0, f"{out}\n{err}"
        assert "If its Job cannot run" in out
        assert "endpointslice-operator cleanup --managed-by endpointslice-operator.io" in out

        started = time.monotonic()
        code, out, err = await bash(
            f"helm uninstall eso -n eso --timeout {HELM_TIMEOUT}s", cwd=ROOT, env=env
        )
        took = time.monotonic() - started
        print(f"helm uninstall with a hook Job that cannot run: exit {code} after {took:.0f} s")
        assert code == 1, f"{out}\n{err}"
        assert f"{HOOK}" in err and "DeadlineExceeded" in err, err
        # The Job's deadline, not Helm's timeout, ended it.
        assert took < HELM_TIMEOUT / 2, took
        async with await Kube.load(plane.kubeconfig) as kube:
            assert await hook_objects(kube) == []
        # The release is gone all the same: a new install goes through.
        code, out, err = await bash("helm list -n eso -q", cwd=ROOT, env=env)
        assert code == 0 and out.strip() == "", f"{out}\n{err}"
