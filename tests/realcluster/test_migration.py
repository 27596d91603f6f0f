"""Moving a Service from kube-controller-manager to the operator on a real control plane (with
kube-controller-manager's endpoint, endpointslice and endpointslicemirroring controllers):
afterwards only our slices exist for it, and no Endpoints object the user did not ask for; a
pod deleted afterwards is in no slice. The README's commands (``migrate``, and the same steps by
hand with kubectl) are run as written, in the test's namespace (the kubeconfig's context)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_readme_commands import bash
from tests.readme_commands import RUN_BY, all_commands, readme
from tests.realcluster import objects as o
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import JSON, LABEL_MANAGED_BY, OURS, Kube, eventually
from tests.realcluster.operator_process import OperatorProcess

pytestmark = pytest.mark.realcluster

PODS = {"web-0": "10.1.0.1", "web-1": "10.1.0.2"}
ENDPOINTS = "endpointslice-operator.io/endpoints"


async def kcm_publishes(kube: Kube, ns: str, annotations: dict[str, str] | None = None) -> None:
    """A selector Service "web" over two pods, as kube-controller-manager publishes it."""
    await o.service(kube, ns, "web", selector={"app": "web"}, opt_in=False, annotations=annotations)
    for name, ip in PODS.items():
        await o.pod(kube, ns, name, ip)

    async def published() -> bool:
        slices = await kube.slices(ns, "web", manager=None)
        assert o.ready_addresses(slices) == set(PODS.values()), slices
        endpoints = await kube.get(f"/api/v1/namespaces/{ns}/endpoints/web")
        assert endpoints.get("subsets"), endpoints
        return True

    await eventually(published, timeout=60)


async def only_ours(
    kube: Kube, ns: str, addresses: set[str], *, endpoints_of_ours: bool = False
) -> None:
    """Eventually: every slice of "web" is ours, with ``addresses`` ready, and no Endpoints
    object named "web" exists, or (``endpoints_of_ours``: the user asked for it) ours."""

    async def clean() -> bool:
        slices = await kube.slices(ns, "web", manager=None)
        managers = sorted({s["metadata"]["labels"].get(LABEL_MANAGED_BY) for s in slices})
        assert managers == [OURS], [
            (s["metadata"]["name"], s["metadata"]["labels"]) for s in slices
        ]
        assert o.ready_addresses(slices) == addresses
        status, body = await kube.status_of("GET", f"/api/v1/namespaces/{ns}/endpoints/web")
        if not endpoints_of_ours:
            assert status == 404, body
            return True
        assert status == 200, body
        assert body["metadata"]["labels"].get(LABEL_MANAGED_BY) == OURS, body["metadata"]
        ips = {a["ip"] for subset in body.get("subsets") or () for a in subset["addresses"]}
        assert ips == addresses, body
        return True

    await eventually(clean, timeout=60)


KCM_SLICES = "endpointslice-controller.k8s.io"
MIRRORING = "endpointslicemirroring-controller.k8s.io"
VENV_BIN = str(Path(sys.executable).parent)


def readme_command(prefix: str) -> str:
    """The README's command starting with ``prefix`` (claimed by this module in RUN_BY)."""
    (found,) = [c for c in all_commands(readme()) if c.startswith(prefix)]
    assert found in RUN_BY, found
    return found


