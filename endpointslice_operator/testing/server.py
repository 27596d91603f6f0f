"""The emulator as a running server: lifecycle, kubeconfig, and the async context manager."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from endpointslice_operator.testing.app import ApiApp
from endpointslice_operator.testing.control_loop import ControlLoop
from endpointslice_operator.testing.faults import FaultConfig, FaultInjector
from endpointslice_operator.testing.gc import Controllers
from endpointslice_operator.testing.kubelet import DEFAULT_START_DELAY, SimulatedNodes
from endpointslice_operator.testing.requestlog import DEFAULT_MAX_ENTRIES, RequestLog
from endpointslice_operator.testing.store import DEFAULT_HISTORY_SIZE, Store
from endpointslice_operator.testing.workloads import DeploymentController, ReplicaSetController

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_BOOKMARK_INTERVAL = 60.0  # kube-apiserver sends watch bookmarks about once a minute
CONTEXT_NAME = "emulator"


def kubeconfig_document(url: str, namespace: str = "default") -> dict[str, object]:
    """A kubeconfig for a plain-HTTP server: one cluster, one (token) user, current context."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT_NAME, "user": {"token": "emulator-token"}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT_NAME,
    }


def write_kubeconfig(path: Path, url: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig_document(url), sort_keys=False))
    os.replace(tmp, path)


class Emulator:
    """A kube-apiserver stand-in serving plain HTTP on 127.0.0.1 in the running event loop.

    ``store`` gives synchronous access to the objects, ``requests`` is the request log (the
    last ``request_log_size`` requests), ``faults`` the live fault configuration and
    ``faults_injected`` counts what was injected. ``history_size`` bounds the watch events kept
    per resource for resuming watches; ``bookmark_interval`` spaces watch bookmarks.

    Deployments and ReplicaSets always have their controllers (:mod:`.workloads`). With
    ``nodes=N`` the emulator also creates N Ready Nodes in zones and is their scheduler and
    kubelet (:mod:`.kubelet`): pods then start ``pod_start_delay`` seconds after creation.
    """

    def __init__(
        self,
        *,
        faults: FaultConfig | None = None,
        seed: int = 0,
        port: int = 0,
        host: str = "127.0.0.1",
        kubeconfig_path: Path | None = None,
        history_size: int = DEFAULT_HISTORY_SIZE,
        bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        request_log_size: int = DEFAULT_MAX_ENTRIES,
        nodes: int = 0,
        pod_start_delay: float = DEFAULT_START_DELAY,
    ) -> None:
        self.store = Store(seed=seed, history_size=history_size)
        self.requests = RequestLog(request_log_size)
        self.injector = FaultInjector(faults or FaultConfig(), seed)
        self.controllers = Controllers(self.store)
        self.kubelet: SimulatedNodes | None = None
        self.loops: list[ControlLoop[Any]] = [
            ReplicaSetController(self.store),
            DeploymentController(self.store),
        ]
        self.host = host
        self.requested_port = port
        self.bookmark_interval = bookmark_interval
        self._kubeconfig_path = kubeconfig_path
        self._owns_kubeconfig = kubeconfig_path is None
        self._runner: web.AppRunner | None = None
        self._port = 0
        for name in namespaces:
            if self.store.get("namespaces", None, name) is None:
                self.store.create_namespace(name)
        if nodes:
            self.kubelet = SimulatedNodes(self.store, nodes, start_delay=pod_start_delay)
            self.loops.append(self.kubelet)

    # -----------------------------------------------------------------------------------------
    # Public properties

    @property
    def faults(self) -> FaultConfig:
        return self.injector.config

    @faults.setter
    def faults(self, config: FaultConfig) -> None:
        self.injector.config = config

    @property
    def faults_injected(self) -> Counter[str]:
        """Injected faults by kind (see the constants in ``testing.faults``)."""
        return self.injector.injected

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the emulator is not running")
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        if self._kubeconfig_path is None:
            raise RuntimeError("the emulator is not running")
        return self._kubeconfig_path

    # -----------------------------------------------------------------------------------------
    # Lifecycle

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the emulator is already running")
        api = ApiApp(self)
        runner = web.AppRunner(
            api.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=1.0,
            handler_cancellation=True,  # a client that hangs up ends its watch at once
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self._port = sockets[0].getsockname()[1] if sockets else self.requested_port
        if self._kubeconfig_path is None:
            fd, name = tempfile.mkstemp(prefix="emulator-kubeconfig-", suffix=".yaml")
            os.close(fd)
            self._kubeconfig_path = Path(name)
        write_kubeconfig(self._kubeconfig_path, self.url)
        await self.controllers.start()
        for loop in self.loops:
            await loop.start()

    async def stop(self) -> None:
        if self._runner is None:
            return
        self.store.close_watchers()
        for loop in self.loops:
            await loop.stop()
        await self.controllers.stop()
        await self._runner.cleanup()
        self._runner = None
        self._port = 0
        if self._owns_kubeconfig and self._kubeconfig_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._kubeconfig_path.unlink()
            self._kubeconfig_path = None

    async def wait_idle(self) -> None:
        """Wait until garbage collection, namespace cleanup and the other controllers have
        nothing queued (timers, such as a simulated pod's start, may still be pending)."""
        for _ in range(2):  # one controller's writes can queue work for another
            await self.controllers.wait_idle()
            for loop in self.loops:
                await loop.wait_idle()

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


@contextlib.asynccontextmanager
async def run_emulator(
    *,
    faults: FaultConfig | None = None,
    seed: int = 0,
    port: int = 0,
    kubeconfig_path: Path | None = None,
    history_size: int = DEFAULT_HISTORY_SIZE,
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
    nodes: int = 0,
    pod_start_delay: float = DEFAULT_START_DELAY,
) -> AsyncIterator[Emulator]:
    """Serve the emulator on 127.0.0.1 (a free port when ``port`` is 0) in the current loop."""
    emulator = Emulator(
        faults=faults,
        seed=seed,
        port=port,
        kubeconfig_path=kubeconfig_path,
        history_size=history_size,
        bookmark_interval=bookmark_interval,
        nodes=nodes,
        pod_start_delay=pod_start_delay,
    )
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()
