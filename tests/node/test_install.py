"""An installation walked in order on one real node, as a user walks it: ``helm install`` from
the README, an app with real readiness probes behind an opted-in Service, ``helm upgrade`` to
two replicas and a rolling restart under traffic, ``kill -9`` of the leader, ``helm
uninstall`` with the cleanup hook. Each step asserts what users see: pods, Leases,
EndpointSlices, kube-proxy's rules, requests answered, the operator's logs and metrics.

The steps share the node and run in the order written; a step that fails leaves the later
ones failing too (they need what it set up).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.node.cluster import (
    KCM,
    NAMESPACE,
    OPERATOR_PODS,
    OURS,
    Client,
    Node,
    resource_versions,
    web_app,
)
from tests.readme_commands import ROOT, all_commands, block_commands, blocks, readme, section

pytestmark = [pytest.mark.node, pytest.mark.timeout(900)]

APP = "web"
REPLICAS = 3


def install_commands() -> list[str]:
    """The README's helm install block, as written."""
    (block,) = [b for b in blocks(section(readme(), "Install on a cluster")) if "helm install" in b]
    return block_commands(block)


def operator_pod(node: Node, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = node.get("pod", name, "-n", NAMESPACE)
    return pod


def holder_pod(node: Node) -> str:
    """The operator pod whose replica holds the Lease (its identity is ``<hostname>_<uuid>``)."""
    holder = node.wait("the Lease held", node.lease_holder)
    return holder.split("_", 1)[0]


def pod_ip(pod: dict[str, Any]) -> str:
    ip: str = pod["status"]["podIP"]
    return ip


def changes(samples: dict[str, float]) -> float:
    return sum(v for k, v in samples.items() if k.startswith("endpoint_slice_controller_changes{"))


def syncs(samples: dict[str, float]) -> float:
    return sum(v for k, v in samples.items() if k.startswith("endpoint_slice_controller_syncs{"))


def app_pods(node: Node) -> list[dict[str, Any]]:
    return [p for p in node.pods(f"app={APP}") if "deletionTimestamp" not in p["metadata"]]


def cluster_ip(node: Node) -> str:
    return node.kubectl("get", "service", APP, "-o", "jsonpath={.spec.clusterIP}").strip()


def routed(node: Node, ip: str) -> bool:
    """kube-proxy has a DNAT rule to this pod IP (a Service endpoint chain)."""
    return f"--to-destination {ip}:8080" in node.nat_rules()


def answers(node: Node, url: str, tries: int) -> set[str]:
    """The pod names that answered ``tries`` requests (each must be answered)."""
    return {node.http_get(url).strip() for _ in range(tries)}


def answered(node: Node, url: str, tries: int) -> set[str]:
    """The pod names that answered some of ``tries`` requests (while rules are being written)."""
    done = (node.in_node("curl", "-sf", "--max-time", "2", url, check=False) for _ in range(tries))
    return {d.stdout.strip() for d in done if d.returncode == 0}


def test_helm_install_from_the_readme_runs_the_operator_ready_with_its_lease(node: Node) -> None:
    for command in install_commands():
        node.shell(command, cwd=ROOT, timeout=600)
    (pod,) = node.operator_ready(1)
    name = pod["metadata"]["name"]
    assert holder_pod(node) == name
    # As the chart runs it: UID 65532, read-only root filesystem, in-cluster credentials
    # (the Lease above was written with them), its probes (Ready is the readiness probe's).
    container = pod["spec"]["containers"][0]
    assert container["image"] == node.image
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"readinessProbe", "livenessProbe"} <= container.keys()
    assert node.kubectl("exec", "-n", NAMESPACE, name, "--", "id", "-u").strip() == "65532"
    denied = node.run(
        ["kubectl", "exec", "-n", NAMESPACE, name, "--", "touch", "/opt/venv/x"], check=False
    )
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr
    logs = node.kubectl("logs", "-n", NAMESPACE, name)
    assert "Became the leader" in logs


