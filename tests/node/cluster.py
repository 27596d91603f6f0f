"""One real node (``../shared/envtest/node``) as the node layer's tests use it: kubectl and helm
as users run them, processes inside the node's network namespace, waits on load-aware deadlines.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.realcluster.deadline import Deadline

T = TypeVar("T")

NETNS = "envtest-node"
NAMESPACE = "endpointslice-operator"
RELEASE = "endpointslice-operator"
OURS = "endpointslice-operator.io"
KCM = "endpointslice-controller.k8s.io"
LEASE = "endpointslice-operator"
OPERATOR_PODS = "app.kubernetes.io/name=endpointslice-operator"


class WaitTimeout(AssertionError):
    """A wait on the node that did not come true in time (the last value seen is in the text)."""


@dataclass
class Node:
    """The running node: its folder, admin kubeconfig, helm binary and the image under test."""

    envtest: Path
    dir: Path
    kubeconfig: Path
    helm_binary: Path
    image: str
    helm_home: Path
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "HELM_CACHE_HOME": str(self.helm_home / "cache"),
            "HELM_CONFIG_HOME": str(self.helm_home / "config"),
            "HELM_DATA_HOME": str(self.helm_home / "data"),
            # `helm` of the README's commands is the envtest one.
            "PATH": f"{self.helm_binary.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    # -- running things ------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        check: bool = True,
        timeout: float = 300,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            input=input,
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done

    def shell(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float = 300,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """A command as the README writes it, run by ``sh`` with the node's KUBECONFIG and helm."""
        return self.run(["sh", "-c", command], cwd=cwd, timeout=timeout, env=env).stdout

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return self.run(["kubectl", *args], input=input, check=check).stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def apply(self, manifest: str) -> None:
        self.kubectl("apply", "-f", "-", input=manifest)

    def helm(self, *args: str) -> str:
        return self.run([str(self.helm_binary), *args]).stdout

    def in_node(
        self, *argv: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """A process in the node's network namespace (where pod and Service IPs route)."""
        return self.run(
            ["nsenter", f"--net=/run/netns/{NETNS}", *argv], check=check, timeout=timeout
        )

    def ctr(self, *args: str) -> str:
        sock = self.dir / "containerd" / "containerd.sock"
        return self.run(["ctr", "--address", str(sock), "-n", "k8s.io", *args]).stdout

    # -- what users see ----------------------------------------------------------------------

    def slices(self, service: str, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get(
            "endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}"
        )["items"]
        return items

    def ready_ips(
        self, service: str, managed_by: str = OURS, namespace: str = "default"
    ) -> set[str]:
        return {
            endpoint["addresses"][0]
            for item in self.slices(service, namespace)
            if item["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by")
            == managed_by
            for endpoint in item.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready")
        }

    def pods(self, selector: str, namespace: str = "default") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get("pods", "-n", namespace, "-l", selector)["items"]
        return items

    def lease_holder(self) -> str:
        done = self.kubectl(
            "get", "lease", LEASE, "-n", NAMESPACE, "-o",
            "jsonpath={.spec.holderIdentity}", check=False,
        )  # fmt: skip
        return done.strip()

    def nat_rules(self) -> str:
        return self.in_node("iptables-save", "-t", "nat").stdout

    def http_get(self, url: str, timeout: float = 2) -> str:
        return self.in_node("curl", "-sf", "--max-time", str(timeout), url).stdout

    def metrics(self, pod_ip: str, port: int = 8080) -> dict[str, float]:
        """The samples of an operator pod's /metrics (name with labels -> value)."""
        samples: dict[str, float] = {}
        for line in self.http_get(f"http://{pod_ip}:{port}/metrics").splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples

    def wait(
        self,
        what: str,
        probe: Callable[[], T],
        done: Callable[[T], bool] = bool,
        timeout: float = 120,
        interval: float = 0.25,
    ) -> T:
        deadline = Deadline(timeout)
        while True:
            value = probe()
            if done(value):
                return value
            if deadline.expired():
                raise WaitTimeout(f"{what}: not within {deadline.describe()}; last seen {value!r}")
            time.sleep(interval)

    def operator_ready(self, replicas: int) -> list[dict[str, Any]]:
        """Wait until exactly ``replicas`` operator pods run, all Ready, none terminating."""

        def ready(pods: list[dict[str, Any]]) -> bool:
            return len(pods) == replicas and all(
                "deletionTimestamp" not in pod["metadata"]
                and any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in pod["status"].get("conditions") or []
                )
                for pod in pods
            )

        return self.wait(
            f"{replicas} operator pod(s) Ready",
            lambda: self.pods(OPERATOR_PODS, NAMESPACE),
            ready,
            timeout=180,
        )


def web_app(
    name: str,
    replicas: int,
    *,
    namespace: str = "default",
    opted_in: bool = True,
    image: str = "localhost/busybox:1.35",
) -> str:
    """A Deployment of busybox ``httpd`` pods that answer with their name, Ready by a real
    httpGet probe of ``/healthz`` (a file: remove it and the probe fails), and a selectorless
    Service opted in to the operator over them (``opted_in=False``: a Service with
    ``spec.selector``, kube-controller-manager's)."""
    serve = "hostname > /www/index.html && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www"
    container = {
        "name": "web",
        "image": image,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", serve],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": "http"},
            "periodSeconds": 1,
            # A probe that takes over a second on a busy machine is not a failure (the default
            # 1 s timeout would flip a pod, and its slice, with nobody asking).
            "timeoutSeconds": 5,
            "failureThreshold": 2,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "www", "mountPath": "/www"}],
    }
    labels = {"app": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [{"name": "www", "emptyDir": {}}],
                },
            },
        },
    }
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    if opted_in:
        service["metadata"]["annotations"] = {
            "endpointslice-operator.io/enabled": "true",
            "endpointslice-operator.io/selector": f"app={name}",
        }
    else:
        service["spec"]["selector"] = labels
    # Through JSON first: each mapping written out in full (no YAML anchors for the label set).
    return yaml.safe_dump_all(json.loads(json.dumps([deployment, service])))


