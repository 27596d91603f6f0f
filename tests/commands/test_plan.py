"""``endpointslice-operator plan``: offline planning from manifests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from endpointslice_operator.cli import main as cli_main
from endpointslice_operator.commands.plan import _parser, main

UID = "6b1f0c3e-0000-4000-8000-000000000001"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SERVICE_NAME = "kubernetes.io/service-name"


def service(
    name: str = "web",
    *,
    namespace: str | None = "shop",
    opted_in: bool = True,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "uid": UID,
        "creationTimestamp": "2026-01-02T03:04:05Z",
        "labels": {"app": name},
    }
    if namespace is not None:
        metadata["namespace"] = namespace
    if opted_in:
        metadata["annotations"] = {"endpointslice-operator.io/enabled": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": spec
        or {
            "selector": {"app": name},
            "clusterIP": "10.96.0.10",
            "ipFamilies": ["IPv4"],
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


def pod(
    name: str, ip: str, *, ready: bool = True, node: str = "node-a", app: str = "web"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "labels": {"app": app},
        },
        "spec": {"nodeName": node, "containers": [{"name": "app"}]},
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": "2026-01-02T03:05:00Z",
                }
            ],
        },
    }


def node(name: str = "node-a", zone: str = "zone-a") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "status": {
            "allocatable": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def as_existing(created: dict[str, Any], name: str = "web-abcde") -> dict[str, Any]:
    """What the API server returns for a created slice."""
    existing: dict[str, Any] = json.loads(json.dumps(created))
    existing["metadata"].update(
        name=name, uid="slice-uid", resourceVersion="41", generation=1,
        creationTimestamp="2026-01-02T03:06:00Z",
    )  # fmt: skip
    return existing


def writes(out: str) -> list[tuple[str, dict[str, Any]]]:
    """(comment line, document) pairs of -o yaml output."""
    result = []
    for chunk in out.split("---\n"):
        comment, _, body = chunk.partition("\n")
        result.append((comment, yaml.safe_load(body)))
    return result


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    return write(
        tmp_path / "app.yaml",
        service(),
        node(),
        pod("web-1", "10.0.0.1"),
        pod("web-2", "10.0.0.2", ready=False),
        pod("other", "10.0.0.9", app="other"),
    )


def created_slice(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    status, out, _ = run(capsys, "-f", str(path))
    assert status == 0
    [(comment, document)] = writes(out)
    assert comment == "# create shop/web-"
    return document


def test_yaml_output_for_a_new_service(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    document = created_slice(capsys, manifests)
    assert document["metadata"]["generateName"] == "web-"
    assert document["metadata"]["labels"][MANAGED_BY] == "endpointslice-operator.io"
    assert document["metadata"]["annotations"] == {
        "endpoints.kubernetes.io/last-change-trigger-time": "2026-01-02T03:04:05Z"
    }
    assert [(e["addresses"], e["conditions"]["ready"]) for e in document["endpoints"]] == [
        (["10.0.0.1"], True),
        (["10.0.0.2"], False),
    ]
    assert document["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]


def test_up_to_date_service_has_no_writes(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    existing = write(tmp_path / "slices.yaml", as_existing(created_slice(capsys, manifests)))

    status, out, err = run(capsys, "-f", str(manifests), "-f", str(existing))
    assert (status, out) == (0, "")
    assert err == "plan: shop/web: up to date, no writes\n"

    status, out, _ = run(capsys, "-f", str(manifests), "-f", str(existing), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=0 update=0 delete=0 endpoints=2 slices=1\n")


def test_readiness_flip_is_one_update(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    existing = as_existing(created_slice(capsys, manifests))
    now = write(
        tmp_path / "now.yaml",
        service(),
        node(),
        pod("web-1", "10.0.0.1"),
        pod("web-2", "10.0.0.2", ready=True),
        existing,
    )

    status, out, _ = run(capsys, "-f", str(now))
    assert status == 0
    [(comment, document)] = writes(out)
    assert comment == "# update shop/web-abcde"
    assert document["metadata"]["name"] == "web-abcde"
    assert document["metadata"]["resourceVersion"] == "41"
    assert [e["conditions"]["ready"] for e in document["endpoints"]] == [True, True]

    status, out, _ = run(capsys, "-f", str(now), "-o", "diff")
    assert status == 0
    lines = out.splitlines()
    assert lines[:2] == ["--- a/shop/web-abcde", "+++ b/shop/web-abcde"]
    changed = [line for line in lines[2:] if line[:1] in "+-" and not line.startswith("@@")]
    assert changed == [
        "-    ready: false",
        "-    serving: false",
        "+    ready: true",
        "+    serving: true",
    ]

    status, out, _ = run(capsys, "-f", str(now), "-o", "summary")
    assert out == "shop/web  create=0 update=1 delete=0 endpoints=2 slices=1\n"


def test_existing_slices_are_filtered_as_the_operator_does(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    ours = as_existing(created_slice(capsys, manifests))
    upstream = as_existing(ours, "web-upstream")
    upstream["metadata"]["labels"][MANAGED_BY] = "endpointslice-controller.k8s.io"
    deleting = as_existing(ours, "web-deleting")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-02T04:00:00Z"
    other_service = as_existing(ours, "api-abcde")
    other_service["metadata"]["labels"][SERVICE_NAME] = "api"
    other_namespace = as_existing(ours, "web-elsewhere")
    other_namespace["metadata"]["namespace"] = "elsewhere"
    extra = write(tmp_path / "x.yaml", upstream, deleting, other_service, other_namespace)

    status, out, _ = run(capsys, "-f", str(manifests), "-f", str(extra), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=1 update=0 delete=0 endpoints=2 slices=1\n")

    # Only our own duplicate is reconciled away.
    duplicate = write(tmp_path / "dup.yaml", ours, as_existing(ours, "web-fghij"))
    status, out, _ = run(capsys, "-f", str(manifests), "-f", str(duplicate), "-o", "yaml")
    assert [comment for comment, _ in writes(out)] == ["# delete shop/web-fghij"]
    assert writes(out)[0][1] == {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-fghij", "namespace": "shop"},
    }


def test_controller_name_selects_which_slices_are_ours(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    existing = as_existing(created_slice(capsys, manifests))
    existing["metadata"]["labels"][MANAGED_BY] = "mine.example.com"
    slices = write(tmp_path / "slices.yaml", existing)

    # --managed-by as every other command calls it; --controller-name, its earlier name, too
    for flag in ("--managed-by", "--controller-name"):
        status, out, _ = run(
            capsys, "-f", str(manifests), "-f", str(slices), flag, "mine.example.com"
        )
        assert (status, out) == (0, "")

    status, out, err = run(capsys, "-f", str(manifests), "--managed-by", "not a label!")
    assert (status, out) == (2, "")
    assert err.startswith("plan: --managed-by: ")
    assert err.count("\n") == 1
    assert "--managed-by NAME" in _parser().format_help()
    assert "--controller-name" not in _parser().format_help()


def test_max_endpoints_per_slice(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    status, out, _ = run(capsys, "-f", str(manifests), "--max-endpoints-per-slice", "1")
    assert status == 0
    assert [comment for comment, _ in writes(out)] == ["# create shop/web-", "# create shop/web-"]

    status, out, err = run(capsys, "-f", str(manifests), "--max-endpoints-per-slice", "1001")
    assert (status, out) == (2, "")
    assert err.startswith("plan: --max-endpoints-per-slice: ")
    assert err.count("\n") == 1


def test_service_selection(
    capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
) -> None:
    more = write(tmp_path / "more.yaml", service("api"), service("web", namespace=None))

    status, out, _ = run(capsys, "-f", str(manifests), "-f", str(more), "-o", "summary")
    assert status == 0
    assert out.splitlines() == [
        "shop/web     create=1 update=0 delete=0 endpoints=2 slices=1",
        "shop/api     create=1 update=0 delete=0 endpoints=0 slices=1",
        "default/web  create=1 update=0 delete=0 endpoints=0 slices=1",
    ]

    status, out, _ = run(
        capsys, "-f", str(manifests), "-f", str(more), "-o", "summary", "--service", "shop/api"
    )
    assert out == "shop/api  create=1 update=0 delete=0 endpoints=0 slices=1\n"

    status, out, _ = run(
        capsys, "-f", str(more), "-o", "summary", "--service", "web", "-n", "default"
    )
    assert out == "default/web  create=1 update=0 delete=0 endpoints=0 slices=1\n"

    status, out, err = run(capsys, "-f", str(manifests), "--service", "shop/nope")
    assert (status, out, err) == (
        2,
        "",
        "plan: --service shop/nope: no such Service in the input\n",
    )


def test_opt_in(capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path) -> None:
    existing = as_existing(created_slice(capsys, manifests))
    not_opted = write(
        tmp_path / "svc.yaml", service(opted_in=False), node(), pod("web-1", "10.0.0.1")
    )

    status, out, err = run(capsys, "-f", str(not_opted), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=1 update=0 delete=0 endpoints=1 slices=1\n")
    assert (
        'plan: shop/web: not opted in (it has no endpointslice-operator.io/enabled: "true"' in err
    )

    elsewhere = service()
    elsewhere["metadata"]["labels"]["service.kubernetes.io/endpoint-controller-name"] = "other"
    path = write(tmp_path / "elsewhere.yaml", elsewhere, node(), pod("web-1", "10.0.0.1"))
    status, out, err = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=1 update=0 delete=0 endpoints=1 slices=1\n")
    assert "label names 'other'); planned as if it were" in err

    slices = write(tmp_path / "slices.yaml", existing)
    status, out, _ = run(capsys, "-f", str(not_opted), "-f", str(slices), "--opted-in-only")
    assert status == 0
    assert [comment for comment, _ in writes(out)] == ["# delete shop/web-abcde"]


@pytest.mark.parametrize(
    ("spec", "skipped"),
    [
        pytest.param({"type": "ExternalName", "externalName": "x.example"}, "external-name"),
        pytest.param({"ports": [{"port": 80}]}, "no-selector"),
    ],
)
def test_services_the_operator_does_not_manage_lose_our_slices(
    capsys: pytest.CaptureFixture[str],
    manifests: Path,
    tmp_path: Path,
    spec: dict[str, Any],
    skipped: str,
) -> None:
    existing = as_existing(created_slice(capsys, manifests))
    path = write(tmp_path / "svc.yaml", service(spec=spec), existing)
    status, out, _ = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, f"shop/web  create=0 update=0 delete=1 skipped={skipped}\n")


def test_selector_annotation_and_invalid_selector(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    svc = service(
        spec={
            "clusterIP": "10.96.0.10",
            "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}],
        }
    )
    svc["metadata"]["annotations"]["endpointslice-operator.io/selector"] = "app in (web, api)"
    path = write(
        tmp_path / "a.yaml", svc, node(), pod("web-1", "10.0.0.1"), pod("x", "10.0.0.3", app="api")
    )
    status, out, _ = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=1 update=0 delete=0 endpoints=2 slices=1\n")

    svc["metadata"]["annotations"]["endpointslice-operator.io/selector"] = "app in ("
    path = write(tmp_path / "b.yaml", svc)
    status, out, err = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=0 update=0 delete=0 skipped=invalid selector\n")
    assert "plan: shop/web: not publishing EndpointSlices: " in err


def test_plan_errors_and_events_are_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    svc = service()
    svc["metadata"]["annotations"]["service.kubernetes.io/topology-mode"] = "Auto"
    path = write(tmp_path / "a.yaml", svc, node(), pod("web-1", "10.0.0.1", node="node-gone"))
    status, out, err = run(capsys, "-f", str(path), "-o", "summary")
    assert status == 0
    assert out == "shop/web  create=1 update=0 delete=0 endpoints=0 slices=1 errors=1\n"
    assert "plan: shop/web: error: skipping Pod web-1 for Service shop/web: Node node-gone" in err
    assert "plan: shop/web: event Warning TopologyAwareHintsDisabled: " in err


def test_lists_json_and_default_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    svc = service(namespace=None)
    item = pod("web-1", "10.0.0.1")
    item.pop("kind")
    item["metadata"]["namespace"] = "default"
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [item]}
    (tmp_path / "all.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [svc, node(), pods]})
    )
    status, out, _ = run(capsys, "-f", str(tmp_path / "all.json"), "-o", "summary")
    assert (status, out) == (0, "default/web  create=1 update=0 delete=0 endpoints=1 slices=1\n")


def test_directories(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    top = tmp_path / "manifests"
    (top / "pods").mkdir(parents=True)
    write(top / "10-service.yml", service(), node())
    write(top / "pods" / "web-1.yaml", pod("web-1", "10.0.0.1"))
    (top / "README.md").write_text("# not a manifest\n")

    status, out, _ = run(capsys, "-f", str(top), "-o", "summary")
    assert out == "shop/web  create=1 update=0 delete=0 endpoints=0 slices=1\n"
    status, out, _ = run(capsys, "-f", str(top), "-R", "-o", "summary")
    assert out == "shop/web  create=1 update=0 delete=0 endpoints=1 slices=1\n"

    (tmp_path / "empty").mkdir()
    status, out, err = run(capsys, "-f", str(tmp_path / "empty"))
    assert (status, out) == (2, "")
    assert err.startswith(f"plan: {tmp_path / 'empty'}: no manifests in this directory")


BAD_INPUTS = {
    "invalid yaml": ("a: [1, 2\n", "not valid YAML or JSON at line 2, column 1"),
    "scalar document": ("just a string\n", "document 1: expected a Kubernetes object, found a str"),
    "no kind": ("apiVersion: v1\nmetadata: {name: x}\n", "document 1: the object has no kind"),
    "no name": (
        "apiVersion: v1\nkind: Service\nmetadata: {}\n",
        "the Service has no metadata.name",
    ),
    "no metadata": ("apiVersion: v1\nkind: Pod\n", "document 1: the Pod has no metadata"),
    "items not a list": ("kind: List\nitems: 3\n", "List.items is not a list"),
    "bad item": ("kind: List\nitems: [3]\n", "item 0: expected a Kubernetes object, found a int"),
}


@pytest.mark.parametrize(("text", "message"), BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    status, out, err = run(capsys, "-f", str(path))
    assert (status, out) == (2, "")
    assert err.startswith(f"plan: {path}")
    assert message in err
    assert err.count("\n") == 1


def test_unreadable_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, err = run(capsys, "-f", str(tmp_path / "missing.yaml"))
    assert (status, out, err) == (
        2,
        "",
        f"plan: {tmp_path / 'missing.yaml'}: No such file or directory\n",
    )

    binary = tmp_path / "image.yaml"
    binary.write_bytes(b"\xff\xfe\x00binary")
    status, out, err = run(capsys, "-f", str(binary))
    assert (status, err) == (2, f"plan: {binary}: not a text file (expected UTF-8 YAML or JSON)\n")


def test_other_kinds_are_ignored(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    beta_slice = {"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice"}
    path = write(tmp_path / "a.yaml", deployment, beta_slice)
    status, out, err = run(capsys, "-f", str(path))
    assert (status, out, err) == (0, "", "plan: no Services or EndpointSelectors in the input\n")


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "--help")
    assert status == 0
    assert "--max-endpoints-per-slice" in out
    status, _, err = run(capsys)
    assert status == 2
    assert "-f/--filename" in err
    status, _, err = run(capsys, "-f", "x.yaml", "-o", "json")
    assert status == 2
    assert "invalid choice: 'json'" in err


def test_dispatched_by_the_cli(capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
    assert cli_main(["plan", "-f", str(manifests), "-o", "summary"]) == 0
    assert capsys.readouterr().out.startswith("shop/web  create=1")


def test_standard_input_in_a_real_process(manifests: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "endpointslice_operator", "plan", "-f", "-", "-o", "summary"],
        input=manifests.read_text(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (
        0,
        "shop/web  create=1 update=0 delete=0 endpoints=2 slices=1\n",
    )
    assert "Traceback" not in completed.stderr


def test_standard_input_read_once(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "-f", "-", "-f", "-")
    assert (status, err) == (2, "plan: -: standard input can only be read once\n")


def test_reconciler_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    svc = service()
    svc["spec"]["trafficDistribution"] = "PreferSameNode"
    path = write(tmp_path / "a.yaml", svc, node(), pod("web-1", "10.0.0.1"))

    def hints(*options: str) -> object:
        status, out, _ = run(capsys, "-f", str(path), *options)
        assert status == 0
        [(_, document)] = writes(out)
        return document["endpoints"][0].get("hints")

    assert hints() == {"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-a"}]}
    assert hints("--no-prefer-same-traffic-distribution") is None

    svc["spec"].pop("trafficDistribution")
    svc["metadata"]["annotations"]["service.kubernetes.io/topology-mode"] = "Auto"
    write(tmp_path / "a.yaml", svc, node(), node("node-b", "zone-b"), pod("web-1", "10.0.0.1"),
          pod("web-2", "10.0.0.2", node="node-b"))  # fmt: skip
    assert hints() == {"forZones": [{"name": "zone-a"}]}
    assert hints("--no-topology-hints") is None


def test_yaml_flow_mapping_is_not_mistaken_for_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "{apiVersion: v1, kind: Service, metadata: {name: web, namespace: shop},"
        " spec: {selector: {app: web}, clusterIP: 10.96.0.10, ports: [{port: 80}]}}\n"
    )
    status, out, _ = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, "shop/web  create=1 update=0 delete=0 endpoints=0 slices=1\n")


# --- secondary networks ------------------------------------------------------------------------


def _readme_command(text: str) -> str:
    from tests.readme_commands import RUN_BY, all_commands, readme

    assert text in all_commands(readme()), text
    assert RUN_BY[text].endswith(
        ("::test_readme_secondary_network_examples", "::test_readme_endpoint_selector_example")
    )
    return text


def test_readme_secondary_network_examples() -> None:
    """The README's two plan commands, run as written (from the repository root, with the
    virtualenv's bin on PATH as after ``source .venv/bin/activate``)."""
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(root)}

    def sh(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-e", "-c", _readme_command(command)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    multus = sh("endpointslice-operator plan -f docs/examples/multus.yaml -o summary")
    assert multus.returncode == 0, multus.stderr
    assert (multus.stdout + multus.stderr).splitlines() == [
        "default/storage  create=1 update=0 delete=0 endpoints=2 slices=1 left_out=1",
        "plan: default/storage: addresses from the Multus network default/storage-net "
        "(pod network-status)",
        "plan: default/storage: left out: default/storage-2 (not attached to network "
        "default/storage-net)",
    ]
    # The README shows this output verbatim.
    readme_text = (root / "README.md").read_text(encoding="utf-8")
    assert "```text\n" + multus.stdout + multus.stderr + "```" in readme_text

    dra = sh("endpointslice-operator plan -f docs/examples/dra.yaml")
    assert dra.returncode == 0, dra.stderr
    (document,) = [d for d in yaml.safe_load_all(dra.stdout) if d]
    assert [(e["addresses"], e["targetRef"]["name"]) for e in document["endpoints"]] == [
        (["192.168.60.3"], "fast-0")
    ]
    assert document["ports"] == [{"name": "rdma", "port": 4791, "protocol": "UDP"}]
    labels = document["metadata"]["labels"]
    assert labels["service.kubernetes.io/service-proxy-name"] == "none"
    assert labels[MANAGED_BY] == "endpointslice-operator.io"
    assert (
        "plan: default/fast: left out: default/fast-1 (ResourceClaim fast-1-nic-q9w4z is not "
        "allocated yet)" in dra.stderr
    )


def test_network_annotations_in_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    svc = service()
    svc["metadata"]["annotations"]["endpointslice-operator.io/network"] = "shop/net"
    attached = pod("web-0", "10.1.0.1")
    attached["metadata"]["annotations"] = {
        "k8s.v1.cni.cncf.io/network-status": json.dumps(
            [{"name": "net", "ips": ["192.168.1.1", "fd00::1"]}]
        )
    }
    malformed = pod("web-1", "10.1.0.2")
    malformed["metadata"]["annotations"] = {"k8s.v1.cni.cncf.io/network-status": "{"}
    path = write(tmp_path / "in.yaml", svc, attached, malformed, node())
    code, out, err = run(capsys, "-f", str(path))
    assert code == 0
    (created,) = [body for _, body in writes(out)]
    assert [e["addresses"] for e in created["endpoints"]] == [["192.168.1.1"]]
    assert "left out: shop/web-1 (malformed k8s.v1.cni.cncf.io/network-status annotation" in err

    both = service()
    both["metadata"]["annotations"]["endpointslice-operator.io/network"] = "shop/net"
    both["metadata"]["annotations"]["endpointslice-operator.io/device-network"] = "nic"
    path = write(tmp_path / "both.yaml", both, attached, node())
    code, out, err = run(capsys, "-f", str(path), "-o", "summary")
    assert code == 0
    assert "skipped=invalid network" in out
    assert "exclude each other" in err


# --- Endpoints and mirroring ---------------------------------------------------------------


def test_write_endpoints_plans_the_endpoints_object(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    status, out, _ = run(capsys, "-f", str(manifests), "--write-endpoints")
    assert status == 0
    comments = [comment for comment, _ in writes(out)]
    assert comments == ["# create shop/web-", "# create endpoints shop/web"]
    endpoints = writes(out)[1][1]
    assert endpoints["kind"] == "Endpoints"
    assert endpoints["metadata"]["labels"] == {
        "app": "web",
        MANAGED_BY: "endpointslice-operator.io",
        "endpoints.kubernetes.io/managed-by": "endpointslice-operator.io",
        "endpointslice.kubernetes.io/skip-mirror": "true",
    }
    [subset] = endpoints["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.1"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.2"]
    # then up to date; and without the setting or annotation, ours is deleted
    existing = dict(endpoints, metadata={**endpoints["metadata"], "resourceVersion": "3"})
    again = write(manifests.parent / "ep.yaml", existing)
    status, out, _ = run(
        capsys, "-f", str(manifests), "-f", str(again), "--write-endpoints", "-o", "summary"
    )
    assert out == "shop/web  create=1 update=0 delete=0 endpoints=2 slices=1\n"
    status, out, _ = run(capsys, "-f", str(manifests), "-f", str(again), "-o", "summary")
    assert out == (
        "shop/web  create=1 update=0 delete=0 endpoints_object=delete endpoints=2 slices=1\n"
    )


def test_someone_elses_endpoints_are_left_alone(
    capsys: pytest.CaptureFixture[str], manifests: Path
) -> None:
    foreign = write(
        manifests.parent / "foreign.yaml",
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web", "namespace": "shop"}},
    )
    status, out, err = run(capsys, "-f", str(manifests), "-f", str(foreign), "--write-endpoints")
    assert status == 0
    assert [comment for comment, _ in writes(out)] == ["# create shop/web-"]
    assert "ConflictingEndpoints" in err


def mirrored_service(**annotations: str) -> dict[str, Any]:
    body = service(
        "db",
        spec={"clusterIP": "10.96.0.11", "ports": [{"port": 5432, "protocol": "TCP"}]},
    )
    body["metadata"]["annotations"].update(annotations)
    return body


def test_source_endpoints_mirrors_the_endpoints_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "db.yaml",
        mirrored_service(**{"endpointslice-operator.io/source": "endpoints"}),
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "db", "namespace": "shop", "uid": "ep-uid"},
            "subsets": [
                {
                    "addresses": [{"ip": "192.0.2.10"}],
                    "notReadyAddresses": [{"ip": "192.0.2.11"}],
                    "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
                }
            ],
        },
    )
    status, out, err = run(capsys, "-f", str(path))
    assert status == 0
    [(comment, created)] = writes(out)
    assert comment == "# create shop/db-"
    assert created["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    assert [(e["addresses"], e["conditions"]) for e in created["endpoints"]] == [
        (["192.0.2.10"], {"ready": True}),
        (["192.0.2.11"], {"ready": False}),
    ]
    assert "mirrored from Endpoints shop/db" in err