def test_kube_proxy_routes_to_every_ready_pod_and_follows_a_failing_probe(node: Node) -> None:
    node.apply(web_app(APP, REPLICAS))
    node.kubectl("rollout", "status", f"deployment/{APP}", "--timeout=300s")
    pods = app_pods(node)
    ips = {pod_ip(p) for p in pods}
    node.wait("the operator's slice lists every ready pod", lambda: node.ready_ips(APP), ips.__eq__)
    url = f"http://{cluster_ip(node)}/"
    names = {p["metadata"]["name"] for p in pods}
    seen: set[str] = set()

    def reached() -> set[str]:
        seen.update(answered(node, url, 3))
        return seen

    node.wait("the ClusterIP reaches every pod", reached, names.__eq__)

    # The app's health file goes: its real httpGet probe fails, the kubelet marks it unready.
    sick = pods[0]
    sick_name, sick_ip = sick["metadata"]["name"], pod_ip(sick)
    node.kubectl("exec", sick_name, "--", "rm", "/www/healthz")
    node.wait(
        "the failing pod leaves the slice", lambda: node.ready_ips(APP), (ips - {sick_ip}).__eq__
    )
    node.wait("kube-proxy's rules drop it", lambda: routed(node, sick_ip), lambda r: not r)
    assert sick_name not in answers(node, url, 20)

    node.kubectl("exec", sick_name, "--", "sh", "-c", "echo ok > /www/healthz")
    node.wait("it comes back to the slice", lambda: node.ready_ips(APP), ips.__eq__)
    node.wait("and to kube-proxy's rules", lambda: routed(node, sick_ip))
    node.wait("and answers again", lambda: answered(node, url, 5), lambda a: sick_name in a)


def test_helm_upgrade_to_two_replicas_and_a_rolling_restart_fail_no_request_write_no_slice(
    node: Node, tmp_path: Path, record_property: Any
) -> None:
    # The README's upgrade as written (nothing changed: the operator stays as it is).
    (upgrade,) = [c for c in all_commands(readme()) if c.startswith("helm upgrade")]
    node.shell(upgrade, cwd=ROOT)
    node.operator_ready(1)
    node.helm(
        "upgrade", "endpointslice-operator", str(ROOT / "chart"), "-n", NAMESPACE,
        "--reuse-values", "--set", "replicaCount=2",
    )  # fmt: skip
    pods = node.operator_ready(2)
    leader = holder_pod(node)
    (standby,) = [p["metadata"]["name"] for p in pods if p["metadata"]["name"] != leader]
    node.wait(
        "the standby says at info level that it is one, and who leads",
        lambda: node.kubectl("logs", "-n", NAMESPACE, standby),
        lambda logs: f"Standby: the leader is {leader}_" in logs,
    )
    slices = node.slices(APP)
    before = resource_versions(slices)
    assert before

    stop = tmp_path / "stop"
    client = Client(node, f"http://{cluster_ip(node)}/", rate=20, seconds=600, stop=stop)
    try:
        time.sleep(2)
        node.kubectl("rollout", "restart", "-n", NAMESPACE, "deployment/endpointslice-operator")
        node.kubectl(
            "rollout", "status", "-n", NAMESPACE, "deployment/endpointslice-operator",
            "--timeout=600s",
        )  # fmt: skip
        new = node.operator_ready(2)
        names = {p["metadata"]["name"] for p in new}
        assert leader not in names and standby not in names
        new_leader = node.wait("a new replica leads", lambda: holder_pod(node), names.__contains__)
        (leading,) = [p for p in new if p["metadata"]["name"] == new_leader]
        samples = node.wait(
            "the new leader has synced the app's Service",
            lambda: node.metrics(pod_ip(leading)),
            lambda s: syncs(s) >= 1,
        )
        time.sleep(3)  # requests keep flowing after the last step
    finally:
        stop.touch()
        ok, failed, errors = client.result()
    record_property("restart_requests", ok + failed)
    assert failed == 0, f"{failed} of {ok + failed} requests failed: {errors}"
    assert ok > 100
    # No slice write caused by the restart: the slices are the same objects, unchanged.
    after = node.slices(APP)
    assert resource_versions(after) == before, (
        [s.get("endpoints") for s in slices],
        [s.get("endpoints") for s in after],
        node.kubectl("get", "events", "-A", "--sort-by=.lastTimestamp"),
    )
    assert changes(node.metrics(pod_ip(leading))) == 0, samples


def _container_pid(node: Node, pod: dict[str, Any]) -> int:
    """The PID of the pod's container process, from containerd's own task list (by id)."""
    container_id = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    for line in node.ctr("tasks", "ls").splitlines()[1:]:
        task, pid, _status = line.split()
        if task == container_id:
            return int(pid)
    raise AssertionError(f"no containerd task {container_id}")


