"""A data plane of network namespaces with a real kube-proxy, for traffic tests and benchmarks.

EndpointSlices only matter once something routes by them. :class:`Topology` builds, on this
machine and as root, a small "node" that a real ``kube-proxy`` (iptables or nftables mode,
:attr:`Topology.proxy_mode`) programs, pods that answer HTTP with their own name, and a client to
send requests from::

    node netns <prefix>-node   ("node-a": kube-proxy --proxy-mode=<mode>, ip_forward=1)
      lo 127.0.0.1:<api port>   socat -> unix socket -> socat (root ns) -> kube-apiserver
      node0 10.240.0.10/32      the node IP; 10.96.0.0/16 is routed here (its veth peer is
                                down, so what kube-proxy does not DNAT is dropped)
      pN  10.244.1.1/32  ---- veth ---- netns <prefix>-pN  eth0 10.244.1.N/32, HTTP :8080
      cl0 10.244.0.1/24  ---- veth ---- netns <prefix>-client  eth0 10.244.0.2/24

The root namespace gets no interface, route, iptables rule or sysctl: the API server (on
127.0.0.1 of the root namespace) reaches the node through two ``socat`` processes joined by a
unix socket in the work directory (the file system is shared across network namespaces), so
kube-proxy uses the admin kubeconfig as it is. Sysctls (``ip_forward``, ``icmp_ratelimit=0`` so
that every REJECT reads as "connection refused") are set inside the node namespace only, and
kube-proxy runs with the conntrack flags that leave the kernel's global settings alone.
:meth:`Topology.use_proxy_mode` restarts kube-proxy in the other mode on the same namespaces
(``kube-proxy --cleanup`` in between removes every mode's rules), so that one topology serves
both modes' tests.

Every process is started here and stopped by its PID; every namespace carries the run's unique
prefix (``esodp<owner pid>x<hex>``) and is deleted by name. :meth:`Topology.stop` runs on
success, failure and interruption (use ``with Topology(...)`` or ``try/finally``); a run that was
killed outright leaves a ``pids`` file under ``$TMPDIR/eso-dataplane/<prefix>/``, and
:func:`sweep_stale` (called by :meth:`Topology.start`) stops those processes by PID and deletes
those namespaces once their owner process is gone.

:func:`missing_requirements` says in one sentence why the data plane cannot run here (not root,
no ``ip netns``, no ``iptables-save``, no ``nft`` for nftables mode, no ``socat``, no
``kube-proxy`` in the assets).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from endpointslice_operator.testing.kube_proxy_rules import (
    PROXY_MODES,
    Programmed,
    ProxyMode,
    dump_command,
    programmed,
)

__all__ = [
    "CLUSTER_CIDR",
    "NODE_IP",
    "POD_PORT",
    "PROXY_MODES",
    "ProxyMode",
    "RulesWatch",
    "Topology",
    "kube_proxy_version",
    "missing_requirements",
    "sweep_stale",
]

CLUSTER_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/16"
NODE_IP = "10.240.0.10"
POD_GATEWAY = "10.244.1.1"
CLIENT_IP, CLIENT_GATEWAY = "10.244.0.2", "10.244.0.1"
POD_PORT = 8080
STOP_GRACE_SECONDS = 10.0
COMMAND_TIMEOUT = 30.0
STATE_ROOT = Path(tempfile.gettempdir()) / "eso-dataplane"
_PREFIX = re.compile(r"^esodp(\d+)x[0-9a-f]{4}$")

# Started inside a pod's namespace: answers every GET with the pod's name.
_POD_SERVER = """
import http.server, sys
name = sys.argv[1].encode() + b"\\n"
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(name)))
        self.end_headers()
        self.wfile.write(name)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[2])), Handler).serve_forever()
"""

# Started inside the client's namespace: N fresh connections, a tally of the answers.
_PROBE = """
import http.client, json, socket, sys
host, port, count, timeout = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
tally = {}
for _ in range(count):
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request("GET", "/", headers={"Connection": "close"})
        answer = conn.getresponse().read().decode().strip()
        conn.close()
    except ConnectionRefusedError:
        answer = "ERR:refused"
    except (socket.timeout, TimeoutError):
        answer = "ERR:timeout"
    except OSError as error:
        answer = "ERR:" + (error.strerror or type(error).__name__)
    tally[answer] = tally.get(answer, 0) + 1