def test_source_endpoints_with_a_selector_conflicts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "db.yaml",
        mirrored_service(
            **{
                "endpointslice-operator.io/source": "endpoints",
                "endpointslice-operator.io/selector": "app=db",
            }
        ),
    )
    status, out, err = run(capsys, "-f", str(path), "-o", "summary")
    assert (status, out) == (0, "shop/db  create=0 update=0 delete=0 skipped=conflicting source\n")
    assert "ConflictingSource" in err


def test_the_readmes_example_is_defaulted_as_the_api_server_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """deploy/examples/web.yaml names no cluster IP and no IP families: the API server would
    allocate a cluster IP and make it SingleStack of the cluster's family, so the plan is one
    IPv4 slice without the headless label (it was a dual-stack pair of headless placeholders),
    and standard error says what was assumed."""
    example = str(Path(__file__).resolve().parents[2] / "deploy" / "examples" / "web.yaml")
    code, out, err = run(capsys, "-f", example)
    assert code == 0
    created = [obj for _, obj in writes(out)]
    assert [s["addressType"] for s in created] == ["IPv4"]
    assert "service.kubernetes.io/headless" not in created[0]["metadata"]["labels"]
    assert err.splitlines() == [
        "plan: default/web: defaulted as the API server would: a cluster IP allocated (not "
        "headless); ipFamilyPolicy SingleStack, ipFamilies [IPv4] (--ip-family IPv4)"
    ]
    code, out, err = run(capsys, "-f", example, "--ip-family", "IPv6")
    assert [obj["addressType"] for op, obj in writes(out)] == ["IPv6"]
    assert "ipFamilies [IPv6]" in err


