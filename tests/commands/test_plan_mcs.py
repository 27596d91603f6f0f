"""``endpointslice-operator plan --mcs-cluster ID=PATH``: the writes this cluster's operator
would make for Multi-Cluster Services imports, from each cluster's manifests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.reconciler.mcs import derived_service_name
from tests.commands.test_plan import run, write, writes

MCS = "multicluster.x-k8s.io/v1beta1"
OURS = "endpointslice-operator.io"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
DERIVED = derived_service_name("shop", "web")


def export(created: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return {
        "apiVersion": MCS,
        "kind": "ServiceExport",
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": created},
    }


def exported_service(
    ports: list[tuple[str, int]] | None = None, *, headless: bool = False
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "selector": {"app": "web"},
            "clusterIP": "None" if headless else "10.96.0.10",
            "ipFamilies": ["IPv4"],
            "ports": [
                {"name": n, "port": p, "targetPort": p + 8000, "protocol": "TCP"}
                for n, p in (ports or [("http", 80)])
            ],
        },
    }


def source_slice(
    addresses: list[str], ports: list[tuple[str, int]] | None = None, name: str = "web-abc"
) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {
                "kubernetes.io/service-name": "web",
                MANAGED_BY: "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": [a], "conditions": {"ready": True}, "nodeName": "n1"} for a in addresses
        ],
        "ports": [
            {"name": n, "port": p + 8000, "protocol": "TCP"} for n, p in (ports or [("http", 80)])
        ],
    }


def namespace(name: str = "shop") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def cluster(tmp_path: Path, name: str, *documents: dict[str, Any]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    write(folder / "objects.yaml", *documents)
    return f"{name}={folder}"


def notes(err: str) -> list[str]:
    return [line.removeprefix("plan: serviceimport:shop/web: ") for line in err.splitlines()]


def test_two_clusters_with_differing_ports_union_and_port_conflict_on_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    east = cluster(
        tmp_path,
        "east",
        export("2026-01-01T00:00:00Z"),
        exported_service([("http", 80)]),
        source_slice(["10.1.0.1", "10.1.0.2"]),
    )
    west = cluster(
        tmp_path,
        "west",
        export("2026-01-02T00:00:00Z"),
        exported_service([("http", 80), ("metrics", 90)]),
        source_slice(["10.2.0.1"], [("http", 80), ("metrics", 90)]),
    )
    local = write(tmp_path / "local.yaml", namespace())
    status, out, err = run(
        capsys, "-f", str(local), "--cluster-id", "here", "--mcs-cluster", east,
        "--mcs-cluster", west,
    )  # fmt: skip
    assert status == 0, err
    found = notes(err)
    # As docs/plan-command.md shows it: the ports are the union, not the oldest export's.
    assert (
        "import ClusterSetIP, ports [http/TCP/80, metrics/TCP/90], clusters [east, west], "
        "conflict PortConflict: ports of west differ from east's: the import has the union of "
        "the ports (merged by name, oldest export first)"
    ) in found, found
    for name in ("east", "west"):
        assert (
            f"ServiceExport of {name}: Valid=True/Valid, Ready=True/Ready, "
            "Conflict=True/PortConflict"
        ) in found
    documents = writes(out)
    comments = [comment for comment, _ in documents]
    assert comments[:2] == ["# create serviceimport shop/web", f"# create service shop/{DERIVED}"]
    # The import's status comes last, once its slices are written: they exist then.
    assert comments[-1] == "# status serviceimport shop/web"
    created_import = documents[0][1]
    assert created_import["metadata"]["labels"][MANAGED_BY] == OURS
    assert [p["name"] for p in created_import["spec"]["ports"]] == ["http", "metrics"]
    assert documents[-1][1]["status"] == {
        "clusters": [{"cluster": "east"}, {"cluster": "west"}],
        "endpointSliceObjects": "Present",
    }
    derived = documents[1][1]
    assert derived["spec"]["type"] == "ClusterIP" and "clusterIP" not in derived["spec"]
    slices = [body for comment, body in documents[2:-1]]
    assert all(comment.startswith("# create shop/") for comment in comments[2:-1])
    by_cluster = {
        s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"]: s for s in slices
    }
    assert set(by_cluster) == {"east", "west"}
    east_slice, west_slice = by_cluster["east"], by_cluster["west"]
    assert [e["addresses"] for e in east_slice["endpoints"]] == [["10.1.0.1"], ["10.1.0.2"]]
    assert "nodeName" not in east_slice["endpoints"][0]
    assert east_slice["metadata"]["labels"]["kubernetes.io/service-name"] == DERIVED
    # west serves the union's metrics port; east does not expose it, so none of its traffic.
    assert [p["name"] for p in east_slice["ports"]] == ["http"]
    assert sorted(p["name"] for p in west_slice["ports"]) == ["http", "metrics"]
    # The summary counts the same writes.
    status, out, _ = run(
        capsys, "-f", str(local), "--cluster-id", "here", "--mcs-cluster", east,
        "--mcs-cluster", west, "-o", "summary",
    )  # fmt: skip
    assert out == (
        "serviceimport:shop/web  create=2 update=0 delete=0 service=create "
        "serviceimport=create+status\n"
    )
    # The view: each endpoint with its source cluster.
    status, out, _ = run(
        capsys, "-f", str(local), "--cluster-id", "here", "--mcs-cluster", east,
        "--mcs-cluster", west, "-o", "view",
    )  # fmt: skip
    assert status == 0
    assert "10.1.0.1" in out and "east" in out and "10.2.0.1" in out and "west" in out


def test_headless_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    east = cluster(
        tmp_path, "east", export(), exported_service(headless=True), source_slice(["10.1.0.1"])
    )
    local = write(tmp_path / "local.yaml", namespace())
    status, out, err = run(capsys, "-f", str(local), "--mcs-cluster", east)
    assert status == 0, err
    documents = dict(writes(out))
    assert documents["# create serviceimport shop/web"]["spec"]["type"] == "Headless"
    assert "ips" not in documents["# create serviceimport shop/web"]["spec"]
    assert documents[f"# create service shop/{DERIVED}"]["spec"]["clusterIP"] == "None"
    assert "spec.ips follow" not in err  # no cluster IP to wait for
    # No --cluster-id and no ClusterProperty: said once, the peer's export still imported.
    assert "this cluster has no id" in err


def stored(documents: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The objects of a first plan as the API server would store them (an allocated derived
    Service, the ServiceImport with its ips, uids, names)."""
    objects: list[dict[str, Any]] = []
    text = json.dumps([body for _, body in documents]).replace(
        "<uid of the new ServiceImport>", "import-uid"
    )
    bodies: list[dict[str, Any]] = json.loads(text)
    service_import, derived, *slices, status = bodies
    service_import["metadata"]["uid"] = "import-uid"
    service_import["status"] = status["status"]
    service_import["spec"]["ips"] = ["10.96.7.7"]
    service_import["spec"]["ipFamilies"] = ["IPv4"]
    derived["spec"].update(clusterIP="10.96.7.7", clusterIPs=["10.96.7.7"])
    for index, body in enumerate(slices):
        body["metadata"]["name"] = f"web-imported-{index}"
        body["metadata"].pop("generateName", None)
    objects += [service_import, derived, *slices]
    return objects