print(json.dumps(tally))
"""


def missing_requirements(
    assets: Path | None, modes: tuple[ProxyMode, ...] = ("iptables",)
) -> str | None:
    """Why the data plane cannot run here in every one of kube-proxy's ``modes`` (``None`` when
    it can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root (network namespaces, veths, iptables inside them)"
    commands = [("ip", "iproute2"), ("iptables-save", "iptables"), ("socat", "socat")]
    if "nftables" in modes:  # kube-proxy runs nft itself in nftables mode
        commands.append(("nft", "nftables"))
    for command, package in commands:
        if shutil.which(command) is None:
            return f"needs the {command} command (apt-get install -y {package})"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"`ip netns` does not work here: {probe.stderr.strip()}"
    if assets is None:
        return "KUBEBUILDER_ASSETS is not set (a folder with etcd, kube-apiserver, kube-proxy)"
    if not (assets / "kube-proxy").is_file():
        return f"kube-proxy not found in KUBEBUILDER_ASSETS={assets}"
    return None


def kube_proxy_version(binary: Path) -> tuple[int, int]:
    """(major, minor) of a kube-proxy binary, from ``--version``."""
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    match = re.search(r"v(\d+)\.(\d+)", out)
    if match is None:
        raise RuntimeError(f"{binary} --version printed {out!r}")
    return int(match.group(1)), int(match.group(2))


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")
    return result


def _in(netns: str, *argv: str) -> list[str]:
    """``argv`` run inside ``netns`` (``ip netns exec`` execs it: the PID is its own)."""
    return ["ip", "netns", "exec", netns, *argv]


def _python(script: str, *args: str) -> list[str]:
    """This interpreter running ``script`` (standard library only: ``-I -S``)."""
    return [sys.executable, "-I", "-S", "-c", script, *args]


def _veth(netns: str, name: str, peer_netns: str) -> None:
    """A veth ``name`` in ``netns`` whose peer is ``eth0`` in ``peer_netns``."""
    _run("ip", "-n", netns, "link", "add", name, "type", "veth", "peer", "name", "eth0",
         "netns", peer_netns)  # fmt: skip


