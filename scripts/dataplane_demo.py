"""``make dataplane-demo``: a real kube-proxy sends ``curl`` to the pods the operator publishes.

On Linux, as root, with ``KUBEBUILDER_ASSETS`` naming a folder with etcd, kube-apiserver,
kube-controller-manager and kube-proxy, this starts a control plane, the operator (``python -m
endpointslice_operator run``) and kube-proxy in iptables mode inside network namespaces of its
own (see ``endpointslice_operator/testing/dataplane.py``), then rolls a three-pod "Deployment"
from v1 to v2 the way a Deployment with ``maxSurge: 1, maxUnavailable: 0`` does, one pod at a
time: a new pod starts (not ready), turns ready, an old pod is deleted (Terminating for its grace
period, still serving), and is gone. After each step it prints the Service's EndpointSlice as
the operator wrote it and where 30 ``curl`` requests to the ClusterIP landed, and it keeps
requests flowing through the whole rollout: none may fail. Everything is stopped by PID and the
namespaces deleted by name at the end, also on Ctrl-C or an error. About 30 s.

There is no kubelet: the demo writes each pod's status (IP, Ready) as a kubelet would, and a
real HTTP server in each pod's namespace answers with the pod's name. Exit status 0 when every
request during the rollout was answered and the traffic followed each step, 1 otherwise, 2 when
the machine lacks something (the reason is printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

from endpointslice_operator.testing.controlplane import missing_assets
from endpointslice_operator.testing.dataplane import missing_requirements
from endpointslice_operator.testing.dataplane_cluster import DataplaneCluster

NAMESPACE = "demo"
APP = {"app": "web"}
REQUESTS = 30


class Demo:
    def __init__(self, dc: DataplaneCluster, replicas: int) -> None:
        self.dc, self.replicas = dc, replicas
        self.started = time.monotonic()
        self.key = ""
        self.url = ""
        self.failures: list[str] = []

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f}s] {text}", flush=True)

    def curl(self) -> Counter[str]:
        """``REQUESTS`` curls from the client namespace (fresh connection each)."""
        net = self.dc.net
        if shutil.which("curl") is None:
            return net.requests(self.url.split("//")[1].split("/")[0], 80, REQUESTS)
        return Counter(net.curl(self.url) for _ in range(REQUESTS))

    def show(self, expect: set[str]) -> None:
        """The operator's slice, and where the curls landed (which must be ``expect``)."""
        for item in self.dc.slices(self.key):
            for endpoint in item.get("endpoints") or []:
                c = endpoint.get("conditions", {})
                flags = ", ".join(k for k in ("ready", "serving", "terminating") if c.get(k))
                name = endpoint["targetRef"]["name"]
                self.say(f"    slice {item['metadata']['name']}: {name} "
                         f"{endpoint['addresses'][0]} [{flags or 'not serving'}]")  # fmt: skip
        tally = self.curl()
        answers = ", ".join(f"{name} x{count}" for name, count in sorted(tally.items()))
        self.say(f"    curl {self.url} x{REQUESTS}: {answers}")
        # Every answer from a pod that should get traffic, none failed (30 requests spread at
        # random over at most four pods: each is all but certain to be hit, which is shown).
        if not set(tally) <= expect:
            self.failures.append(f"expected answers from {sorted(expect)}, got {dict(tally)}")
            self.say(f"    UNEXPECTED: expected answers from {sorted(expect)}")

    def route(self, pods: list[str]) -> None:
        self.dc.wait_rules({self.key: self.dc.ips(*pods)})

    def run(self) -> int:
        dc = self.dc
        self.key = dc.opted_in("web", APP)
        cip = dc.cluster_ip(self.key)
        self.url = f"http://{cip}/"
        self.say(f"Service {NAMESPACE}/web: selectorless, opted in with "
                 f"endpointslice-operator.io/selector=app=web; ClusterIP {cip}")  # fmt: skip
        old = [f"web-v1-{i}" for i in range(1, self.replicas + 1)]
        for pod in old:
            dc.add_pod(pod, APP)
        self.route(old)
        self.say(f"v1: {len(old)} pods ready; kube-proxy on node-a routes the ClusterIP to them")
        self.show(set(old))

        during: Counter[str] = Counter()
        stop = threading.Event()

        def traffic() -> None:
            while not stop.is_set():
                during.update(dc.net.requests(cip, 80, 20))

        background = threading.Thread(target=traffic, name="traffic", daemon=True)
        background.start()
        self.say("rolling out v2 (maxSurge 1, maxUnavailable 0), requests flowing meanwhile")
        serving = list(old)
        for i in range(1, self.replicas + 1):
            new, gone = f"web-v2-{i}", old[i - 1]
            dc.add_pod(new, APP, ready=False)
            self.say(f"  {new} started, not ready yet: not routed")
            self.route(serving)
            self.show(set(serving))
            dc.set_ready(new, True)
            serving.append(new)
            self.route(serving)
            self.say(f"  {new} ready: routed")
            self.show(set(serving))
            dc.delete_pod(gone, grace_seconds=30)
            serving.remove(gone)
            self.route(serving)
            self.say(f"  {gone} deleted: Terminating (still serving) for its grace period, "
                     "no new connections")  # fmt: skip
            self.show(set(serving))
            dc.force_delete(gone)
            self.say(f"  {gone} gone (the kubelet would end it after the grace period)")
        stop.set()
        background.join(30)
        failed = sum(n for answer, n in during.items() if answer.startswith("ERR"))
        spread = ", ".join(f"{name} x{n}" for name, n in sorted(during.items()))
        self.say(f"during the rollout: {sum(during.values())} requests, {failed} failed ({spread})")
        if failed:
            self.failures.append(f"{failed} requests failed during the rollout")
        self.say(f"v2: {len(serving)} pods ready")
        self.show(set(serving))
        for failure in self.failures:
            print(f"dataplane-demo: {failure}", file=sys.stderr)
        return 1 if self.failures else 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make dataplane-demo", description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=3, help="pods per version (default 3)")
    args = parser.parse_args(argv)
    value = os.environ.get("KUBEBUILDER_ASSETS")
    assets = Path(value).resolve() if value else None
    reason = missing_requirements(assets) or missing_assets(assets)
    if reason is None and assets is not None and not (assets / "kube-controller-manager").is_file():
        reason = f"kube-controller-manager not found in KUBEBUILDER_ASSETS={assets}"
    if reason is not None:
        print(f"dataplane-demo: {reason}", file=sys.stderr)
        return 2
    assert assets is not None
    signal.signal(signal.SIGTERM, _interrupt)
    workdir = Path(tempfile.mkdtemp(prefix="eso-dp-demo-"))
    started = time.monotonic()
    print(
        f"Starting etcd, kube-apiserver, kube-controller-manager from {assets}, kube-proxy in "
        f"network namespaces, and the operator (logs in {workdir})",
        flush=True,
    )
    dc = DataplaneCluster(assets=assets, workdir=workdir, namespace=NAMESPACE)
    code = 1
    try:
        dc.start()
        print(f"Up in {time.monotonic() - started:.1f} s: kube-proxy in netns "
              f"{dc.net.node_netns} (as node-a), curl from netns {dc.net.client_netns}",
              flush=True)  # fmt: skip
        code = Demo(dc, args.replicas).run()
    finally:
        dc.stop()
        print(f"Stopped everything (by PID) and deleted the network namespaces; "
              f"{time.monotonic() - started:.0f} s in all.", flush=True)  # fmt: skip
    if code == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"Logs kept in {workdir}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