def test_an_import_already_right_is_no_write_and_a_gone_cluster_is_deleted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    east = cluster(tmp_path, "east", export(), exported_service(), source_slice(["10.1.0.1"]))
    west = cluster(
        tmp_path, "west", export("2026-01-03T00:00:00Z"), exported_service(),
        source_slice(["10.2.0.1"]),
    )  # fmt: skip
    local = write(tmp_path / "local.yaml", namespace())
    status, out, err = run(capsys, "-f", str(local), "--mcs-cluster", east, "--mcs-cluster", west)
    assert status == 0, err
    existing = write(tmp_path / "existing.yaml", namespace(), *stored(writes(out)))
    status, out, err = run(
        capsys, "-f", str(existing), "--mcs-cluster", east, "--mcs-cluster", west
    )
    assert status == 0
    assert out == ""
    assert "up to date, no writes" in notes(err)
    # west no longer exports: its imported slice goes, the import keeps east only.
    status, out, err = run(capsys, "-f", str(existing), "--mcs-cluster", east)
    assert status == 0, err
    comments = [comment for comment, _ in writes(out)]
    assert comments == [
        "# delete shop/web-imported-1",
        "# status serviceimport shop/web",
    ], comments
    assert "slices from west: create=0 update=0 delete=1" in notes(err)
    status, out, _ = run(capsys, "-f", str(existing), "--mcs-cluster", east, "-o", "diff")
    assert "--- a/serviceimport:shop/web/status\n" in out
    assert "-  - cluster: west\n" in out
    assert "--- a/shop/web-imported-1\n+++ /dev/null\n" in out
    # Nobody exports any more: the import, its derived Service and slices are deleted.
    status, out, err = run(
        capsys, "-f", str(existing), "--mcs-cluster", cluster(tmp_path, "empty", namespace())
    )
    assert status == 0, err
    assert [comment for comment, _ in writes(out)] == [  # in the operator's order
        "# delete shop/web-imported-0",
        "# delete shop/web-imported-1",
        f"# delete service shop/{DERIVED}",
        "# delete serviceimport shop/web",
    ]


