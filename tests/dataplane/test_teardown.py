"""What a run killed outright leaves behind is stopped by PID and deleted by namespace name by
the next one (``sweep_stale``), and nothing else is touched."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from endpointslice_operator.testing.dataplane import STATE_ROOT, sweep_stale
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster

pytestmark = pytest.mark.dataplane

OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from endpointslice_operator.testing.dataplane import Topology
    kube_proxy, kubeconfig, port, workdir = sys.argv[1:]
    topology = Topology(kube_proxy=Path(kube_proxy), kubeconfig=Path(kubeconfig),
                        api_port=int(port), workdir=Path(workdir), node_name="node-b")
    topology.start()
    topology.add_pod("left-behind")
    print(topology.prefix, flush=True)
    time.sleep(600)
    """
)


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited, its parent has not collected it yet


def test_a_killed_runs_processes_and_namespaces_are_swept(
    dc: DataplaneCluster, tmp_path: Path
) -> None:
    assert dc.plane is not None
    ours = dc.net.prefix
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(dc.assets / "kube-proxy"), str(dc.plane.kubeconfig),
         str(dc.plane.port), str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert owner.stdout is not None
        prefix = owner.stdout.readline().strip()
        assert prefix.startswith(f"esodp{owner.pid}x"), prefix
        left = {n for n in netns_names() if n.startswith(prefix + "-")}
        assert len(left) == 3  # node, client, the pod
        pids = [
            int(line.split()[0]) for line in (STATE_ROOT / prefix / "pids").read_text().splitlines()
        ]
        assert len(pids) == 4 and all(alive(pid) for pid in pids)  # 2 socat, kube-proxy, server
    finally:
        owner.send_signal(signal.SIGKILL)  # no finally, no atexit: as a CI job killed outright
        owner.wait()
    assert {n for n in netns_names() if n.startswith(prefix + "-")} == left

    assert sweep_stale() == [prefix]
    assert not [n for n in netns_names() if n.startswith(prefix + "-")]
    assert not [pid for pid in pids if alive(pid)]
    assert not (STATE_ROOT / prefix).exists()
    # The live run's own topology (its owner is this process) is left alone.
    assert {f"{ours}-node", f"{ours}-client"} <= netns_names()
    assert dc.net.rules("default/kubernetes:https") not in ("absent", "rejected")