def _netns_names() -> list[str]:
    out = _run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie waiting for its parent has)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _stop_pid(pid: int, grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds, for a process that is not our child."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _delete_netns(name: str) -> None:
    """Stop whatever still runs in namespace ``name`` (by PID), then delete it by name."""
    pids = _run("ip", "netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        _stop_pid(int(pid), grace=2.0)
    _run("ip", "netns", "del", name, check=False)


def sweep_stale() -> list[str]:
    """Stop the processes and delete the namespaces of runs whose owner process is gone.

    Only what a run recorded (``$TMPDIR/eso-dataplane/<prefix>/pids``, each PID checked
    against the command line it was started with) and namespaces named ``<prefix>-*``.
    Returns the prefixes cleaned up."""
    cleaned: list[str] = []
    if not STATE_ROOT.is_dir():
        return cleaned
    for state in STATE_ROOT.iterdir():
        match = _PREFIX.match(state.name)
        if match is None or _alive(int(match.group(1))):
            continue
        pids_file = state / "pids"
        if pids_file.is_file():
            for line in reversed(pids_file.read_text().splitlines()):
                pid_text, _, argv0 = line.partition(" ")
                if pid_text.isdigit() and argv0 and _cmdline(int(pid_text)).startswith(argv0):
                    _stop_pid(int(pid_text), grace=2.0)
        for name in _netns_names():
            if name.startswith(state.name + "-"):
                _delete_netns(name)
        shutil.rmtree(state, ignore_errors=True)
        cleaned.append(state.name)
    return cleaned


@dataclass
class PodNet:
    """One pod's namespace: its IP, index (interface ``p<index>`` on the node) and server."""

    name: str
    ip: str
    index: int
    netns: str
    server: subprocess.Popen[bytes]


@dataclass
class Topology:
    """Node, pods and client namespaces with kube-proxy on the node (see the module doc)."""

    kube_proxy: Path
    """The kube-proxy binary."""
    kubeconfig: Path
    """A kubeconfig for the API server at ``https://127.0.0.1:<api_port>`` (root namespace)."""
    api_port: int
    workdir: Path
    """Logs (``kube-proxy.log``, ``pod-<name>.log``, ...) and the API server's unix socket."""
    node_name: str = "node-a"
    kube_proxy_args: tuple[str, ...] = ()
    proxy_mode: ProxyMode = "iptables"
    """kube-proxy's ``--proxy-mode`` (see :meth:`use_proxy_mode`); the rules are read as it
    writes them."""
    prefix: str = field(default_factory=lambda: f"esodp{os.getpid()}x{secrets.token_hex(2)}")
    pods: dict[str, PodNet] = field(default_factory=dict)
    _processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _namespaces: list[str] = field(default_factory=list)
    _next_index: int = 10

    @property
    def node_netns(self) -> str:
        return f"{self.prefix}-node"

    @property
    def client_netns(self) -> str:
        return f"{self.prefix}-client"

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.prefix

    @property
    def kube_proxy_pid(self) -> int:
        return self._processes["kube-proxy"].pid

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> Topology:
        sweep_stale()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._node()
            self._client()
            self._bridge_api_server()
            self._start_kube_proxy()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Every process by its PID (reverse start order), then every namespace by name."""
        for name in list(self.pods):
            with contextlib.suppress(Exception):
                self.remove_pod(name)
        for name in reversed(list(self._processes)):
            self._stop(self._processes.pop(name))
        for netns in reversed(self._namespaces):
            _delete_netns(netns)
        self._namespaces.clear()
        shutil.rmtree(self.state_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.workdir / "apiserver.sock").unlink()

    def __enter__(self) -> Topology:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- pods ------------------------------------------------------------------------------------

    def add_pod(self, name: str, *, wait: float = 30.0) -> str:
        """A namespace for pod ``name`` with an HTTP server on :8080 answering ``name``; returns
        its IP once the client reaches it directly (not through any Service)."""
        index = self._next_index
        if index > 250:
            raise RuntimeError("the topology has room for 240 pods")
        self._next_index += 1
        netns, ip, link = f"{self.prefix}-p{index}", f"10.244.1.{index}", f"p{index}"
        self._add_netns(netns)
        node = self.node_netns
        _veth(node, link, netns)
        _run("ip", "-n", node, "addr", "add", f"{POD_GATEWAY}/32", "dev", link)
        _run("ip", "-n", node, "link", "set", link, "up")
        _run("ip", "-n", node, "route", "add", f"{ip}/32", "dev", link, "src", POD_GATEWAY)
        _run("ip", "-n", netns, "addr", "add", f"{ip}/32", "dev", "eth0")
        _run("ip", "-n", netns, "link", "set", "eth0", "up")
        _run("ip", "-n", netns, "route", "add", POD_GATEWAY, "dev", "eth0")
        _run("ip", "-n", netns, "route", "add", "default", "via", POD_GATEWAY, "dev", "eth0")
        server = self._spawn(
            f"pod-{name}",
            _in(netns, *_python(_POD_SERVER, name, str(POD_PORT))),
            track=False,
        )
        self.pods[name] = PodNet(name, ip, index, netns, server)
        deadline = time.monotonic() + wait
        while True:
            if self.requests(ip, POD_PORT, 1, timeout=5.0) == Counter({name: 1}):
                return ip
            if server.poll() is not None or time.monotonic() > deadline:
                log = self.log(f"pod-{name}")
                raise RuntimeError(f"pod {name} does not answer at {ip}; see {log}")
            time.sleep(0.1)

    def remove_pod(self, name: str) -> None:
        """Stop the pod's server by PID and delete its namespace (and veth) by name."""
        pod = self.pods.pop(name)
        self._stop(pod.server)
        self._forget(pod.server.pid)
        _delete_netns(pod.netns)
        with contextlib.suppress(ValueError):
            self._namespaces.remove(pod.netns)

    # -- observing -------------------------------------------------------------------------------

    def ruleset(self) -> str:
        """kube-proxy's rules in the node namespace, as its mode writes them: ``iptables-save``,
        or ``nft -j list ruleset`` (JSON)."""
        return _run(*_in(self.node_netns, *dump_command(self.proxy_mode))).stdout

    def rules(self, key: str) -> Programmed:
        """What kube-proxy programs for Service port ``key`` (``ns/name:port``)."""
        return programmed(self.ruleset(), key, self.proxy_mode)

    def wait_rules(self, expect: dict[str, Programmed], timeout: float = 60.0) -> None:
        """Poll the rules until every key shows its expected value (or fail, naming what the
        rules showed last)."""
        deadline = time.monotonic() + timeout
        while True:
            dump = self.ruleset()
            got = {key: programmed(dump, key, self.proxy_mode) for key in expect}
            if got == expect:
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"kube-proxy's rules ({self.proxy_mode}) after {timeout:.0f} s: {got}, "
                    f"expected {expect}"
                )
            time.sleep(0.1)

    def requests(self, host: str, port: int, count: int, timeout: float = 10.0) -> Counter[str]:
        """``count`` GETs over fresh connections from the client namespace; the tally of the
        answers (a pod's name, or ``ERR:refused`` / ``ERR:timeout`` / ``ERR:<reason>``)."""
        probe = _python(_PROBE, host, str(port), str(count), str(timeout))
        out = _run(*_in(self.client_netns, *probe)).stdout
        return Counter(json.loads(out))

    def curl(self, url: str) -> str:
        """One ``curl`` from the client namespace (for people watching a demo)."""
        result = _run(*_in(self.client_netns, "curl", "-sS", "--max-time", "10", url), check=False)
        return (result.stdout or result.stderr).strip()

    def watch_rules(self, keys: Iterable[str]) -> RulesWatch:
        """A process in the node namespace that polls the rules in a tight loop and reports
        each change of what ``keys`` are programmed to, with its monotonic time."""
        module = f"{__package__}.kube_proxy_rules"
        process = self._spawn(
            f"rules-watch-{len(self._processes)}",
            _in(self.node_netns, sys.executable, "-m", module, "--mode", self.proxy_mode, *keys),
            stdout=subprocess.PIPE,
        )
        return RulesWatch(process, self)

    # -- kube-proxy's mode -----------------------------------------------------------------------

    def use_proxy_mode(self, mode: ProxyMode) -> None:
        """Run kube-proxy in ``mode`` from now on: when it runs in the other one, stop it by PID,
        remove every mode's rules (``kube-proxy --cleanup``: iptables, ipvs and nftables) and
        start it again in ``mode`` on the same namespaces and pods; returns once it has synced."""
        if mode not in PROXY_MODES:
            raise ValueError(f"proxy mode {mode!r}: one of {', '.join(PROXY_MODES)}")
        if mode == self.proxy_mode and "kube-proxy" in self._processes:
            return
        running = self._processes.get("kube-proxy")
        if running is not None:
            self._stop_tracked(running)
        cleanup = _run(*_in(self.node_netns, str(self.kube_proxy), "--cleanup"), check=False)
        with self.log("kube-proxy").open("a") as log:
            log.write(f"--- kube-proxy --cleanup: exit {cleanup.returncode}\n{cleanup.stderr}")
            log.write(f"--- restarting in {mode} mode\n")
        self.proxy_mode = mode
        self._start_kube_proxy()

    # -- internals -------------------------------------------------------------------------------

    def _add_netns(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self._namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def _node(self) -> None:
        node = self.node_netns
        self._add_netns(node)
        # The node's IP, and a device the Service CIDR is routed to: a connection to a ClusterIP
        # must be routable before kube-proxy's DNAT (or REJECT) applies; what is not DNATed goes
        # to a veth whose peer stays down and is dropped.
        _run("ip", "-n", node, "link", "add", "node0", "type", "veth", "peer", "name", "sink0")
        _run("ip", "-n", node, "addr", "add", f"{NODE_IP}/32", "dev", "node0")
        _run("ip", "-n", node, "link", "set", "node0", "up")
        _run("ip", "-n", node, "route", "add", SERVICE_CIDR, "dev", "node0", "src", NODE_IP)
        # In the node namespace only: forward between the client and the pods; answer every
        # rejected connection with an ICMP error (the kernel rate-limits them by default).
        _run(*_in(node, "sysctl"), "-qw", "net.ipv4.ip_forward=1")
        _run(*_in(node, "sysctl"), "-qw", "net.ipv4.icmp_ratelimit=0")

    def _client(self) -> None:
        client, node = self.client_netns, self.node_netns
        self._add_netns(client)
        _veth(node, "cl0", client)
        _run("ip", "-n", node, "addr", "add", f"{CLIENT_GATEWAY}/24", "dev", "cl0")
        _run("ip", "-n", node, "link", "set", "cl0", "up")
        _run("ip", "-n", client, "addr", "add", f"{CLIENT_IP}/24", "dev", "eth0")
        _run("ip", "-n", client, "link", "set", "eth0", "up")
        _run("ip", "-n", client, "route", "add", "default", "via", CLIENT_GATEWAY)

    def _bridge_api_server(self) -> None:
        sock = self.workdir / "apiserver.sock"
        with contextlib.suppress(OSError):
            sock.unlink()
        self._spawn(
            "socat-root",
            ["socat", f"UNIX-LISTEN:{sock},fork,mode=600", f"TCP:127.0.0.1:{self.api_port}"],
        )
        self._spawn(
            "socat-node",
            _in(
                self.node_netns,
                "socat",
                f"TCP-LISTEN:{self.api_port},bind=127.0.0.1,reuseaddr,fork",
                f"UNIX-CONNECT:{sock}",
            ),
        )

    def _start_kube_proxy(self, timeout: float = 60.0) -> None:
        process = self._spawn(
            "kube-proxy",
            _in(
                self.node_netns,
                str(self.kube_proxy),
                f"--kubeconfig={self.kubeconfig}",
                f"--hostname-override={self.node_name}",
                f"--proxy-mode={self.proxy_mode}",
                f"--bind-address={NODE_IP}",
                f"--cluster-cidr={CLUSTER_CIDR}",
                # 0: leave the kernel's conntrack settings (global ones included) alone
                "--conntrack-max-per-core=0",
                "--conntrack-tcp-timeout-established=0",
                "--conntrack-tcp-timeout-close-wait=0",
                # sync on every change (the default waits at least 1 s between syncs); v1.36
                # reads both for nftables mode too ("NFTables sync params" minSyncPeriod="0s")
                "--iptables-min-sync-period=0s",
                "--iptables-sync-period=30s",
                "--metrics-bind-address=127.0.0.1:10249",
                "--healthz-bind-address=127.0.0.1:10256",
                "--v=2",
                *self.kube_proxy_args,
            ),
        )
        # Synced once it programs the API server's own Service.
        deadline = time.monotonic() + timeout
        api = "default/kubernetes:https"
        while programmed(self.ruleset(), api, self.proxy_mode) in ("absent", ()):
            if process.poll() is not None:
                raise RuntimeError(
                    f"kube-proxy exited with {process.returncode}; see {self.log('kube-proxy')}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"kube-proxy programmed nothing in {timeout:.0f} s; see "
                    f"{self.log('kube-proxy')}"
                )
            time.sleep(0.2)

    def _spawn(
        self, name: str, argv: list[str], *, track: bool = True, stdout: int | None = None
    ) -> subprocess.Popen[bytes]:
        with self.log(name).open("ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=stdout if stdout is not None else log,
                stderr=log,
            )
        # `ip netns exec NS CMD` execs CMD: the PID and the command line are CMD's own
        self.remember(process.pid, argv[4] if argv[:3] == _in("")[:3] else argv[0])
        if track:
            self._processes[name] = process
        return process

    def remember(self, pid: int, command: str) -> None:
        """Record a process of this run (``command``: the start of its command line) for
        :func:`sweep_stale`, in case the run is killed before :meth:`stop`."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / "pids").open("a") as pids:
            pids.write(f"{pid} {command}\n")

    def _forget(self, pid: int) -> None:
        pids = self.state_dir / "pids"
        if pids.is_file():
            lines = [ln for ln in pids.read_text().splitlines() if not ln.startswith(f"{pid} ")]
            pids.write_text("".join(f"{ln}\n" for ln in lines))

    def _stop_tracked(self, process: subprocess.Popen[bytes]) -> None:
        self._processes = {k: v for k, v in self._processes.items() if v is not process}
        self._stop(process)
        self._forget(process.pid)

    @staticmethod
    def _stop(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()


class RulesWatch:
    """Changes of kube-proxy's rules as the watcher process reports them (see
    :meth:`Topology.watch_rules`): ``(monotonic time, key, programmed)``, in order, collected by
    a reader thread into :attr:`changes`."""

    def __init__(self, process: subprocess.Popen[bytes], topology: Topology) -> None:
        self.process = process
        self.topology = topology
        self.changes: list[tuple[float, str, Programmed]] = []
        self._condition = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="rules-watch", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            data = json.loads(line)
            rules = data["rules"]
            change = (data["t"], data["key"], tuple(rules) if isinstance(rules, list) else rules)
            with self._condition:
                self.changes.append(change)
                self._condition.notify_all()

    def first(
        self, key: str, after: float, check: Callable[[Programmed], bool], timeout: float = 60.0
    ) -> float:
        """The monotonic time of the first change of ``key`` after ``after`` whose rules pass
        ``check`` (waiting for it up to ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for t, changed, rules in self.changes:
                    if changed == key and t >= after and check(rules):
                        return t
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.process.poll() is not None:
                    last = [c for c in self.changes if c[1] == key][-1:]
                    raise AssertionError(f"{key}: no such rules in {timeout:.0f} s; last {last}")
                self._condition.wait(min(remaining, 1.0))

    def stop(self) -> None:
        self.topology._stop_tracked(self.process)
        self._reader.join(5)
