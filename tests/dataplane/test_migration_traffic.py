"""A live migration from kube-controller-manager to the operator, through a real kube-proxy
(the client, the README's steps and the figures are :mod:`benchmarks.figures.migration`'s).

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

import time
from pathlib import Path

import pytest

from benchmarks.figures import migration
from benchmarks.figures.migration import Client, managers, sh, until_only_ours, user_env
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster
from tests.dataplane.conftest import App
from tests.readme_commands import RUN_BY

pytestmark = pytest.mark.dataplane

OURS = "endpointslice-operator.io"
KCM = "endpointslice-controller.k8s.io"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"


def kcm_service(dc: DataplaneCluster, app: App) -> tuple[str, list[str]]:
    """The app's Service with spec.selector (kube-controller-manager's) over three pods."""
    pods = [app.pod(suffix) for suffix in ("a", "b", "c")]
    key = dc.service(app.name, selector=app.labels)
    app.services.append(key)
    dc.wait_rules({key: app.ips(*pods)})
    assert managers(dc, key) == {KCM}
    return key, pods


def deleted_pod_leaves_the_rules(dc: DataplaneCluster, app: App, key: str, pods: list[str]) -> None:
    """The stale-mirror symptom: a pod deleted after the migration must leave the rules."""
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


@pytest.mark.usefixtures("proxy_mode")
def test_the_readme_steps_by_hand_fail_no_request(
    dc: DataplaneCluster, app: App, tmp_path: Path
) -> None:
    key, pods = kcm_service(dc, app)
    env = user_env(dc, tmp_path)
    steps = migration.readme_steps(app.name)
    assert all(step.replace(app.name, "web") in RUN_BY for step in steps)
    with Client(dc, key) as client:
        time.sleep(1.0)
        settle = migration.migrate_by_hand(dc, key, pods, steps, env)
        time.sleep(2.0)  # kube-proxy syncs what the last delete changed, under traffic
    report("README steps by hand", client, settle)
    assert client.tally.total() > 0
    assert client.failed == 0, client.tally
    assert set(client.tally) == set(pods), client.tally
    assert managers(dc, key) == {OURS}
    deleted_pod_leaves_the_rules(dc, app, key, pods)
    assert managers(dc, key) == {OURS}


@pytest.mark.usefixtures("proxy_mode")
def test_migrate_fails_no_request(dc: DataplaneCluster, app: App, tmp_path: Path) -> None:
    key, pods = kcm_service(dc, app)
    env = user_env(dc, tmp_path)
    with Client(dc, key) as client:
        time.sleep(1.0)
        started = time.monotonic()
        out = sh(f"endpointslice-operator migrate {app.name}", env)
        took = time.monotonic() - started
        settle = until_only_ours(dc, key)
        time.sleep(2.0)
    report("endpointslice-operator migrate", client, settle)
    print(f"migrate took {took:.2f} s:\n{out}")
    assert f"only EndpointSlices of {OURS} remain for {dc.namespace}/{app.name}" in out
    assert client.tally.total() > 0
    assert client.failed == 0, client.tally
    assert set(client.tally) == set(pods), client.tally
    deleted_pod_leaves_the_rules(dc, app, key, pods)
    assert managers(dc, key) == {OURS}


def test_migration_figures(dc: DataplaneCluster, tmp_path: Path) -> None:
    """``--real --only dataplane``'s migration figures, on the layer's cluster."""
    figures = {f.name: f for f in migration.figures(dc, tmp_path, name="bench-mig")}
    assert set(figures) == {"migration_failed_requests", "migration_last_step_to_only_ours_s"}
    failed = figures["migration_failed_requests"]
    assert failed.value == 0 and failed.baseline == 0, failed
    assert 0 <= figures["migration_last_step_to_only_ours_s"].value < 60
    assert not [name for name in dc.pod_ips if name.startswith("bench-mig")]
