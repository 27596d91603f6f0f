"""A real Kubernetes control plane on loopback, from envtest assets (``$KUBEBUILDER_ASSETS``).

The emulator is a model; a real kube-apiserver is the referee. :class:`ControlPlane` starts
``etcd`` and ``kube-apiserver`` (and ``kube-controller-manager`` when its binary is there, with
the endpoint, EndpointSlice, mirroring, garbage-collector, namespace and ServiceAccount
controllers as the reference to compare with; ``kcm_controllers`` picks another list) on free
loopback ports, with RBAC on and bearer-token authentication, and stops them by PID::

    plane = ControlPlane(assets=Path(os.environ["KUBEBUILDER_ASSETS"]), workdir=tmp)
    plane.start()                 # about 5 s; plane.kubeconfig is an admin kubeconfig
    ...
    plane.stop()                  # always: every process by its PID

The PKI (a CA, the serving certificate, the ServiceAccount signing key) is generated with the
``openssl`` command into ``workdir``; the admin token is in group ``system:masters``.
:meth:`ControlPlane.restart` can wipe etcd, for the "API server came back empty" case.

There is no kubelet, scheduler or kube-proxy: create pods with ``spec.nodeName`` (and a Node)
and set their status through the ``status`` subresource.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "KCM_CONTROLLERS",
    "REQUIRED_BINARIES",
    "ControlPlane",
    "ControlPlaneError",
    "missing_assets",
    "server_version",
    "write_kubeconfig",
]

REQUIRED_BINARIES = ("etcd", "kube-apiserver")
KCM_BINARY = "kube-controller-manager"
KCM_CONTROLLERS = (
    "deployment",
    "replicaset",
    "endpoint",
    "endpointslice",
    "endpointslicemirroring",
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
)
SERVICE_CIDR = "10.96.0.0/16"
# The "kubernetes" Endpoints refuse a loopback address, so the server advertises a
# documentation-range address (RFC 5737); it listens on 127.0.0.1 only and nothing is sent there.
ADVERTISE_ADDRESS = "192.0.2.1"
STOP_GRACE_SECONDS = 10.0


class ControlPlaneError(RuntimeError):
    """The control plane could not be started; the message names the log to read."""


def missing_assets(assets: Path | None) -> str | None:
    """Why a control plane cannot be started from ``assets`` (``None`` when it can)."""
    if assets is None:
        return "KUBEBUILDER_ASSETS is not set"
    missing = [name for name in REQUIRED_BINARIES if not (assets / name).is_file()]
    if missing:
        return f"{', '.join(missing)} not found in KUBEBUILDER_ASSETS={assets}"
    if shutil.which("openssl") is None:
        return "the openssl command is needed to generate the control plane's PKI"
    return None


def server_version(assets: Path) -> tuple[int, int]:
    """The (major, minor) version of the ``kube-apiserver`` in ``assets``, from ``--version``
    (``Kubernetes v1.36.2`` gives ``(1, 36)``)."""
    out = subprocess.run(
        [str(assets / "kube-apiserver"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    match = re.search(r"v(\d+)\.(\d+)", out)
    if match is None:
        raise ControlPlaneError(f"cannot read a version from kube-apiserver --version: {out!r}")
    return int(match.group(1)), int(match.group(2))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_kubeconfig(path: Path, server: str, ca_file: Path, token: str, user: str) -> Path:
    """A kubeconfig for ``server`` with a bearer ``token`` (file mode 0600)."""
    ca = base64.b64encode(ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "envtest", "cluster": {"server": server, "certificate-authority-data": ca}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@envtest", "context": {"cluster": "envtest", "user": user}}],
        "current-context": f"{user}@envtest",
    }
    path.write_text(json.dumps(config, indent=1))
    path.chmod(0o600)
    return path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) from envtest assets, on loopback."""

    assets: Path
    workdir: Path
    with_kcm: bool = True
    """Run kube-controller-manager when its binary is in ``assets``."""
    port: int = 0
    """The API server's secure port; 0 picks a free one (kept across :meth:`restart`)."""
    apiserver_args: tuple[str, ...] = ()
    kcm_args: tuple[str, ...] = ()
    kcm_controllers: tuple[str, ...] = KCM_CONTROLLERS
    """kube-controller-manager's ``--controllers``: for example without ``endpoint`` and
    ``endpointslicemirroring``, as clusters run them from v1.37 on (KEP-4974)."""
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def kcm_running(self) -> bool:
        return KCM_BINARY in self._processes

    @property
    def has_kcm_binary(self) -> bool:
        return (self.assets / KCM_BINARY).is_file()

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    @property
    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self._processes.items()}

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        reason = missing_assets(self.assets)
        if reason:
            raise ControlPlaneError(reason)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._generate_pki()
        if not self.port:
            self.port = free_port()
        write_kubeconfig(self.kubeconfig, self.server, self.ca_file, self.token, "admin")
        try:
            self._start_etcd()
            self._start_apiserver()
            if self.with_kcm and self.has_kcm_binary:
                self._start_kcm()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every process by its PID: SIGTERM, then SIGKILL after a grace period."""
        for name in reversed(list(self._processes)):
            process = self._processes.pop(name)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def restart(self, *, wipe: bool = False) -> None:
        """Stop and start again on the same port; ``wipe`` deletes etcd's data first (an API
        server that comes back with its state reset, as after an etcd restore)."""
        self.stop()
        if wipe:
            shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)
        self.start()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- requests (for set-up: admin token, blocking) -------------------------------------------

    def request(
        self, method: str, path: str, body: Any = None, *, token: str | None = None
    ) -> tuple[int, Any]:
        """One JSON request to the API server; returns (status, decoded body)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {token or self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            content_type = "application/json"
            if method == "PATCH":
                content_type = "application/merge-patch+json"
            request.add_header("Content-Type", content_type)
        context = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:  # /readyz, /healthz: plain text
            return status, raw.decode(errors="replace")

    def service_account_token(
        self, namespace: str, name: str, *, seconds: int = 3600, path: Path | None = None
    ) -> tuple[str, Path]:
        """A TokenRequest token for the ServiceAccount ``namespace/name`` (created if missing)
        and a kubeconfig that uses it: the credentials a Pod of that ServiceAccount gets."""
        self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        )
        status, body = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds},
            },
        )
        if status != 201:
            raise ControlPlaneError(f"TokenRequest for {namespace}/{name}: {status} {body}")
        token = str(body["status"]["token"])
        target = path or self.workdir / f"kubeconfig-{namespace}-{name}"
        user = f"system:serviceaccount:{namespace}:{name}"
        return token, write_kubeconfig(target, self.server, self.ca_file, token, user)

    # -- internals -----------------------------------------------------------------------------

    def _generate_pki(self) -> None:
        p = self.pki
        if (p / "sa.pub").is_file():
            return
        p.mkdir(parents=True, exist_ok=True)
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
            "-subj", "/CN=envtest-ca", "-keyout", str(p / "ca.key"), "-out", str(p / "ca.crt"),
        )  # fmt: skip
        (p / "apiserver.cnf").write_text(
            "[req]\ndistinguished_name=dn\n[dn]\n[ext]\nbasicConstraints=CA:FALSE\n"
            "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
            "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
            "DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
        )
        _openssl(
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
            "-keyout", str(p / "apiserver.key"), "-out", str(p / "apiserver.csr"),
            "-config", str(p / "apiserver.cnf"),
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", str(p / "apiserver.csr"), "-CA", str(p / "ca.crt"),
            "-CAkey", str(p / "ca.key"), "-CAcreateserial", "-days", "3650",
            "-extfile", str(p / "apiserver.cnf"), "-extensions", "ext",
            "-out", str(p / "apiserver.crt"),
        )  # fmt: skip
        _openssl("genrsa", "-out", str(p / "sa.key"), "2048")
        _openssl("rsa", "-in", str(p / "sa.key"), "-pubout", "-out", str(p / "sa.pub"))

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with self.log(name).open("ab") as log:
            process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self._processes[name] = process
        return process

    def _wait(self, name: str, ready: Any, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        process = self._processes[name]
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {process.returncode}; see {self.log(name)}"
                )
            with contextlib.suppress(OSError, ValueError):
                if ready():
                    return
            time.sleep(0.1)
        raise ControlPlaneError(
            f"{name} was not ready within {seconds:.0f} s; see {self.log(name)}"
        )

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        self._etcd_url = client_url
        self._spawn(
            "etcd",
            [
                str(self.assets / "etcd"),
                "--name=envtest",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=envtest={peer_url}",
            ],
        )

        def healthy() -> bool:
            with urllib.request.urlopen(f"{client_url}/health", timeout=1) as response:
                return bool(json.loads(response.read()).get("health") == "true")

        self._wait("etcd", healthy, 30)

    def _start_apiserver(self) -> None:
        p = self.pki
        (p / "tokens.csv").write_text(f'{self.token},admin,admin,"system:masters"\n')
        args = [
            str(self.assets / "kube-apiserver"),
            "--bind-address=127.0.0.1",
            f"--advertise-address={ADVERTISE_ADDRESS}",
            f"--secure-port={self.port}",
            f"--etcd-servers={self._etcd_url}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            f"--token-auth-file={p / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            "--allow-privileged=true",
            # Pods of a new namespace would wait for kube-controller-manager to create its
            # default ServiceAccount (or fail without it); nothing here runs pods for real.
            "--disable-admission-plugins=ServiceAccount",
            "--v=1",
        ]
        self._spawn("kube-apiserver", [*args, *self.apiserver_args])

        def ready() -> bool:
            status, _ = self.request("GET", "/readyz")
            return status == 200

        self._wait("kube-apiserver", ready, 60)

    def _start_kcm(self) -> None:
        p = self.pki
        self._spawn(
            KCM_BINARY,
            [
                str(self.assets / KCM_BINARY),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                "--secure-port=0",
                f"--controllers={','.join(self.kcm_controllers)}",
                "--use-service-account-credentials=false",
                f"--service-account-private-key-file={p / 'sa.key'}",
                f"--root-ca-file={p / 'ca.crt'}",
                "--leader-elect=false",
                "--v=2",
                *self.kcm_args,
            ],
        )

        def default_service_account() -> bool:
            status, _ = self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
            return status == 200

        self._wait(KCM_BINARY, default_service_account, 60)
