"""Every command the README shows, and which test runs it as written (or why none can).

A command is a line of a ``sh`` code block (continuation lines joined, trailing comments
dropped) or an inline code span that starts with one of :data:`PROGRAMS` and has arguments.
``tests/ship/test_readme_commands.py`` checks that each one is claimed here; the tests named in
:data:`RUN_BY` take the command text from the README itself and execute it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

PROGRAMS: tuple[str, ...] = (
    "make",
    "kubectl",
    "helm",
    "docker",
    "kind",
    "endpointslice-operator",
    "source",
)
PROGRAMS += ("export", "kube-controller-manager")

_FENCE = re.compile(r"```sh\n(.*?)```", re.S)
_INLINE = re.compile(rf"`((?:{'|'.join(map(re.escape, PROGRAMS))}) [^`]+)`")

E2E = "tests/e2e/test_readme_commands.py"
REAL = "tests/realcluster/test_readme_commands.py"
VIEW = "tests/view/test_readme_view.py"
DATAPLANE = "tests/dataplane/test_demo.py"
MIGRATION = "tests/realcluster/test_migration.py"
NODE = "tests/node/test_install.py"
IMAGE = "tests/node/test_image.py"

#: command -> the test (file::function) that runs it as written.
RUN_BY: dict[str, str] = {
    "make venv": f"{E2E}::test_try_it_without_a_cluster",
    "source .venv/bin/activate": f"{E2E}::test_try_it_without_a_cluster",
    "endpointslice-operator demo --keep-running": f"{E2E}::test_try_it_without_a_cluster",
    "export KUBECONFIG=$PWD/demo.kubeconfig": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl get nodes -L topology.kubernetes.io/zone": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl apply -f deploy/examples/web.yaml": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl rollout status deployment/web": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl get endpointslices -l kubernetes.io/service-name=web -o custom-columns="
    "'NAME:.metadata.name,MANAGER:.metadata.labels.endpointslice\\.kubernetes\\.io/managed-by,"
    "IPS:.endpoints[*].addresses[0]'": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl scale deployment/web --replicas 5": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl rollout restart deployment/web": f"{E2E}::test_try_it_without_a_cluster",
    "kubectl get endpointslices -l kubernetes.io/service-name=web -o yaml": (
        f"{E2E}::test_try_it_without_a_cluster"
    ),
    "make run": f"{E2E}::test_make_run_without_a_cluster",
    # The node layer's session fixture runs `make image` as written (tests/node/conftest.py).
    "make image": f"{IMAGE}::test_the_readme_builds_the_image_with_make_image",
    "helm install endpointslice-operator ./chart --namespace endpointslice-operator "
    "--create-namespace": (
        f"{NODE}::test_helm_install_from_the_readme_runs_the_operator_ready_with_its_lease"
    ),
    "helm upgrade endpointslice-operator ./chart -n endpointslice-operator": (
        f"{NODE}::test_helm_upgrade_to_two_replicas_and_a_rolling_restart_fail_no_request_write_no_slice"
    ),
    "helm uninstall endpointslice-operator -n endpointslice-operator": (
        f"{NODE}::test_helm_uninstall_with_the_cleanup_hook_leaves_nothing_of_ours_and_all_of_theirs"
    ),
    "kubectl -n endpointslice-operator rollout status deployment/endpointslice-operator": (
        f"{NODE}::test_helm_install_from_the_readme_runs_the_operator_ready_with_its_lease"
    ),
    "kubectl apply -f deploy/crds/endpointselectors.endpointslice-operator.io.yaml": (
        f"{NODE}::test_plain_manifests_from_the_readme_then_kubectl_delete_and_cleanup"
    ),
    "make dataplane-demo": f"{DATAPLANE}::test_the_dataplane_demo_follows_a_rollout",
    "make run ARGS='--log-level debug'": f"{E2E}::test_make_run_without_a_cluster",
    "endpointslice-operator emulator --nodes 3": f"{E2E}::test_the_emulator_on_its_own",
    "kubectl describe service web": f"{E2E}::test_service_commands_on_the_emulator",
    "kubectl delete endpointslices -l 'kubernetes.io/service-name=web,"
    "endpointslice.kubernetes.io/managed-by in (endpointslice-controller.k8s.io,"
    "endpointslicemirroring-controller.k8s.io)'": f"{E2E}::test_service_commands_on_the_emulator",
    "endpointslice-operator migrate --dry-run web": (
        f"{MIGRATION}::test_migrate_as_the_readme_shows_it"
    ),
    "endpointslice-operator migrate web": f"{MIGRATION}::test_migrate_as_the_readme_shows_it",
    "kubectl annotate service web endpointslice-operator.io/enabled=true": (
        f"{MIGRATION}::test_the_readme_steps_by_hand"
    ),
    "kubectl get endpointslices -l kubernetes.io/service-name=web "
    "-L endpointslice.kubernetes.io/managed-by": f"{MIGRATION}::test_the_readme_steps_by_hand",
    'kubectl patch service web --type merge -p \'{"metadata":{"annotations":'
    '{"endpointslice-operator.io/selector":"app=web"}},"spec":{"selector":null}}\'': (
        f"{MIGRATION}::test_the_readme_steps_by_hand"
    ),
    "kubectl delete endpoints -l endpoints.kubernetes.io/managed-by=endpoint-controller "
    "--field-selector metadata.name=web": f"{MIGRATION}::test_the_readme_steps_by_hand",
    "kubectl get endpoints web --show-managed-fields -o yaml": (
        f"{MIGRATION}::test_the_readme_steps_by_hand"
    ),
    "endpointslice-operator cleanup": f"{E2E}::test_service_commands_on_the_emulator",
    "kubectl apply -f deploy/": f"{REAL}::test_plain_manifests_install_and_uninstall",
    "endpointslice-operator plan -f docs/examples/multus.yaml -o summary": (
        "tests/commands/test_plan.py::test_readme_secondary_network_examples"
    ),
    "endpointslice-operator plan -f docs/examples/endpointselector.yaml -o summary": (
        "tests/commands/test_plan.py::test_readme_endpoint_selector_example"
    ),
    "endpointslice-operator plan -f docs/examples/dra.yaml": (
        "tests/commands/test_plan.py::test_readme_secondary_network_examples"
    ),
    "kubectl delete -f deploy/": f"{REAL}::test_plain_manifests_install_and_uninstall",
    "endpointslice-operator endpoints": f"{VIEW}::test_the_readme_view_commands",
    "endpointslice-operator endpoints --service web": f"{VIEW}::test_the_readme_view_commands",
    "endpointslice-operator endpoints --service web --watch -o json": (
        f"{VIEW}::test_the_readme_view_commands"
    ),
}

_NO_DOCKER = (
    "needs a Docker daemon, which CI machines do not have; `make image` builds the same "
    "Dockerfile with buildah in the node layer (tests/node), which checks the image and runs it"
)

#: command -> why no test runs it.
NOT_RUN: dict[str, str] = {
    "make test": "is what CI runs (.ci/run runs exactly this command)",
    "docker build -t localhost/endpointslice-operator:0.1.0 .": _NO_DOCKER,
    "kind load image-archive endpointslice-operator.tar": (
        "needs kind (and Docker); the node layer imports the same archive into its node's "
        "containerd instead"
    ),
    "kube-controller-manager --controllers=*,-endpointslice-controller": (
        "a flag of the user's own control plane; the realcluster tests run kube-controller-"
        "manager with its default controllers, as the reference to compare with"
    ),
}


def _strip_comment(line: str) -> str:
    return re.split(r"\s{2,}#", line, maxsplit=1)[0].rstrip()


def block_commands(block: str) -> list[str]:
    """The commands of one ``sh`` block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", "", block)
    commands = []
    for line in joined.splitlines():
        line = _strip_comment(line)
        if line and not line.lstrip().startswith("#"):
            commands.append(re.sub(r"\s+", " ", line.strip()))
    return commands


def blocks(text: str) -> list[str]:
    return _FENCE.findall(text)


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def all_commands(text: str) -> list[str]:
    """Every command of the README, in order, each once."""
    found = [command for block in blocks(text) for command in block_commands(block)]
    found += [re.sub(r"\s+", " ", span) for span in _INLINE.findall(_FENCE.sub("", text))]
    return list(dict.fromkeys(found))


def readme() -> str:
    return README.read_text(encoding="utf-8")
