"""A live migration from kube-controller-manager to the operator, through a real kube-proxy
(part of ``--real --only dataplane``, on its :class:`DataplaneCluster`).

A Service with ``spec.selector`` over three pods of its own (kube-controller-manager's) is moved
over by ``endpointslice-operator migrate`` while a client in the client namespace sends requests
to its ClusterIP in steady batches (fresh connections, one after the other); a twin Service left
to kube-controller-manager, on three pods of its own, gets the same traffic from a second client
over the same seconds: the baseline, the failures the set-up itself would show.

``migration_failed_requests``: requests to the migrated Service that failed (refused, timed
out, reset), with the twin's as the baseline; goal 0.
``migration_last_step_to_only_ours_s``: seconds from the end of the README's last kubectl step
(the same migration by hand, on another Service of three pods) until every slice of the Service
is ours and no Endpoints object is left (reported without a baseline: nothing else in the run
measures it).
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

from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster
from tests.readme_commands import all_commands, readme

from ..figure import Figure

__all__ = [
    "HAND_STEPS",
    "Client",
    "figures",
    "managers",
    "migrate_by_hand",
    "readme_steps",
    "sh",
    "until_only_ours",
    "user_env",
]

OURS = "endpointslice-operator.io"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
BATCH = 10
MAX_REQUESTS = 5000
PODS = 3
VENV_BIN = Path(sys.executable).parent
HAND_STEPS = (
    "kubectl annotate service web",
    "kubectl get endpointslices -l kubernetes.io/service-name=web -L",
    "kubectl patch service web",
    "kubectl delete endpoints -l",
    "kubectl delete endpointslices -l '",
)
"""The README's kubectl steps (each the start of one of its commands), in order."""


class Client:
    """Requests to one Service in batches of ``BATCH`` from the client namespace, until
    stopped or ``MAX_REQUESTS`` are sent; ``tally`` counts the answers (a pod's name or
    ``ERR:<why>``)."""

    def __init__(self, dc: DataplaneCluster, key: str) -> None:
        self.dc, self.key = dc, key
        self.tally: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"client {key}", daemon=True)

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


def managers(dc: DataplaneCluster, key: str) -> set[str]:
    return {s["metadata"]["labels"].get(MANAGED_BY) for s in dc.slices(key)}


def _name(key: str) -> str:
    return key.split("/", 1)[1].split(":", 1)[0]


def until_only_ours(dc: DataplaneCluster, key: str, timeout: float = 60.0) -> float:
    """Seconds until every slice of the Service is ours and no Endpoints object is left."""
    assert dc.plane is not None
    started = time.monotonic()
    while True:
        status, _ = dc.plane.request("GET", dc.ns_path("endpoints", _name(key)))
        if status == 404 and managers(dc, key) == {OURS}:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"still not only ours after {timeout:.0f} s: {dc.slices(key)}")
        time.sleep(0.05)


def sh(script: str, env: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", "-e", "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise AssertionError(f"{script}: exit {result.returncode}: {result.stderr}")
    return result.stdout


def user_env(dc: DataplaneCluster, workdir: Path) -> dict[str, str]:
    """A user's shell: a kubeconfig whose context namespace is the layer's, the venv on PATH."""
    assert dc.plane is not None
    kubeconfig = workdir / "kubeconfig"
    shutil.copy(dc.plane.kubeconfig, kubeconfig)
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    sh(f"kubectl config set-context --current --namespace={dc.namespace}", env)
    return env


def migrate_by_hand(
    dc: DataplaneCluster, key: str, pods: list[str], steps: list[str], env: dict[str, str]
) -> float:
    """The README's kubectl ``steps`` (``web`` replaced by the Service's name): the patch once
    our slices list the pods' addresses; returns the seconds from the end of the last step
    until only our slices remain."""
    sh(steps[0], env)
    deadline = time.monotonic() + 60
    while True:
        listed = sh(steps[1], env)
        ours = {a for s in dc.slices(key, OURS) for e in s["endpoints"] for a in e["addresses"]}
        if OURS in listed and ours == set(dc.ips(*pods)):
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"our slices never covered the pods: {listed}")
        time.sleep(0.2)
    for step in steps[2:]:
        sh(step, env)
    return until_only_ours(dc, key)


def _kcm_service(dc: DataplaneCluster, name: str) -> tuple[str, list[str]]:
    labels = {"app": name}
    pods = [f"{name}-{i}" for i in range(PODS)]
    for pod in pods:
        dc.add_pod(pod, labels)
    key = dc.service(name, selector=labels)
    dc.wait_rules({key: dc.ips(*pods)})
    return key, pods


def readme_steps(name: str) -> list[str]:
    """The README's kubectl steps, in order, for the Service ``name`` instead of ``web``."""
    commands = all_commands(readme())
    return [
        next(c for c in commands if c.startswith(prefix)).replace("web", name)
        for prefix in HAND_STEPS
    ]


def figures(dc: DataplaneCluster, workdir: Path, name: str = "mig") -> list[Figure]:
    """Both migrations (``migrate`` under traffic beside the twin, then by hand); everything
    deleted again afterwards."""
    env = user_env(dc, workdir)
    created: list[tuple[str, list[str]]] = []
    try:
        moved = _kcm_service(dc, f"{name}-moved")
        twin = _kcm_service(dc, f"{name}-twin")
        by_hand = _kcm_service(dc, f"{name}-hand")
        created += [moved, twin, by_hand]
        with Client(dc, moved[0]) as client, Client(dc, twin[0]) as baseline:
            time.sleep(1.0)
            sh(f"endpointslice-operator migrate {_name(moved[0])}", env)
            until_only_ours(dc, moved[0])
            time.sleep(2.0)
        settle = migrate_by_hand(dc, by_hand[0], by_hand[1], readme_steps(_name(by_hand[0])), env)
    finally:
        for key, pods in created:
            dc.call("DELETE", dc.ns_path("services", _name(key)), ok=(404,))
            for pod in pods:
                dc.force_delete(pod)
    return [
        Figure("migration_failed_requests", client.failed, "requests", baseline.failed),
        Figure("migration_last_step_to_only_ours_s", settle, "s"),
    ]
