"""The operator's HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz`` (aiohttp).

* ``/metrics``: the Prometheus text exposition of the :class:`OperatorMetrics` registry.
* ``/healthz``: liveness. ``200 ok`` whenever the event loop is able to answer; a blocked or dead
  loop cannot, which is what a liveness probe should detect.
* ``/readyz``: readiness. ``503`` until :meth:`HealthServer.set_ready` is called with True (the
  operator does so once its caches are filled), ``200 ok`` afterwards.

Only counts and durations leave the process; no object names or contents are served.
"""

from __future__ import annotations

import logging
import os

from aiohttp import web

from endpointslice_operator.metrics import CONTENT_TYPE, OperatorMetrics

__all__ = ["HealthServer", "ListenError"]

logger = logging.getLogger(__name__)


class ListenError(RuntimeError):
    """The metrics port cannot be listened on (taken, or not allowed); one line naming it."""


class HealthServer:
    """Serves metrics and health probes on ``host:port`` (port 0 picks a free port)."""

    def __init__(
        self, metrics: OperatorMetrics, *, host: str = "0.0.0.0", port: int = 8080
    ) -> None:
        self.metrics = metrics
        self.host = host
        self._requested_port = port
        self._ready = False
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

        app = web.Application()
        app.router.add_get("/metrics", self._handle_metrics)
        app.router.add_get("/healthz", self._handle_healthz)
        app.router.add_get("/readyz", self._handle_readyz)
        self.app = app

    # -- state ---------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self._ready

    def set_ready(self, ready: bool) -> None:
        """Mark the operator ready (caches filled) or not ready again."""
        if ready != self._ready:
            logger.info("Readiness changed to %s", "ready" if ready else "not ready")
        self._ready = ready

    @property
    def port(self) -> int:
        """The port actually listened on (useful with port 0); only valid after :meth:`start`."""
        if self._port is None:
            raise RuntimeError("the health server is not started")
        return self._port

    @property
    def url(self) -> str:
        """Base URL for clients on this machine, e.g. ``http://127.0.0.1:8080``."""
        host = self.host
        if host in ("", "0.0.0.0"):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the health server is already started")
        runner = web.AppRunner(self.app, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self._requested_port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
            raise ListenError(
                f"cannot listen on {self.host}:{self._requested_port} "
                f"(--metrics-host / --metrics-port): {reason}"
            ) from exc
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        address = runner.addresses[0]
        self._port = int(address[1])
        logger.info("Serving /metrics, /healthz and /readyz on %s:%d", self.host, self._port)

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # -- handlers ------------------------------------------------------------------------------

    async def _handle_metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def _handle_healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _handle_readyz(self, _: web.Request) -> web.Response:
        if self._ready:
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")