def test_kill_9_of_the_leader_a_standby_takes_over(node: Node, record_property: Any) -> None:
    pods = node.operator_ready(2)
    leader = holder_pod(node)
    (standby,) = [p for p in pods if p["metadata"]["name"] != leader]
    (dead,) = [p for p in pods if p["metadata"]["name"] == leader]
    os.kill(_container_pid(node, dead), signal.SIGKILL)
    killed = time.monotonic()
    node.wait(
        "the standby takes the Lease",
        lambda: holder_pod(node),
        standby["metadata"]["name"].__eq__,
        timeout=60,
        interval=0.1,
    )
    failover = time.monotonic() - killed
    record_property("failover_s", round(failover, 1))
    print(f"\nnode: kill -9 of the leader -> standby holds the Lease: {failover:.1f} s")
    # The Lease's 15 s, plus at most one retry period (2 s, with jitter) of the standby.
    assert failover <= 15 + 2 * 1.2 + 3
    assert node.wait("the new leader says so", lambda: node.metrics(pod_ip(standby)),
                     lambda s: s.get("endpointslice_operator_leader") == 1)  # fmt: skip
    # And it leads: a probe failure reaches the slice.
    ready = {pod_ip(p) for p in app_pods(node)}
    target = app_pods(node)[1]
    node.kubectl("exec", target["metadata"]["name"], "--", "rm", "/www/healthz")
    node.wait("the new leader writes the probe's failure", lambda: node.ready_ips(APP),
              (ready - {pod_ip(target)}).__eq__)  # fmt: skip
    node.kubectl("exec", target["metadata"]["name"], "--", "sh", "-c", "echo ok > /www/healthz")
    node.wait("and its recovery", lambda: node.ready_ips(APP), ready.__eq__)
    # The killed container is restarted by the kubelet and becomes the standby.
    node.operator_ready(2)


MIGRATION = "### Moving a running Service over from kube-controller-manager"
MIGRATION_NS = "migration"


def migration_recipes() -> dict[str, list[str]]:
    """The README's migrations of ``web``, as written: with ``migrate``, and by hand."""
    text = section(readme(), "Avoiding duplicate slices from kube-controller-manager")
    recipes: dict[str, list[str]] = {}
    for block in blocks(text.split(MIGRATION, 1)[1]):
        commands = block_commands(block)
        if any(c.startswith("endpointslice-operator migrate") for c in commands):
            recipes["migrate"] = commands
        elif any(c.startswith("kubectl annotate") for c in commands):
            recipes["by-hand"] = commands
    return recipes


def _managers(node: Node, service: str, namespace: str) -> set[str]:
    return {
        s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by", "")
        for s in node.slices(service, namespace)
    }