def user_env(cluster: Cluster, ns: str, tmp_path: Path) -> dict[str, str]:
    """A user's shell: a kubeconfig whose context namespace is the test's, the venv on PATH."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copy(cluster.kubeconfig, kubeconfig)
    subprocess.run(
        ["kubectl", "config", "set-context", "--current", f"--namespace={ns}"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        check=True,
        capture_output=True,
    )
    return {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }


async def run(script: str, env: dict[str, str], tmp_path: Path) -> str:
    code, out, err = await bash(script, cwd=tmp_path, env=env)
    assert code == 0, (script, out, err)
    return out


async def service_state(kube: Kube, ns: str) -> tuple[JSON, JSON]:
    service = await kube.get(f"/api/v1/namespaces/{ns}/services/web")
    return service["spec"].get("selector"), service["metadata"].get("annotations") or {}


async def deleted_pod_is_in_no_slice(
    kube: Kube, ns: str, *, endpoints_of_ours: bool = False
) -> None:
    """The stale-mirror symptom: a pod deleted after the migration must leave every slice."""
    await kube.delete(f"/api/v1/namespaces/{ns}/pods/web-1", {"gracePeriodSeconds": 0})
    await only_ours(kube, ns, {PODS["web-0"]}, endpoints_of_ours=endpoints_of_ours)


async def test_migrate_as_the_readme_shows_it(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await kcm_publishes(kube, ns)
    env = user_env(cluster, ns, tmp_path)
    out = await run(readme_command("endpointslice-operator migrate --dry-run"), env, tmp_path)
    assert f"would annotate service {ns}/web {o.ENABLED}=true" in out
    assert f"would move spec.selector of service {ns}/web into {o.SELECTOR}=app=web" in out
    assert f"would delete endpoints {ns}/web (kube-controller-manager's)" in out
    assert f"(managed by {KCM_SLICES})" in out
    assert await service_state(kube, ns) == ({"app": "web"}, {})  # nothing changed
    out = await run(readme_command("endpointslice-operator migrate web"), env, tmp_path)
    assert out.splitlines()[-1] == f"only EndpointSlices of {OURS} remain for {ns}/web", out
    assert f"annotated service {ns}/web {o.ENABLED}=true" in out
    assert f"moved spec.selector of service {ns}/web into {o.SELECTOR}=app=web" in out
    assert f"deleted endpoints {ns}/web (kube-controller-manager's)" in out
    await only_ours(kube, ns, set(PODS.values()))
    selector, annotations = await service_state(kube, ns)
    assert selector is None
    assert annotations[o.SELECTOR] == "app=web" and annotations[o.ENABLED] == "true"
    await deleted_pod_is_in_no_slice(kube, ns)


async def test_the_readme_steps_by_hand(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await kcm_publishes(kube, ns)
    env = user_env(cluster, ns, tmp_path)
    await run(readme_command("kubectl annotate service web"), env, tmp_path)

    async def both_listed() -> bool:
        out = await run(
            readme_command("kubectl get endpointslices -l kubernetes.io/service-name=web -L"),
            env,
            tmp_path,
        )
        assert OURS in out and KCM_SLICES in out, out
        # ours cover kube-controller-manager's: the same ready addresses
        ours = o.ready_addresses(await kube.slices(ns, "web"))
        assert ours == o.ready_addresses(await kube.slices(ns, "web", manager=KCM_SLICES))
        return True

    await eventually(both_listed, timeout=60)
    await run(readme_command("kubectl patch service web"), env, tmp_path)
    out = await run(readme_command("kubectl delete endpoints -l"), env, tmp_path)
    if 'endpoints "web" deleted' not in out:
        # Before v1.33 kube-controller-manager does not label its Endpoints: the README says
        # to check the field managers, then delete it by name.
        shown = await run(readme_command("kubectl get endpoints web --show"), env, tmp_path)
        managers = {
            line.split(":", 1)[1].strip()
            for line in shown.splitlines()
            if line.strip().startswith("manager:")
        }
        assert managers == {"kube-controller-manager"}, shown
        await run("kubectl delete endpoints web", env, tmp_path)
    await run(readme_command("kubectl delete endpointslices -l '"), env, tmp_path)
    await only_ours(kube, ns, set(PODS.values()))
    await deleted_pod_is_in_no_slice(kube, ns)


async def test_the_old_recipe_gets_leftover_endpoints_with_the_command_that_works(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    """The recipe as the README gave it before ``migrate`` (selector moved into the annotation
    and opted in at once, kube-controller-manager's slices deleted by hand) left its Endpoints
    object, mirrored into a slice that never changed again. The operator says so in a Warning
    Event ``LeftoverEndpoints``; the command in it removes them."""
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await kcm_publishes(kube, ns)
    patch: JSON = {
        "metadata": {"annotations": {o.ENABLED: "true", o.SELECTOR: "app=web"}},
        "spec": {"selector": None},
    }
    await kube.patch(f"/api/v1/namespaces/{ns}/services/web", patch)

    async def ours_published() -> bool:
        assert o.ready_addresses(await kube.slices(ns, "web")) == set(PODS.values())
        return True

    await eventually(ours_published)
    for endpoint_slice in await kube.slices(ns, "web", manager=KCM_SLICES):
        await kube.delete(
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/"
            + endpoint_slice["metadata"]["name"]
        )

    async def warned() -> JSON:
        assert await kube.slices(ns, "web", manager=MIRRORING), "the mirrored slice"
        events = [
            e
            for e in await kube.events(ns, "LeftoverEndpoints")
            if f"EndpointSlices of {MIRRORING}" in e["message"]
        ]
        assert events and events[-1]["type"] == "Warning", events
        return events[-1]

    event = await eventually(warned, timeout=60)
    assert event["involvedObject"]["name"] == "web"
    assert f"the Endpoints object {ns}/web" in event["message"]
    # The command the Event names (ours, before its by-hand alternative), run as written.
    text = event["message"].split("remove them with: ", 1)[1]
    ours_command = text.split(" (or, by hand: ", 1)[0]
    assert ours_command == f"endpointslice-operator migrate -n {ns} web"
    env = user_env(cluster, ns, tmp_path)
    await run(ours_command, env, tmp_path)
    await only_ours(kube, ns, set(PODS.values()))
    await deleted_pod_is_in_no_slice(kube, ns)


async def test_migrate_keeps_an_endpoints_object_that_is_not_kube_controller_managers(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    """A user's Endpoints object beside a selectorless opted-in Service (kube-controller-manager
    mirrors it): ``migrate`` deletes neither it nor its mirrored slices, and says why (exit 1)."""
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"})
    await o.pod(kube, ns, "web-0", PODS["web-0"])
    users = await kube.create(
        f"/api/v1/namespaces/{ns}/endpoints",
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "web"},
            "subsets": [
                {"addresses": [{"ip": "10.9.9.9"}], "ports": [{"name": "http", "port": 8080}]}
            ],
        },
    )

    async def mirrored() -> bool:
        assert await kube.slices(ns, "web", manager=MIRRORING)
        assert o.ready_addresses(await kube.slices(ns, "web")) == {PODS["web-0"]}
        return True

    await eventually(mirrored, timeout=60)
    env = user_env(cluster, ns, tmp_path)
    code, out, err = await bash(
        "endpointslice-operator migrate web --timeout 30", cwd=tmp_path, env=env
    )
    assert code == 1, (out, err)
    assert f"kept endpoints {ns}/web: not kube-controller-manager's" in err
    assert "mirroring controller publishes EndpointSlices" in err
    assert "delete" not in out, out
    after = await kube.get(f"/api/v1/namespaces/{ns}/endpoints/web")
    assert after["metadata"]["resourceVersion"] == users["metadata"]["resourceVersion"]
    assert await kube.slices(ns, "web", manager=MIRRORING)


async def test_migrate_leaves_our_endpoints_object_when_asked_for(
    cluster: Cluster, kube: Kube, ns: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    """With ``endpointslice-operator.io/endpoints: "true"`` kube-controller-manager's Endpoints
    object is in the way of ours (ConflictingEndpoints) until ``migrate`` deletes it; then the
    operator writes its own, which stays."""
    if not cluster.has_kcm:
        pytest.skip("needs kube-controller-manager beside the operator")
    await kcm_publishes(kube, ns, annotations={ENDPOINTS: "true"})
    env = user_env(cluster, ns, tmp_path)
    out = await run("endpointslice-operator migrate web", env, tmp_path)
    assert f"deleted endpoints {ns}/web (kube-controller-manager's)" in out
    await only_ours(kube, ns, set(PODS.values()), endpoints_of_ours=True)
    await deleted_pod_is_in_no_slice(kube, ns, endpoints_of_ours=True)