CLIENT = r"""
import os, sys, time, urllib.request
url, rate, seconds, stop = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ok = failed = 0
errors = {}
start = time.monotonic()
n = 0
while time.monotonic() - start < seconds and not os.path.exists(stop):
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            answer.read()
        ok += 1
    except Exception as exc:
        failed += 1
        errors[repr(exc)[:120]] = errors.get(repr(exc)[:120], 0) + 1
        sys.stderr.write(f"failed at {time.time():.3f}\n")
    n += 1
    pause = start + n / rate - time.monotonic()
    if pause > 0:
        time.sleep(pause)
print(ok, failed, repr(errors))
"""


class Client:
    """A bounded client loop inside the node's namespace: ``rate`` requests a second to ``url``,
    each with a 2 s timeout, until the file ``stop`` exists (at most ``seconds``);
    :meth:`result` is (ok, failed, errors)."""

    def __init__(self, node: Node, url: str, *, rate: float, seconds: float, stop: Path) -> None:
        argv = ["nsenter", f"--net=/run/netns/{NETNS}", "python3", "-c", CLIENT, url]
        self.process = subprocess.Popen(
            [*argv, str(rate), str(seconds), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=node.env,
        )
        self.seconds = seconds
        self.err = ""

    def result(self) -> tuple[int, int, str]:
        out, self.err = self.process.communicate(timeout=self.seconds * 3 + 60)
        assert self.process.returncode == 0, self.err
        ok, failed, errors = out.split(" ", 2)
        return int(ok), int(failed), errors.strip()

    def failures(self) -> list[float]:
        """The wall-clock times of the failed requests (after :meth:`result`)."""
        return [
            float(line.split()[-1])
            for line in self.err.splitlines()
            if line.startswith("failed at ")
        ]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def resource_versions(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}