# The README's migration recipe (issue 32) is defined where the README has it.
if MIGRATION in readme():

    @pytest.mark.parametrize("recipe", sorted(migration_recipes()))
    def test_a_live_migration_by_the_readme_fails_no_request_and_leaves_only_our_slices(
        node: Node, tmp_path: Path, record_property: Any, recipe: str
    ) -> None:
        ns = f"{MIGRATION_NS}-{recipe}"
        node.kubectl("create", "namespace", ns)
        # The user's current namespace is the Service's: the README's commands name no -n.
        kubeconfig = tmp_path / "kubeconfig"
        shutil.copy(node.kubeconfig, kubeconfig)
        env = {
            "KUBECONFIG": str(kubeconfig),
            "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{node.env['PATH']}",
        }
        node.run(["kubectl", "config", "set-context", "--current", f"--namespace={ns}"], env=env)
        node.apply(web_app(APP, REPLICAS, namespace=ns, opted_in=False))
        node.kubectl("rollout", "status", "-n", ns, f"deployment/{APP}", "--timeout=300s")
        ips = {pod_ip(p) for p in node.pods(f"app={APP}", ns)}
        node.wait(
            "kube-controller-manager's slice", lambda: node.ready_ips(APP, KCM, ns), ips.__eq__
        )
        ip = node.kubectl("get", "service", APP, "-n", ns, "-o", "jsonpath={.spec.clusterIP}")
        # The client starts once kube-proxy routes the new Service: before that its ClusterIP
        # refuses connections whoever writes the slices (9 of the first requests were refused
        # 1.5-1.9 s before the first command of the recipe, on a loaded machine).
        cluster_ip = ip.strip()

        def ready_to_serve() -> bool:
            rules = node.nat_rules()
            to_service = any(f"-d {cluster_ip}/32" in line and "-j KUBE-SVC-" in line
                             for line in rules.splitlines())  # fmt: skip
            return to_service and all(f"--to-destination {pod}:8080" in rules for pod in ips)

        node.wait("kube-proxy routes the Service to every pod", ready_to_serve, True.__eq__)
        stop = tmp_path / "stop"
        client = Client(node, f"http://{ip.strip()}/", rate=20, seconds=600, stop=stop)
        steps: list[tuple[float, str]] = []
        try:
            time.sleep(2)
            for command in migration_recipes()[recipe]:
                if command.startswith("kubectl patch"):
                    node.wait("our slices cover kube-controller-manager's",
                              lambda: node.ready_ips(APP, OURS, ns), ips.__eq__)  # fmt: skip
                steps.append((time.time(), command))
                node.shell(command, cwd=ROOT, env=env)
                steps.append((time.time(), "(done)"))
            node.wait("only our slices are left", lambda: _managers(node, APP, ns), {OURS}.__eq__)
            time.sleep(5)
        finally:
            stop.touch()
            ok, failed, errors = client.result()
        record_property("migration_requests", ok + failed)
        print(f"\nnode: migration ({recipe}): {ok + failed} requests, {failed} failed")
        when = [f"{at - steps[0][0]:+.2f} s {what[:60]}" for at, what in steps]
        when += [f"{at - steps[0][0]:+.2f} s a request failed" for at in client.failures()]
        assert failed == 0, f"{failed} of {ok + failed} requests failed: {errors}; " + "; ".join(
            sorted(when, key=lambda line: float(line.split()[0]))
        )
        assert ok > 50
        gone = node.run(["kubectl", "get", "endpoints", APP, "-n", ns], check=False)
        assert gone.returncode != 0 and "NotFound" in gone.stderr
        # Nothing stale: a pod deleted now leaves the rules (no frozen mirror keeps it).
        victim = node.pods(f"app={APP}", ns)[0]
        node.kubectl("delete", "pod", "-n", ns, victim["metadata"]["name"], "--wait=false")
        node.wait("the deleted pod leaves kube-proxy's rules",
                  lambda: routed(node, pod_ip(victim)), lambda r: not r)  # fmt: skip
        assert _managers(node, APP, ns) == {OURS}
        node.kubectl("delete", "namespace", ns, "--wait=false")


def _ours_left(node: Node) -> list[str]:
    """Every object of the operator's still in the cluster (by its label or its name)."""
    left = [
        f"endpointslice/{s['metadata']['namespace']}/{s['metadata']['name']}"
        for s in node.get("endpointslices", "-A", "-l",
                          f"endpointslice.kubernetes.io/managed-by={OURS}")["items"]
    ]  # fmt: skip
    for kind in ("leases", "serviceaccounts", "jobs", "deployments", "roles", "rolebindings"):
        for item in node.get(kind, "-A")["items"]:
            if "endpointslice-operator" in item["metadata"]["name"]:
                left.append(f"{kind}/{item['metadata']['namespace']}/{item['metadata']['name']}")
    for kind in ("clusterroles", "clusterrolebindings"):
        for item in node.get(kind)["items"]:
            if re.match(r"endpointslice-operator", item["metadata"]["name"]):
                left.append(f"{kind}/{item['metadata']['name']}")
    return sorted(left)


def _users(node: Node) -> dict[str, str]:
    return {
        f"{kind}/{item['metadata']['name']}": item["metadata"]["uid"]
        for kind in ("services", "deployments")
        for item in node.get(kind, "-n", "default")["items"]
        if item["metadata"]["name"] != "kubernetes"
    }


def uninstall_command() -> str:
    """The README's uninstall command, as written."""
    (command,) = [c for c in all_commands(readme()) if c.startswith("helm uninstall")]
    return command


def test_helm_uninstall_with_the_cleanup_hook_leaves_nothing_of_ours_and_all_of_theirs(
    node: Node,
) -> None:
    node.helm(
        "upgrade", "endpointslice-operator", str(ROOT / "chart"), "-n", NAMESPACE,
        "--reuse-values", "--set", "cleanupOnUninstall.enabled=true",
    )  # fmt: skip
    node.operator_ready(2)
    users = _users(node)
    assert f"services/{APP}" in users and f"deployments/{APP}" in users
    assert node.slices(APP)
    node.shell(uninstall_command(), cwd=ROOT)
    node.wait("the operator's pods are gone", lambda: node.pods(OPERATOR_PODS, NAMESPACE),
              lambda pods: not pods)  # fmt: skip
    assert _ours_left(node) == []
    assert _users(node) == users
    # The CRD stays (deleting it would delete every EndpointSelector).
    node.kubectl("get", "crd", "endpointselectors.endpointslice-operator.io")


