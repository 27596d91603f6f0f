"""docs/multicluster.md's "Two clusters from scratch", run as written on two control planes.

Each command of the section's ``sh`` blocks runs with bash, a real helm binary
(``../shared/envtest/helm``) and kubectl, against a kubeconfig with contexts ``east`` and
``west``; the blocks shown for one cluster run again with the two names swapped, as the text
says. Afterwards each cluster's peer kubeconfig reads the other cluster and can write nothing
there, and each operator Deployment is pointed at the other cluster's kubeconfig Secret.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_readme_commands import bash
from tests.readme_commands import ROOT, block_commands
from tests.realcluster.conftest import assets_dir
from tests.realcluster.helm import helm_env, helm_folder
from tests.realcluster.kube import Kube
from tests.realcluster.mcs_clusters import extra_plane

pytestmark = [pytest.mark.realcluster, pytest.mark.timeout(600)]

DOC = ROOT / "docs" / "multicluster.md"
SECTION = "## Two clusters from scratch"
DEPLOYMENTS = "/apis/apps/v1/namespaces/eso/deployments"


def walkthrough_blocks() -> list[list[str]]:
    """The commands of each ``sh`` block of the section, in order."""
    text = DOC.read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [block_commands(block) for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def swapped(command: str) -> str:
    """The same command for the other cluster ("east" and "west" exchanged)."""
    return re.sub(r"\b(east|west)\b", lambda m: "west" if m[1] == "east" else "east", command)


@pytest.fixture(scope="module")
def helm_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return helm_folder(tmp_path_factory.mktemp("helm-bin"))


@pytest.fixture(scope="module")
def two_planes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two fresh control planes ("east" and "west"): the chart installs the CRDs itself."""
    with (
        extra_plane(assets_dir(), "walk-east") as east,
        extra_plane(assets_dir(), "walk-west") as west,
    ):
        yield {"east": east.kubeconfig, "west": west.kubeconfig}


def merged_kubeconfig(planes: dict[str, Path], path: Path) -> None:
    """One kubeconfig with a cluster, user and context named after each plane."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": []}
    merged["contexts"] = []
    for name, kubeconfig in planes.items():
        one = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        merged["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": one["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    merged["current-context"] = "east"
    path.write_text(yaml.safe_dump(merged), encoding="utf-8")


async def test_two_clusters_from_scratch(
    two_planes: dict[str, Path], helm_bin: Path, tmp_path: Path
) -> None:
    first, second = walkthrough_blocks()
    assert any(c.startswith("helm --kube-context west install") for c in first)
    assert any(c.startswith("helm --kube-context east upgrade") for c in second)
    work = tmp_path / "work"
    work.mkdir()
    (work / "chart").symlink_to(ROOT / "chart")
    merged_kubeconfig(two_planes, work / "kubeconfig")
    env = helm_env(helm_bin, tmp_path / "helm", work / "kubeconfig")
    for block in (first, second):
        for command in [*block, *map(swapped, block)]:
            code, out, err = await bash(command, cwd=work, env=env)
            assert code == 0, f"{command}\n{out}\n{err}"

    for here, there in (("east", "west"), ("west", "east")):
        # The peer kubeconfig of `there`, as `here` holds it, reads and cannot write.
        peer_config = work / f"{there}-peer.kubeconfig"
        async with await Kube.load(peer_config) as peer:
            for path in (
                "/apis/multicluster.x-k8s.io/v1beta1/serviceexports",
                "/api/v1/services",
                "/apis/discovery.k8s.io/v1/endpointslices",
            ):
                assert (await peer.status_of("GET", path))[0] == 200, path
            identity = await peer.get("/apis/about.k8s.io/v1beta1/clusterproperties")
            assert [item["spec"]["value"] for item in identity["items"]] == [there]
            service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}
            service["spec"] = {"ports": [{"port": 80}]}
            status, _ = await peer.status_of("POST", "/api/v1/namespaces/default/services", service)
            assert status == 403
        async with await Kube.load(two_planes[here]) as kube:
            secret = await kube.get(f"/api/v1/namespaces/eso/secrets/mcs-peer-{there}")
            assert set(secret["data"]) == {"kubeconfig"}
            deployment = await kube.get(f"{DEPLOYMENTS}/eso-endpointslice-operator")
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            flags = " ".join(container.get("args", []) + container.get("command", []))
            environment = {e["name"]: e.get("value", "") for e in container.get("env", [])}
            assert f"mcs-peer-{there}/kubeconfig" in flags + " ".join(environment.values())


def test_the_walkthrough_swaps_cleanly() -> None:
    # Every command names its cluster through `east`/`west`, so the swap is the other
    # cluster's command.
    for block in walkthrough_blocks():
        for command in block:
            assert swapped(swapped(command)) == command
            assert swapped(command) != command