def test_a_service_that_says_it_all_is_planned_as_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a selectorless headless Service: the API server makes it dual-stack, so it is left so
    headless = service("web", spec={"clusterIP": "None", "ports": [{"port": 80}]})
    headless["metadata"]["annotations"]["endpointslice-operator.io/selector"] = "app=web"
    code, out, err = run(capsys, "-f", str(write(tmp_path / "m.yaml", headless)))
    assert code == 0
    assert sorted(obj["addressType"] for _, obj in writes(out)) == ["IPv4", "IPv6"]
    assert "defaulted" not in err
    code, out, err = run(capsys, "-f", str(write(tmp_path / "n.yaml", service("web"))))
    assert code == 0 and "defaulted" not in err


def test_plan_accepts_endpoint_selector_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    from endpointslice_operator.commands.plan import main as plan_main

    assert plan_main(["-f", "docs/examples/endpointselector.yaml", "-o", "summary"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "endpointselector:default/checkout  create=1 update=0 delete=0 endpoints=2 slices=1\n"
    )
    assert plan_main(["-f", "docs/examples/endpointselector.yaml"]) == 0
    (document,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    labels = document["metadata"]["labels"]
    assert labels["endpointslice-operator.io/endpoint-selector-name"] == "checkout"
    assert "kubernetes.io/service-name" not in labels
    assert labels["kubernetes.io/endpoint-selector-name"] == "checkout"
    assert labels["gateway.example.com/backend"] == "true"  # the EndpointSelector's own label
    assert document["metadata"]["ownerReferences"][0]["kind"] == "EndpointSelector"
    # The canary is left out by matchExpressions; the named port resolves to 9000.
    assert [ep["targetRef"]["name"] for ep in document["endpoints"]] == [
        "checkout-0",
        "checkout-1",
    ]
    assert document["ports"][0]["port"] == 9000
    assert plan_main(["-f", "docs/examples/endpointselector.yaml", "--no-kep6116-labels"]) == 0
    (document,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert "kubernetes.io/endpoint-selector-name" not in document["metadata"]["labels"]


def test_plan_reports_an_invalid_endpoint_selector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from endpointslice_operator.commands.plan import main as plan_main

    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: endpointslice-operator.io/v1alpha1\nkind: EndpointSelector\n"
        "metadata: {name: bad}\nspec:\n  selector: {matchLabels: {app: x}}\n"
        "  ports: [{name: a, port: 80, protocol: ICMP}]\n",
        encoding="utf-8",
    )
    assert plan_main(["-f", str(manifest), "--endpoint-selector", "bad", "-o", "summary"]) == 0
    captured = capsys.readouterr()
    assert "skipped=UnknownProtocol" in captured.out
    assert "not publishing EndpointSlices: spec.ports[0].protocol 'ICMP'" in captured.err
    assert plan_main(["-f", str(manifest), "--endpoint-selector", "nope"]) == 2


def test_readme_endpoint_selector_example() -> None:
    """The README's EndpointSelector plan command, run as written."""
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(root)}
    command = "endpointslice-operator plan -f docs/examples/endpointselector.yaml -o summary"
    done = subprocess.run(
        ["bash", "-e", "-c", _readme_command(command)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "endpointselector:default/checkout  create=1 update=0 delete=0 endpoints=2 slices=1"
    ]


ENABLED = "endpointslice-operator.io/enabled"


@pytest.mark.parametrize(
    ("annotations", "spec", "says"),
    [
        pytest.param(
            {ENABLED: "True"},
            None,
            f"{ENABLED} is 'True', and only the exact string \"true\" opts in. "
            f'Set {ENABLED}: "true".',
            id="True",
        ),
        pytest.param({ENABLED: " true"}, None, f"{ENABLED} is ' true'", id="space"),
        pytest.param(
            {"endpointslice-operator.io/enable": "true"},
            None,
            f"the annotation endpointslice-operator.io/enable is not one of ours; "
            f"rename it to {ENABLED}.",
            id="enable",
        ),
        pytest.param(
            {ENABLED: "true"},
            {"ports": [{"port": 80}]},
            "opted in but has neither spec.selector nor the annotation "
            "endpointslice-operator.io/selector",
            id="selectorless",
        ),
    ],
)
def test_near_misses_of_the_opt_in_are_said_as_the_operator_says_them(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    annotations: dict[str, str],
    spec: dict[str, Any] | None,
    says: str,
) -> None:
    body = service(opted_in=False, spec=spec)
    body["metadata"]["annotations"] = annotations
    path = write(tmp_path / "svc.yaml", body, node(), pod("web-1", "10.0.0.1"))
    for extra in ((), ("--opted-in-only",)):
        _, _, err = run(capsys, "-f", str(path), "-o", "summary", *extra)
        assert "event Warning OptInIgnored: " in err
        assert says in err
        assert "it has no endpointslice-operator.io/enabled" not in err


def test_a_plain_service_is_no_near_miss(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    body = service(opted_in=False)
    body["metadata"]["annotations"] = {ENABLED: "false", "example.com/enable": "true"}
    path = write(tmp_path / "svc.yaml", body, node(), pod("web-1", "10.0.0.1"))
    _, _, err = run(capsys, "-f", str(path), "-o", "summary")
    assert "OptInIgnored" not in err
    assert f'it has no {ENABLED}: "true" annotation' in err
