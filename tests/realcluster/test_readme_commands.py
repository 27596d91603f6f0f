"""The README's commands that need a real API server, run as written (tests/readme_commands.py)."""

from __future__ import annotations

import os

import pytest

from tests.e2e.test_readme_commands import bash
from tests.readme_commands import ROOT, RUN_BY, all_commands, readme
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube

pytestmark = pytest.mark.realcluster


async def test_plain_manifests_install_and_uninstall(cluster: Cluster, kube: Kube) -> None:
    install, uninstall = "kubectl apply -f deploy/", "kubectl delete -f deploy/"
    for command in (install, uninstall):
        assert command in all_commands(readme()) and command in RUN_BY
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    code, out, err = await bash(install, cwd=ROOT, env=env)
    assert code == 0, err
    created = out.splitlines()
    assert "namespace/endpointslice-operator created" in created
    assert "deployment.apps/endpointslice-operator created" in created
    deployment = await kube.get(
        "/apis/apps/v1/namespaces/endpointslice-operator/deployments/endpointslice-operator"
    )
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "endpointslice-operator"
    role = "/apis/rbac.authorization.k8s.io/v1/clusterroles/endpointslice-operator"
    assert (await kube.status_of("GET", role))[0] == 200
    code, out, err = await bash(uninstall, cwd=ROOT, env=env)
    assert code == 0, err
    assert 'namespace "endpointslice-operator" deleted' in out
    status, _ = await kube.status_of(
        "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/endpointslice-operator"
    )
    assert status == 404
