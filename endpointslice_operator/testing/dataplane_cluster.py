"""A control plane, the operator as a process and kube-proxy in a :class:`~.dataplane.Topology`.

What the data-plane tests, the ``dataplane`` benchmark area and the data-plane demo share::

    with DataplaneCluster(assets=Path(os.environ["KUBEBUILDER_ASSETS"]), workdir=tmp) as dc:
        ours, kcm = dc.twins("web", {"app": "web"})   # opted-in Service + its spec.selector twin
        dc.add_pod("web-1", {"app": "web"})            # a netns answering "web-1", its Pod
        dc.wait_rules({ours: ("10.244.1.10",), kcm: ("10.244.1.10",)})
        dc.requests(ours, 20)                          # Counter({"web-1": 20})

It starts etcd, kube-apiserver and kube-controller-manager (:class:`~.controlplane.ControlPlane`,
whose EndpointSlice controller writes the twin's slices, the reference), Nodes ``node-a``
(``zone-a``, the node kube-proxy runs as), ``node-b`` (``zone-b``) and ``node-c`` (``zone-a``:
same zone, another node), the namespace, the CRDs given as ``crds`` (established before the
operator starts, so its first discovery finds them), the topology with kube-proxy, and
``endpointslice-operator run`` watching that namespace. There is no kubelet: pods get their
status (IP, Ready) through the ``status`` subresource, as a kubelet would write it, and a pod
deleted with a grace period stays Terminating until :meth:`DataplaneCluster.force_delete`.
:meth:`DataplaneCluster.stop` stops everything by PID and deletes the namespaces by name, also
after a failed start.

It launches the operator as a command (``python -m endpointslice_operator run``) and imports
nothing of it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from endpointslice_operator.testing.controlplane import ControlPlane, free_port
from endpointslice_operator.testing.dataplane import NODE_IP, POD_PORT, Topology
from endpointslice_operator.testing.kube_proxy_rules import Programmed, ProxyMode, service_key

__all__ = ["ANNOTATION_PREFIX", "DataplaneCluster"]

ANNOTATION_PREFIX = "endpointslice-operator.io"
ENABLED = f"{ANNOTATION_PREFIX}/enabled"
SELECTOR = f"{ANNOTATION_PREFIX}/selector"
NODES = {"node-a": "zone-a", "node-b": "zone-b", "node-c": "zone-a"}
NODE_ADDRESSES = {"node-a": NODE_IP, "node-b": "10.240.0.11", "node-c": "10.240.0.12"}
TRANSITION = "2026-01-01T00:00:00Z"
STOP_SECONDS = 20.0


def _now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


@dataclass
class DataplaneCluster:
    """Control plane + operator + kube-proxy on a namespace topology (see the module doc)."""

    assets: Path
    workdir: Path
    namespace: str = "dataplane"
    operator_args: tuple[str, ...] = ()
    #: CustomResourceDefinitions (decoded manifests) installed and established before the
    #: operator starts, so it finds their APIs at its first discovery.
    crds: tuple[dict[str, Any], ...] = ()
    #: kube-proxy's mode at start (:meth:`.Topology.use_proxy_mode` switches it later).
    proxy_mode: ProxyMode = "iptables"
    plane: ControlPlane | None = None
    topology: Topology | None = None
    operator: subprocess.Popen[bytes] | None = None
    metrics_port: int = field(default_factory=free_port)
    pod_ips: dict[str, str] = field(default_factory=dict)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> DataplaneCluster:
        plane = ControlPlane(assets=self.assets, workdir=self.workdir / "plane", port=free_port())
        self.plane = plane
        self.topology = Topology(
            kube_proxy=self.assets / "kube-proxy",
            kubeconfig=plane.kubeconfig,
            api_port=plane.port,
            workdir=self.workdir / "dataplane",
            node_name="node-a",
            proxy_mode=self.proxy_mode,
        )
        try:
            plane.start()
            # Recorded with the topology's, for sweep_stale should this run be killed outright.
            for name, pid in plane.pids.items():
                self.topology.remember(pid, str(self.assets / name))
            for node, zone in NODES.items():
                self._node(node, zone)
            self.call("POST", "/api/v1/namespaces", _namespace(self.namespace))
            for crd in self.crds:
                self._install_crd(crd)
            self.topology.start()
            self._start_operator()
            assert self.operator is not None
            self.topology.remember(self.operator.pid, sys.executable)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """The operator, the topology (pods' servers, kube-proxy, namespaces), the control
        plane: each by PID, namespaces by name."""
        try:
            if self.operator is not None and self.operator.poll() is None:
                self.operator.send_signal(signal.SIGTERM)
                try:
                    self.operator.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    self.operator.kill()
                    self.operator.wait()
        finally:
            try:
                if self.topology is not None:
                    self.topology.stop()
            finally:
                if self.plane is not None:
                    self.plane.stop()
                if self.topology is not None:  # the plane's PIDs were recorded there too
                    shutil.rmtree(self.topology.state_dir, ignore_errors=True)

    def __enter__(self) -> DataplaneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def net(self) -> Topology:
        assert self.topology is not None, "start() first"
        return self.topology

    @property
    def operator_log(self) -> Path:
        return self.workdir / "operator.log"

    # -- API -------------------------------------------------------------------------------------

    def call(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = ()) -> Any:
        """One request with the admin token; raises unless the status is 2xx (or in ``ok``)."""
        assert self.plane is not None, "start() first"
        status, answer = self.plane.request(method, path, body)
        if not (200 <= status < 300 or status in ok):
            raise AssertionError(f"{method} {path}: {status} {answer}")
        return answer

    def ns_path(self, resource: str, name: str = "") -> str:
        group = "/apis/discovery.k8s.io/v1" if resource == "endpointslices" else "/api/v1"
        path = f"{group}/namespaces/{self.namespace}/{resource}"
        return f"{path}/{name}" if name else path

    # -- Services --------------------------------------------------------------------------------

    def service(
        self,
        name: str,
        *,
        selector: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        **spec: Any,
    ) -> str:
        """Create a Service (port ``http`` 80 -> 8080); returns kube-proxy's key for its port."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
            "spec": {
                "ports": [{"name": "http", "port": 80, "targetPort": POD_PORT, "protocol": "TCP"}],
                **spec,
            },
        }
        if selector is not None:
            body["spec"]["selector"] = selector
        self.call("POST", self.ns_path("services"), body)
        return service_key(self.namespace, name, "http")

    def opted_in(self, name: str, selector: dict[str, str], **kwargs: Any) -> str:
        """A selectorless Service opted in, its pods named by the selector annotation."""
        annotations = {
            ENABLED: "true",
            SELECTOR: ",".join(f"{k}={v}" for k, v in sorted(selector.items())),
            **kwargs.pop("annotations", {}),
        }
        return self.service(name, annotations=annotations, **kwargs)

    def twins(self, name: str, selector: dict[str, str], **spec: Any) -> tuple[str, str]:
        """``<name>-eso`` (the operator's) and ``<name>-kcm`` (``spec.selector``: kube-
        controller-manager's) on the same pods; returns their kube-proxy keys."""
        ours = self.opted_in(f"{name}-eso", selector, **spec)
        kcm = self.service(f"{name}-kcm", selector=selector, **spec)
        return ours, kcm

    def cluster_ip(self, key: str) -> str:
        name = key.split("/", 1)[1].split(":", 1)[0]
        return str(self.call("GET", self.ns_path("services", name))["spec"]["clusterIP"])

    def slices(self, key: str, manager: str | None = None) -> list[dict[str, Any]]:
        name = key.split("/", 1)[1].split(":", 1)[0]
        selector = f"kubernetes.io/service-name={name}"
        if manager is not None:
            selector += f",endpointslice.kubernetes.io/managed-by={manager}"
        path = self.ns_path("endpointslices") + f"?labelSelector={selector}"
        return list(self.call("GET", path)["items"])

    # -- pods ------------------------------------------------------------------------------------

    def add_pod(
        self, name: str, labels: dict[str, str], *, node: str = "node-a", ready: bool = True
    ) -> str:
        """A namespace answering ``name`` and a Pod on ``node`` with its IP; returns the IP."""
        ip = self.net.add_pod(name)
        self.pod_ips[name] = ip
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeName": node,
                "terminationGracePeriodSeconds": 30,
                "containers": [
                    {
                        "name": "web",
                        "image": "registry.k8s.io/pause:3.10",
                        "ports": [{"name": "http", "containerPort": POD_PORT}],
                    }
                ],
            },
        }
        self.call("POST", self.ns_path("pods"), body)
        self.set_ready(name, ready)
        return ip

    def set_ready(self, name: str, ready: bool) -> None:
        """The pod's status as a kubelet writes it: Running, its IP, Ready true or false."""
        ip = self.pod_ips[name]
        flag = "True" if ready else "False"
        at = _now()
        status = {
            "phase": "Running",
            "hostIP": NODE_IP,
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": TRANSITION,
            "conditions": [
                {"type": c, "status": flag, "lastTransitionTime": at}
                for c in ("Ready", "ContainersReady")
            ]
            + [{"type": "PodScheduled", "status": "True", "lastTransitionTime": TRANSITION}],
        }
        self.call("PATCH", self.ns_path("pods", name) + "/status", {"status": status})

    def delete_pod(self, name: str, grace_seconds: int = 300) -> None:
        """Delete with a grace period: the pod stays Terminating (no kubelet confirms it) and
        its server keeps answering, as a container would until it is killed."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": grace_seconds}
        self.call("DELETE", self.ns_path("pods", name), body)

    def force_delete(self, name: str) -> None:
        """What the kubelet does at the end of the grace period: the Pod goes, and so does its
        namespace."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        self.call("DELETE", self.ns_path("pods", name), body, ok=(404,))
        self.pod_ips.pop(name, None)
        if name in self.net.pods:
            self.net.remove_pod(name)

    # -- traffic ---------------------------------------------------------------------------------

    def ips(self, *pods: str) -> tuple[str, ...]:
        return tuple(sorted(self.pod_ips[p] for p in pods))

    def wait_rules(self, expect: dict[str, Programmed], timeout: float = 60.0) -> None:
        self.net.wait_rules(expect, timeout)

    def requests(self, key: str, count: int, timeout: float = 10.0) -> Counter[str]:
        """``count`` GETs to the Service's ClusterIP from the client namespace."""
        return self.net.requests(self.cluster_ip(key), 80, count, timeout)

    # -- internals -------------------------------------------------------------------------------

    def _node(self, name: str, zone: str) -> None:
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
        self.call(
            "POST",
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}},
        )
        resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        condition = {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "lastHeartbeatTime": TRANSITION,
            "lastTransitionTime": TRANSITION,
        }
        address = NODE_ADDRESSES[name]
        status = {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [condition],
            "addresses": [
                {"type": "InternalIP", "address": address},
                {"type": "Hostname", "address": name},
            ],
        }
        self.call("PATCH", f"/api/v1/nodes/{name}/status", {"status": status})

    def _install_crd(self, crd: dict[str, Any], timeout: float = 60.0) -> None:
        """Create the CRD and wait until it is established and its resource is listed."""
        base = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        self.call("POST", base, crd)
        spec = crd["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("served", True))
        listing = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}"
        deadline = time.monotonic() + timeout
        while True:
            assert self.plane is not None
            _, current = self.plane.request("GET", f"{base}/{crd['metadata']['name']}")
            conditions = ((current or {}).get("status") or {}).get("conditions") or []
            established = any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            )
            if established and self.plane.request("GET", listing)[0] == 200:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {crd['metadata']['name']} not established in "
                                   f"{timeout:.0f} s: {current}")  # fmt: skip
            time.sleep(0.2)

    def _start_operator(self, timeout: float = 60.0) -> None:
        assert self.plane is not None
        argv = [
            sys.executable, "-m", "endpointslice_operator", "run",
            "--kubeconfig", str(self.plane.kubeconfig),
            "--metrics-host", "127.0.0.1", "--metrics-port", str(self.metrics_port),
            "--no-leader-election", "--namespace", self.namespace,
            *self.operator_args,
        ]  # fmt: skip
        with self.operator_log.open("ab") as log:
            self.operator = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.metrics_port}/readyz"
        while True:
            if self.operator.poll() is not None:
                raise RuntimeError(f"the operator exited; see {self.operator_log}")
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the operator was not ready in {timeout:.0f} s; see "
                                   f"{self.operator_log}")  # fmt: skip
            time.sleep(0.2)


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
