"""The operator's kubernetes-asyncio client: no environment look-ups per request.

aiohttp's ``trust_env`` reads ``~/.netrc`` and the proxy variables in a worker thread on every
request (measured 1.7 ms -> 0.6 ms per GET without it), so the proxy is resolved once
(``resolve_env_proxy``) and the session replaced; ``~/.netrc`` is not used (aiohttp refuses it
beside our ``Authorization``). Every request gets ``--api-timeout``. The per-event writes go
through :mod:`.direct_requests` and, without a proxy, ``OperatorApiClient.keepalive``
(:mod:`.keepalive`): 5-13% of the CPU in bursts (docs/performance.md).
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio.client import ApiClient, Configuration
from yarl import URL

from endpointslice_operator.controller.api.keepalive import MAX_IDLE, KeepAlivePool, tls_context

__all__ = ["DEFAULT_API_TIMEOUT", "READ_BUFSIZE", "OperatorApiClient", "resolve_env_proxy"]

log = logging.getLogger(__name__)

READ_BUFSIZE = 2**21
"""What kubernetes-asyncio gives its session: watch events of large objects exceed the default."""
DEFAULT_API_TIMEOUT = 30.0
"""Seconds; ``--api-timeout``'s default."""


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
    server (:mod:`.keepalive`), unless a proxy is configured; and a client-side timeout on every
    request that does not give its own (``api_timeout`` seconds; watches give theirs).

    kubernetes-asyncio passes ``aiohttp.ClientTimeout()`` (no limit at all) for a request
    without ``_request_timeout``, overriding any session default, so the default is applied
    here, where every generated method and ``call_api`` end (``ApiClient.request``); the
    writers' requests (:mod:`.direct_requests`) read ``api_timeout`` too. A server that accepts
    a connection and never answers fails the request after ``api_timeout`` (``TimeoutError``),
    which the caller retries with backoff like any failed call.

    Resolve the proxy into the configuration (``resolve_env_proxy``) before creating it.
    """

    def __init__(
        self,
        configuration: Configuration,
        *args: Any,
        api_timeout: float = DEFAULT_API_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        if not api_timeout > 0:
            raise ValueError(f"api_timeout must be greater than 0, got {api_timeout!r}")
        super().__init__(configuration, *args, **kwargs)
        self.api_timeout = api_timeout
        self._default_timeout = aiohttp.ClientTimeout(total=api_timeout)
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

    def request(
        self,
        method: str,
        url: str,
        query_params: Any = None,
        headers: Any = None,
        post_params: Any = None,
        body: Any = None,
        _preload_content: bool = True,
        _request_timeout: Any = None,
    ) -> Any:
        if _request_timeout is None:
            _request_timeout = self._default_timeout
        return super().request(
            method,
            url,
            query_params=query_params,
            headers=headers,
            post_params=post_params,
            body=body,
            _preload_content=_preload_content,
            _request_timeout=_request_timeout,
        )

    async def close(self) -> None:
        # The session is closed even when closing the keep-alive pool fails or is cancelled.
        try:
            if self.keepalive is not None:
                await self.keepalive.close()
        finally:
            await super().close()
