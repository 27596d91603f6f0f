"""``--node``: the operator installed on one real node, beside kube-controller-manager.

Needs what the node layer needs (root, ``../shared/envtest`` with ``node``, the Debian packages
of tests/node/conftest.py; without them the area says why on stderr and reports nothing). It
builds the image (``make image``, or ``ESO_NODE_IMAGE``), starts the node
(:func:`tests.node.lifecycle.running_node`: ``node stop`` on every exit path, SIGTERM too),
installs the chart by the README's ``helm install`` and measures both controllers on the same
pods: twin Services, one with ``spec.selector`` (kube-controller-manager writes its slices, the
baseline), one selectorless with the selector annotation (the operator writes its slices).

``probe_to_rules_ms_p50`` / ``_p99``: three busybox ``httpd`` pods Ready by a real httpGet
probe; one flip removes a pod's health file with ``kubectl exec`` (or writes it back), the
kubelet's probe fails (or passes) and it patches the pod's Ready condition. The figure is the
time from the moment a watch of the pods sees that status change to the first
``iptables-save`` in the node's namespace (a watcher process dumping in a loop) in which the
Service's rules no longer (or again) send to the pod; both Services per flip, pods in turn.

``service_create_to_endpoint_s_p50`` / ``_p99``: upstream's conformance test "Service endpoints
latency should not be very high" on both controllers: Services over one running pod, created 15
at a time (ours and kube-controller-manager's twins interleaved), the time from
just before a Service's create request to the first slice of it, seen by a watch, that lists
the pod's address.

The live migration's figures (``migration_failed_requests``, the time from the last step until
only our slices remain) come from ``--real --only dataplane`` (:mod:`.migration`).
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from endpointslice_operator.testing.kube_proxy_rules import Programmed, programmed, service_key
from tests.node.cluster import NETNS, Node, web_app
from tests.node.conftest import unavailable
from tests.node.lifecycle import ROOT, build_image, build_images, running_node
from tests.node.test_install import install_commands

from ..figure import Figure

__all__ = ["collect", "endpoint_addresses", "percentile", "ready_status"]

FLIPS = {"tiny": 2, "quick": 10, "full": 30}
"""Flips each way (to unready and back) per run mode, each seen by both Services."""
SERVICES = {"tiny": 15, "quick": 60, "full": 200}
"""Services of each controller per mode (upstream's test: 200)."""
WAVE = 15
"""Services created at a time (upstream's test: 15 in parallel)."""
PODS = 3
WATCH_RETRIES = 30
OURS, KCM = "ours", "kcm"
NAMESPACE = "default"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
SERVICES_PATH = f"/api/v1/namespaces/{NAMESPACE}/services"


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank, as the other areas report them)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ready_status(pod: Mapping[str, Any]) -> str | None:
    """The status of a pod's Ready condition (``"True"``/``"False"``), or None before it has one."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            status: str = condition.get("status")
            return status
    return None


def endpoint_addresses(endpoint_slice: Mapping[str, Any]) -> set[str]:
    """Every address a slice lists, ready or not (upstream's test waits for any endpoint)."""
    return {a for e in endpoint_slice.get("endpoints") or [] for a in e.get("addresses") or []}


class Api:
    """Plain HTTPS to the node's API server with the admin kubeconfig (no kubectl start-up in
    what is timed)."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.server: str = cluster["server"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.context = ssl.create_default_context(cadata=ca)
        self.token: str = config["users"][0]["user"]["token"]

    def _request(self, method: str, path: str, body: Any = None) -> urllib.request.Request:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        return request

    def call(self, method: str, path: str, body: Any = None) -> Any:
        with urllib.request.urlopen(
            self._request(method, path, body), context=self.context, timeout=60
        ) as answer:
            return json.loads(answer.read())

    def stream(self, path: str) -> Iterator[dict[str, Any]]:
        """The events of a watch of ``path`` (a list path), as they arrive. It starts at
        version 0 (the API server's watch cache as it is: a watch with no version waits for
        the cache to reach etcd's latest and times out on a quiet cluster); an ERROR event
        watches again from the last version seen (from 0 if that one has expired)."""
        sep = "&" if "?" in path else "?"
        version = "0"
        for _ in range(WATCH_RETRIES):
            query = f"{path}{sep}watch=1&resourceVersion={version}"
            request = self._request("GET", query)
            with urllib.request.urlopen(request, context=self.context, timeout=3600) as answer:
                for line in answer:
                    event = json.loads(line)
                    if event["type"] == "ERROR":
                        expired = event["object"].get("code") == 410
                        version = "0" if expired else version
                        break
                    version = event["object"]["metadata"]["resourceVersion"]
                    yield event
                else:
                    return
            time.sleep(1.0)
        raise RuntimeError(f"watch of {path}: {WATCH_RETRIES} errors in a row")


class Stamped:
    """Lines of a source (a watch, a watcher process) stamped with ``time.monotonic()`` as they
    arrive, collected by a reader thread; :meth:`first` waits for one that matches."""

    def __init__(self, source: Iterator[Any], name: str) -> None:
        self.items: list[tuple[float, Any]] = []
        self._condition = threading.Condition()
        self._source = source
        self._ended = False
        self._thread = threading.Thread(target=self._read, name=name, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for item in self._source:
                now = time.monotonic()
                with self._condition:
                    self.items.append((now, item))
                    self._condition.notify_all()
        except Exception as exc:  # a watch cut by the node's stop: what was seen stays
            print(f"node: {self._thread.name} ended: {exc!r}", file=sys.stderr)
        finally:
            with self._condition:
                self._ended = True
                self._condition.notify_all()

    def first(self, after: float, check: Callable[[Any], bool], timeout: float = 120.0) -> float:
        """The time of the first item seen at or after ``after`` that passes ``check``."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for t, item in self.items:
                    if t >= after and check(item):
                        return t
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._ended:
                    last = self.items[-1:] if self.items else None
                    raise AssertionError(
                        f"{self._thread.name}: not within {timeout:.0f} s ({last})"
                    )
                self._condition.wait(min(remaining, 1.0))


def _rules_lines(process: subprocess.Popen[str]) -> Iterator[tuple[str, Programmed]]:
    assert process.stdout is not None
    for line in process.stdout:
        data = json.loads(line)
        rules = data["rules"]
        yield data["key"], tuple(rules) if isinstance(rules, list) else rules


def _rules_watcher(keys: list[str]) -> subprocess.Popen[str]:
    """``kube_proxy_rules``'s watcher in the node's namespace (its own stamps are not used:
    the reader's are, on the same clock as the pod watch's)."""
    return subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{NETNS}", sys.executable, "-m",
         "endpointslice_operator.testing.kube_proxy_rules", *keys],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip


def _twin(name: str, selector: Mapping[str, str], opted_in: bool) -> dict[str, Any]:
    """A Service like :func:`web_app`'s: selectorless and opted in, or with ``spec.selector``."""
    selector_text = ",".join(f"{k}={v}" for k, v in selector.items())
    meta: dict[str, Any] = {"name": name, "labels": {"bench": "node"}}
    spec: dict[str, Any] = {
        "type": "ClusterIP",
        "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
    }
    if opted_in:
        meta["annotations"] = {
            "endpointslice-operator.io/enabled": "true",
            "endpointslice-operator.io/selector": selector_text,
        }
    else:
        spec["selector"] = dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _running(node: Node, app: str, replicas: int) -> dict[str, str]:
    """Pod name -> IP of the app's pods once its Deployment has rolled out."""
    node.kubectl("rollout", "status", f"deployment/{app}", "--timeout=300s")
    pods = [p for p in node.pods(f"app={app}") if "deletionTimestamp" not in p["metadata"]]
    assert len(pods) == replicas, [p["metadata"]["name"] for p in pods]
    return {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}


def probe_to_rules(node: Node, api: Api, flips_each_way: int) -> list[Figure]:
    app = "probe"
    node.apply(web_app(app, PODS))  # the Deployment and the opted-in Service ``probe``
    node.apply(yaml.safe_dump(_twin(f"{app}-kcm", {"app": app}, opted_in=False)))
    pods = _running(node, app, PODS)
    keys = {
        OURS: service_key(NAMESPACE, app, "http"),
        KCM: service_key(NAMESPACE, f"{app}-kcm", "http"),
    }
    every = tuple(sorted(pods.values()))
    node.wait(
        "both Services' rules send to every pod",
        lambda: {c: programmed(node.in_node("iptables-save").stdout, k) for c, k in keys.items()},
        lambda rules: all(r == every for r in rules.values()),
        timeout=180,
    )
    samples: dict[str, list[float]] = {OURS: [], KCM: []}
    watcher = _rules_watcher(list(keys.values()))
    try:
        rules = Stamped(_rules_lines(watcher), "rules watch")
        statuses = Stamped(
            ((e["object"]["metadata"]["name"], ready_status(e["object"]))
             for e in api.stream(f"{PODS_PATH}?labelSelector=app%3D{app}")),
            "pod watch",
        )  # fmt: skip
        names = sorted(pods)
        for flip in range(2 * flips_each_way):
            ready = flip % 2 == 1
            pod = names[(flip // 2) % len(names)]
            ip = pods[pod]
            sent = time.monotonic()
            if ready:
                node.kubectl("exec", pod, "--", "sh", "-c", "echo ok > /www/healthz")
            else:
                node.kubectl("exec", pod, "--", "rm", "/www/healthz")
            want = "True" if ready else "False"
            reported = statuses.first(sent, (pod, want).__eq__)
            for controller, key in keys.items():

                def moved(
                    item: tuple[str, Programmed], key: str = key, ip: str = ip, ready: bool = ready
                ) -> bool:
                    changed, programmed_now = item
                    return (
                        changed == key
                        and isinstance(programmed_now, tuple)
                        and (ip in programmed_now) == ready
                    )

                seen = rules.first(sent, moved)
                samples[controller].append((seen - reported) * 1000)
    finally:
        _stop(watcher)
    return [
        Figure(
            f"probe_to_rules_ms_{label}",
            percentile(samples[OURS], q),
            "ms",
            percentile(samples[KCM], q),
        )
        for label, q in (("p50", 0.5), ("p99", 0.99))
    ]


def service_create_to_endpoint(node: Node, api: Api, services: int) -> list[Figure]:
    app = "latency"
    node.apply(web_app(app, 1))
    ((_, ip),) = _running(node, app, 1).items()
    slices = Stamped(
        ((e["object"]["metadata"].get("labels") or {}, endpoint_addresses(e["object"]))
         for e in api.stream(SLICES)),
        "slice watch",
    )  # fmt: skip
    names = {OURS: [f"lat-o-{i}" for i in range(services)],
             KCM: [f"lat-k-{i}" for i in range(services)]}  # fmt: skip
    order = [
        (c, names[c][i]) for i in range(services) for c in ((OURS, KCM) if i % 2 else (KCM, OURS))
    ]
    samples: dict[str, list[float]] = {OURS: [], KCM: []}

    def one(controller: str, name: str) -> None:
        sent = time.monotonic()
        api.call("POST", SERVICES_PATH, _twin(name, {"app": app}, opted_in=controller == OURS))

        def listed(item: tuple[dict[str, str], set[str]]) -> bool:
            labels, addresses = item
            return labels.get("kubernetes.io/service-name") == name and ip in addresses

        samples[controller].append(slices.first(sent, listed) - sent)

    # At most 15 creations in flight at any time, as upstream's test (ParallelizeUntil).
    with ThreadPoolExecutor(WAVE) as pool:
        list(pool.map(lambda job: one(*job), order))
    node.kubectl("delete", "services", "-l", "bench=node", "--wait=false")
    return [
        Figure(
            f"service_create_to_endpoint_s_{label}",
            percentile(samples[OURS], q),
            "s",
            percentile(samples[KCM], q),
        )
        for label, q in (("p50", 0.5), ("p99", 0.99))
    ]


def collect(mode: str) -> list[Figure]:
    reason = unavailable()
    if reason is not None:
        print(f"node: skipped ({reason})", file=sys.stderr)
        return []
    workdir = Path(tempfile.mkdtemp(prefix="eso-bench-node-"))
    try:
        images = build_images()
        archive = build_image(images, workdir)
        with running_node(images, archive, workdir) as node:
            for command in install_commands():
                node.shell(command, cwd=ROOT, timeout=600)
            node.operator_ready(1)
            node.wait("the operator leads", node.lease_holder)
            api = Api(node.kubeconfig)
            return probe_to_rules(
                node, api, FLIPS.get(mode, FLIPS["quick"])
            ) + service_create_to_endpoint(node, api, SERVICES.get(mode, SERVICES["quick"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
