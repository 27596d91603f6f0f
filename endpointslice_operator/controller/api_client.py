"""The operator's kubernetes-asyncio client: no environment look-ups per request.

* kubernetes-asyncio opens its aiohttp session with ``trust_env=True``, so that ``HTTPS_PROXY``
  and ``NO_PROXY`` are honoured. aiohttp implements that per request: it reads ``~/.netrc`` and
  the proxy variables in a worker thread each time (``run_in_executor`` and ``to_thread``), two
  thread hops that cost more CPU than the request itself against a local API server (measured
  1.7 ms -> 0.6 ms per GET, client and emulator in one process). The environment does not
  change while the operator runs, so the proxy is resolved once (``resolve_env_proxy``) and the
  session replaced by one that does not look again. A ``~/.netrc`` entry is deliberately not
  used: the client sends its own ``Authorization`` header, and aiohttp refuses a request that
  carries both.

The writes on the per-event path (EndpointSlices, Endpoints) do not go through the client's
generic request machinery at all (:mod:`.direct_requests`), and, unless a proxy is configured,
not through aiohttp either: ``OperatorApiClient.keepalive`` (:mod:`.keepalive`) holds their
connections, closed with the client.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from endpointslice_operator.controller.keepalive import MAX_IDLE, KeepAlivePool, tls_context

__all__ = ["READ_BUFSIZE", "OperatorApiClient", "resolve_env_proxy"]

log = logging.getLogger(__name__)

READ_BUFSIZE = 2**21
"""What kubernetes-asyncio gives its session: watch events of large objects exceed the default."""


def resolve_env_proxy(configuration: Configuration) -> None:
    """Set ``configuration.proxy`` from ``HTTPS_PROXY``/``HTTP_PROXY`` unless ``NO_PROXY``
    exempts the API server, as aiohttp's ``trust_env`` would per request. An explicit proxy in
    the configuration (kubeconfig ``proxy-url``) wins."""
    config: Any = configuration
    if config.proxy:
        return
    try:
        proxy, auth = get_env_proxy_for_url(URL(str(config.host)))
    except LookupError:
        return
    config.proxy = str(proxy)
    if auth is not None:
        config.proxy_headers = {
            **(config.proxy_headers or {}),
            "Proxy-Authorization": auth.encode(),
        }
    log.info("Reaching the API server through the proxy %s (from the environment)", proxy)


class OperatorApiClient(ApiClient):
    """``ApiClient`` on a session with ``trust_env=False`` (same connector, so the TLS context
    and the connection pool stay), plus ``keepalive``: the writers' own connections to the API
    server (:mod:`.keepalive`), unless a proxy is configured.

    Resolve the proxy into the configuration (``resolve_env_proxy``) before creating it.
    """

    def __init__(self, configuration: Configuration, *args: Any, **kwargs: Any) -> None:
        super().__init__(configuration, *args, **kwargs)
        rest: Any = self.rest_client
        old: aiohttp.ClientSession = rest.pool_manager
        connector = old.connector
        if connector is not None:
            old.detach()
            rest.pool_manager = aiohttp.ClientSession(
                connector=connector, trust_env=False, read_bufsize=READ_BUFSIZE
            )
        self.keepalive: KeepAlivePool | None = None
        if not rest.proxy:
            self.keepalive = KeepAlivePool(
                lambda: tls_context(configuration),
                rest.server_hostname,
                max_idle=int(getattr(configuration, "connection_pool_maxsize", 0) or MAX_IDLE),
            )

    async def close(self) -> None:
        if self.keepalive is not None:
            await self.keepalive.close()
        await super().close()