CLUSTER_ID = """
apiVersion: about.k8s.io/v1beta1
kind: ClusterProperty
metadata: {name: cluster.clusterset.k8s.io}
spec: {value: node}
"""
EXPORT = f"""
apiVersion: multicluster.x-k8s.io/v1beta1
kind: ServiceExport
metadata: {{name: {APP}, namespace: default}}
"""


def _imports(node: Node) -> list[str]:
    return [
        i["metadata"]["name"]
        for i in node.get("serviceimports.multicluster.x-k8s.io", "-A")["items"]
    ]


def test_multicluster_helm_uninstall_with_the_cleanup_hook_removes_the_import_side_too(
    node: Node,
) -> None:
    users = _users(node)
    node.helm(
        "install", "endpointslice-operator", str(ROOT / "chart"), "-n", NAMESPACE,
        "--set", "multicluster.enabled=true", "--set", "cleanupOnUninstall.enabled=true",
    )  # fmt: skip
    node.apply(CLUSTER_ID)
    node.apply(EXPORT)
    node.operator_ready(1)
    node.wait("the export is imported (ServiceImport)", lambda: _imports(node), [APP].__eq__)
    node.wait("with a derived Service", lambda: _users(node), lambda now: len(now) > len(users))
    node.shell(uninstall_command(), cwd=ROOT)
    node.wait("the operator's pods are gone", lambda: node.pods(OPERATOR_PODS, NAMESPACE),
              lambda pods: not pods)  # fmt: skip
    assert _ours_left(node) == []
    assert _imports(node) == []
    assert _users(node) == users
    # The user's own objects stay: the export, the cluster id.
    node.kubectl("get", "serviceexport.multicluster.x-k8s.io", APP)
    node.kubectl("get", "clusterproperty.about.k8s.io", "cluster.clusterset.k8s.io")
    node.kubectl("delete", "serviceexport.multicluster.x-k8s.io", APP)


SELECTOR = f"""
apiVersion: endpointslice-operator.io/v1alpha1
kind: EndpointSelector
metadata: {{name: {APP}-backends, namespace: default}}
spec:
  selector: {{matchLabels: {{app: {APP}}}}}
  ports: [{{name: http, port: http, protocol: TCP}}]
"""


def plain_manifest_commands() -> list[str]:
    """The README's plain-manifests block, as written."""
    section_text = section(readme(), "Install on a cluster")
    (block,) = [b for b in blocks(section_text) if "kubectl apply -f deploy/" in b]
    return block_commands(block)


def test_plain_manifests_from_the_readme_then_kubectl_delete_and_cleanup(node: Node) -> None:
    for command in plain_manifest_commands():
        node.shell(command, cwd=ROOT, timeout=600)
    (pod,) = node.operator_ready(1)
    assert holder_pod(node) == pod["metadata"]["name"]
    node.apply(SELECTOR)
    ips = {pod_ip(p) for p in app_pods(node)}
    node.wait("the app's slice is ours again", lambda: node.ready_ips(APP), ips.__eq__)
    node.wait(
        "the EndpointSelector's slice",
        lambda: node.get(
            "endpointslices",
            "-l",
            f"endpointslice-operator.io/endpoint-selector-name={APP}-backends",
        )["items"],
    )
    users = _users(node)
    node.shell("kubectl delete -f deploy/", cwd=ROOT, timeout=600)
    # Theirs stays: the CRD and their EndpointSelector, their Services and Deployments.
    node.kubectl("get", "endpointselector.endpointslice-operator.io", f"{APP}-backends")
    assert _users(node) == users
    # Ours: only the slices, as the README says, until `endpointslice-operator cleanup`.
    node.wait("the namespace is gone", lambda: node.kubectl("get", "ns", NAMESPACE, check=False),
              lambda out: not out)  # fmt: skip
    assert {left.split("/", 1)[0] for left in _ours_left(node)} == {"endpointslice"}
    done = node.run([str(ROOT / ".venv" / "bin" / "endpointslice-operator"), "cleanup"])
    assert "EndpointSlice(s) managed by endpointslice-operator.io" in done.stdout
    assert _ours_left(node) == []
    assert _users(node) == users
    node.kubectl("get", "endpointselector.endpointslice-operator.io", f"{APP}-backends")
