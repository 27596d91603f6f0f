"""A live migration from kube-controller-manager to the operator, through a real kube-proxy.

A Service with ``spec.selector`` over three pods (kube-controller-manager's), a client in the
client namespace sending requests to its ClusterIP in steady batches the whole time, and the
migration done (a) by the README's kubectl steps, as written (the Service named as the test's
app, so ``web`` is replaced by that name), and (b) by ``endpointslice-operator migrate``. Each
asserts no failed request, and afterwards no slice but ours and no Endpoints object; then a pod
is deleted and must leave kube-proxy's rules (a stale mirrored slice would keep it routable).
``migration_failed_requests`` and the seconds from the last step until only our slices remain
are printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster
from tests.dataplane.conftest import App
from tests.readme_commands import RUN_BY, all_commands, readme

pytestmark = pytest.mark.dataplane

OURS = "endpointslice-operator.io"
KCM = "endpointslice-controller.k8s.io"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
BATCH = 10
MAX_REQUESTS = 5000
VENV_BIN = Path(sys.executable).parent
HAND_STEPS = (
    "kubectl annotate service web",
    "kubectl get endpointslices -l kubernetes.io/service-name=web -L",
    "kubectl patch service web",
    "kubectl delete endpoints -l",
    "kubectl delete endpointslices -l '",
)


class Client:
    """Requests to one Service in batches of ``BATCH`` (fresh connections, one after the
    other) from the client namespace, until stopped or ``MAX_REQUESTS`` are sent."""

    def __init__(self, dc: DataplaneCluster, key: str) -> None:
        self.dc, self.key = dc, key
        self.tally: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="client", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set() and self.tally.total() < MAX_REQUESTS:
            self.tally.update(self.dc.requests(self.key, BATCH, timeout=5.0))

    def __enter__(self) -> Client:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)

    @property
    def failed(self) -> int:
        return sum(n for answer, n in self.tally.items() if answer.startswith("ERR:"))


def kcm_service(dc: DataplaneCluster, app: App) -> tuple[str, list[str]]:
    """The app's Service with spec.selector (kube-controller-manager's) over three pods."""
    pods = [app.pod(suffix) for suffix in ("a", "b", "c")]
    key = dc.service(app.name, selector=app.labels)
    app.services.append(key)
    dc.wait_rules({key: app.ips(*pods)})
    assert {s["metadata"]["labels"][MANAGED_BY] for s in dc.slices(key)} == {KCM}
    return key, pods


def managers(dc: DataplaneCluster, key: str) -> set[str]:
    return {s["metadata"]["labels"].get(MANAGED_BY) for s in dc.slices(key)}


def endpoints_status(dc: DataplaneCluster, name: str) -> int:
    assert dc.plane is not None
    status, _ = dc.plane.request("GET", dc.ns_path("endpoints", name))
    return status


def until_only_ours(dc: DataplaneCluster, app: App, key: str, timeout: float = 60.0) -> float:
    """Seconds until every slice of the Service is ours and no Endpoints object is left."""
    started = time.monotonic()
    while managers(dc, key) != {OURS} or endpoints_status(dc, app.name) != 404:
        assert time.monotonic() - started < timeout, (managers(dc, key), dc.slices(key))
        time.sleep(0.05)
    return time.monotonic() - started


def user_env(dc: DataplaneCluster, tmp_path: Path) -> dict[str, str]:
    """A user's shell: kubeconfig with the layer's namespace as its context's, venv on PATH."""
    assert dc.plane is not None
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copy(dc.plane.kubeconfig, kubeconfig)
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    sh("kubectl config set-context --current --namespace=" + dc.namespace, env)
    return env


def sh(script: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, (script, result.stdout, result.stderr)
    return result.stdout


def readme_step(prefix: str, name: str) -> str:
    (command,) = [c for c in all_commands(readme()) if c.startswith(prefix)]
    assert command in RUN_BY, command
    return command.replace("web", name)


def deleted_pod_leaves_the_rules(dc: DataplaneCluster, app: App, key: str, pods: list[str]) -> None:
    gone, *kept = pods
    dc.force_delete(gone)
    dc.wait_rules({key: app.ips(*kept)})
    tally = dc.requests(key, 40)
    assert set(tally) == set(kept), tally


def report(how: str, client: Client, settle: float) -> None:
    print(
        f"\nmigration ({how}): migration_failed_requests={client.failed} of "
        f"{client.tally.total()}; {settle:.2f} s from the last step until only our slices remain"
    )


def test_the_readme_steps_by_hand_fail_no_request(
    dc: DataplaneCluster, app: App, tmp_path: Path
) -> None:
    key, pods = kcm_service(dc, app)
    env = user_env(dc, tmp_path)
    with Client(dc, key) as client:
        time.sleep(1.0)
        sh(readme_step(HAND_STEPS[0], app.name), env)
        deadline = time.monotonic() + 60
        while True:  # the README: patch once ours list the same addresses as theirs
            listed = sh(readme_step(HAND_STEPS[1], app.name), env)
            ours = {a for s in dc.slices(key, OURS) for e in s["endpoints"] for a in e["addresses"]}
            if OURS in listed and ours == set(app.ips(*pods)):
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.2)
        for step in HAND_STEPS[2:]:
            sh(readme_step(step, app.name), env)
        settle = until_only_ours(dc, app, key)
        time.sleep(2.0)  # kube-proxy syncs what the last delete changed, under traffic
    report("README steps by hand", client, settle)
    assert client.tally.total() > 0
    assert client.failed == 0, client.tally
    assert set(client.tally) == set(pods), client.tally
    assert managers(dc, key) == {OURS}
    deleted_pod_leaves_the_rules(dc, app, key, pods)
    assert managers(dc, key) == {OURS}


def test_migrate_fails_no_request(dc: DataplaneCluster, app: App, tmp_path: Path) -> None:
    key, pods = kcm_service(dc, app)
    env = user_env(dc, tmp_path)
    with Client(dc, key) as client:
        time.sleep(1.0)
        started = time.monotonic()
        out = sh(f"endpointslice-operator migrate {app.name}", env)
        took = time.monotonic() - started
        settle = until_only_ours(dc, app, key)
        time.sleep(2.0)
    report("endpointslice-operator migrate", client, settle)
    print(f"migrate took {took:.2f} s:\n{out}")
    assert f"only EndpointSlices of {OURS} remain for {dc.namespace}/{app.name}" in out
    assert client.tally.total() > 0
    assert client.failed == 0, client.tally
    assert set(client.tally) == set(pods), client.tally
    deleted_pod_leaves_the_rules(dc, app, key, pods)
    assert managers(dc, key) == {OURS}