def test_local_export_and_namespace_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # This cluster exports too: its own endpoints are one more source; its export's status
    # is written. Another namespace exists here, not shop: nothing is imported.
    local = write(
        tmp_path / "local.yaml", export(), exported_service(), source_slice(["10.9.0.1"]),
        namespace("shop"),
    )  # fmt: skip
    status, out, err = run(capsys, "-f", str(local), "--cluster-id", "here", "--mcs-cluster",
                           cluster(tmp_path, "east", namespace()))  # fmt: skip
    assert status == 0, err
    documents = writes(out)
    slices = [b for c, b in documents if c.startswith("# create shop/")]
    assert [
        s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"] for s in slices
    ] == ["here"]
    conditions = [b for c, b in documents if c == "# status serviceexport shop/web"]
    assert [c["type"] for c in conditions[0]["status"]["conditions"]] == [
        "Valid",
        "Ready",
        "Conflict",
    ]
    other = write(tmp_path / "other.yaml", export(), exported_service(), namespace("elsewhere"))
    status, out, err = run(capsys, "-f", str(other), "--cluster-id", "here", "--mcs-cluster",
                           cluster(tmp_path, "west", namespace()))  # fmt: skip
    assert status == 0, err
    assert "namespace shop does not exist here: no import" in notes(err)
    comments = [comment for comment, _ in writes(out)]
    assert comments == ["# status serviceexport shop/web"]
    assert "Ready=False/Pending" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mcs-cluster", "east"], "--mcs-cluster east: expected ID=PATH"),
        (["--mcs-cluster", "East=x"], "'East' is not a valid cluster id"),
        (["--mcs-cluster", "east=/nonexistent/x.yaml"], "/nonexistent/x.yaml: No such file"),
        (["--cluster-id", "here"], "--cluster-id: only with --mcs-cluster"),
        (["--cluster-id=-x-", "--mcs-cluster", "east=E"], "--cluster-id -x-: not a valid"),
        (["--mcs-cluster", "east=E", "--mcs-cluster", "east=E"], "the cluster id is given twice"),
        (["--mcs-cluster", "east=E", "--service", "shop/nope"], "--service shop/nope: no such"),
    ],
)
def test_bad_input_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    local = write(tmp_path / "local.yaml", namespace())
    peer = write(tmp_path / "east.yaml", export(), exported_service())
    argv = [a.replace("=E", f"={peer}") for a in argv]
    status, out, err = run(capsys, "-f", str(local), *argv)
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith("plan: "), err
    assert message in err
