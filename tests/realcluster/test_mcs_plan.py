"""``plan --mcs-cluster`` against what the operators write on two real control planes: the
plan made from the clusters' objects before the operators run predicts the import they write,
and once they have written it, the plan made from the clusters' objects has no write left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from endpointslice_operator.commands.plan import main
from endpointslice_operator.testing.controlplane import ControlPlane
from tests.realcluster import objects as o
from tests.realcluster.kube import Kube, eventually
from tests.realcluster.mcs_clusters import (
    CLUSTER_PROPERTY,
    DEADLINE,
    MCS,
    by_source,
    conditions,
    export,
    import_of,
    imported_slices,
)
from tests.realcluster.test_mcs import operators, prepare, settled

pytestmark = pytest.mark.realcluster


async def dump(client: Kube, ns: str, folder: Path, *, local: bool) -> Path:
    """The objects ``plan`` reads, as the API lists them (typed lists, one JSON file each)."""
    folder.mkdir()
    paths = [
        f"{MCS}/namespaces/{ns}/serviceexports",
        f"/api/v1/namespaces/{ns}/services",
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        CLUSTER_PROPERTY,
    ]
    if local:
        paths += [f"{MCS}/namespaces/{ns}/serviceimports", "/api/v1/namespaces"]
    for index, path in enumerate(paths):
        (folder / f"{index}.json").write_text(json.dumps(await client.get(path)))
    return folder


def plan(capsys: pytest.CaptureFixture[str], east: Path, west: Path) -> tuple[str, str]:
    status = main(["-f", str(east), "--mcs-cluster", f"west={west}"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return captured.out, captured.err


async def test_the_plan_predicts_the_import_and_is_empty_once_it_is_written(
    kube: Kube,
    west: Kube,
    west_plane: ControlPlane,
    ns: str,
    log_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await prepare(kube, west, ns)
    http = {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}
    grpc = {"name": "grpc", "port": 9090, "targetPort": 9090, "protocol": "TCP"}
    await o.service(kube, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[http])
    await o.pod(kube, ns, "web-0", "10.1.0.1", labels={"app": "web"})
    await o.service(west, ns, "web", annotations={o.SELECTOR: "app=web"}, ports=[http, grpc])
    await o.pod(west, ns, "web-0", "10.2.0.1", labels={"app": "web"})
    await export(kube, ns, "web")
    await export(west, ns, "web")
    east_cm, west_cm = operators(kube, west, west_plane, ns, log_dir)
    async with east_cm as east_op, west_cm:
        # Once the source slices exist (written by the operators), and before east's import:
        # the plan of east. Only the source slices are awaited; east's import side may have
        # run already, so the prediction is compared with what is there once settled.
        async def sources() -> bool:
            for client in (kube, west):
                body = await client.get(
                    f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                    labelSelector="kubernetes.io/service-name=web",
                )
                assert body["items"], "no source slice yet"
            return True

        await eventually(sources, timeout=DEADLINE)

        async def written() -> bool:
            body = await import_of(kube, ns)
            assert body["status"]["clusters"] == [{"cluster": "east"}, {"cluster": "west"}]
            assert by_source(await imported_slices(kube, ns, "web")) == {
                "east": {"10.1.0.1"},
                "west": {"10.2.0.1"},
            }
            exported = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")
            assert conditions(exported).get("Ready") == ("True", "Ready"), exported
            return True

        await eventually(written, timeout=DEADLINE)
        await eventually(lambda: settled(east_op), timeout=DEADLINE)
    actual = await import_of(kube, ns)
    actual_slices = await imported_slices(kube, ns, "web")
    actual_export = await kube.get(f"{MCS}/namespaces/{ns}/serviceexports/web")

    # With east's import and slices left out of its objects: the plan predicts them.
    east_dir = await dump(kube, ns, tmp_path / "east", local=True)
    west_dir = await dump(west, ns, tmp_path / "west", local=False)
    before = tmp_path / "east-before"
    before.mkdir()
    for path in east_dir.iterdir():
        body = json.loads(path.read_text())
        body["items"] = [
            item
            for item in body["items"]
            if body["kind"] != "ServiceImportList"
            and "multicluster.kubernetes.io/source-cluster"
            not in (item["metadata"].get("labels") or {})
            and not item["metadata"]["name"].startswith("derived-")
        ]
        (before / path.name).write_text(json.dumps(body))
    out, err = plan(capsys, before, west_dir)
    planned = [
        (chunk.partition("\n")[0], yaml.safe_load(chunk.partition("\n")[2]))
        for chunk in out.split("---\n")
    ]
    documents = dict(planned)  # by head: one ServiceImport, and its status
    predicted = documents["# create serviceimport " + f"{ns}/web"]
    assert predicted["spec"]["ports"] == actual["spec"]["ports"]
    assert predicted["spec"]["type"] == actual["spec"]["type"]
    status_write = documents[f"# status serviceimport {ns}/web"]
    assert status_write["status"]["clusters"] == actual["status"]["clusters"]
    slices = [body for head, body in planned if head.startswith(f"# create {ns}/")]
    assert by_source(slices) == by_source(actual_slices)
    assert sorted(
        (s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"], s["ports"])
        for s in slices
    ) == sorted(
        (s["metadata"]["labels"]["multicluster.kubernetes.io/source-cluster"], s["ports"])
        for s in actual_slices
    )
    assert (
        "ServiceExport of east: Valid=True/Valid, Ready=True/Ready, Conflict=True/PortConflict"
        in err
    )
    assert conditions(actual_export)["Conflict"] == ("True", "PortConflict")

    # With everything the operators wrote: nothing left to write.
    out, err = plan(capsys, east_dir, west_dir)
    assert out == "", err
    assert f"plan: serviceimport:{ns}/web: up to date, no writes" in err
