"""JSON requests with a kubernetes-asyncio client's settings but without its request machinery.

For the writes every pod event can cost (EndpointSlice and Endpoints create, replace, delete):
``ApiClient.__call_api``'s negotiation, sanitizing and double JSON encoding measured at about as
much CPU as aiohttp itself. :class:`DirectRequests` keeps every setting: the connection
(:class:`~.keepalive.KeepAlivePool`, or the client's session with its proxy and
``server_hostname``), default headers and cookie, ``update_params_for_auth`` on every request
(so token refresh hooks run), and a client-side timeout (``--api-timeout``). Differences:
``Accept`` is JSON only and the body is compact JSON bytes (:mod:`.json_codec`). The response is
returned for :func:`~.writer.raise_for_status`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from kubernetes_asyncio.client import ApiClient
from yarl import URL

from endpointslice_operator.controller.api.client import DEFAULT_API_TIMEOUT
from endpointslice_operator.controller.api.json_codec import dump_bytes
from endpointslice_operator.controller.api.keepalive import KeepAlivePool, Response

__all__ = ["JSON", "MERGE_PATCH", "DirectRequests", "path_segment"]

AUTH_SETTINGS = ("BearerToken",)
"""The only security scheme of the Kubernetes OpenAPI spec, as every generated method lists."""
JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


def path_segment(value: str) -> str:
    """A name or namespace quoted for the URL path, as kubernetes-asyncio quotes path
    parameters (``safe_chars_for_path_param`` is empty by default: everything is escaped)."""
    return quote(value, safe="")


class DirectRequests:
    """JSON requests with one kubernetes-asyncio ``ApiClient``'s settings."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api_client: Any = api_client
        self._timeout = float(getattr(api_client, "api_timeout", DEFAULT_API_TIMEOUT))
        self._client_timeout = aiohttp.ClientTimeout(total=self._timeout)
        self._host = ""
        self._origin = URL()
        self._prefix = ""

    def _target(self, path: str, query: list[tuple[str, str]]) -> str:
        """The request target (path and query) on the server; ``path`` is quoted already."""
        host = str(self._api_client.configuration.host)
        if host != self._host:
            # Parsed (and IDNA/percent-encoded) once per host. A host with a path (an API
            # behind a prefix, as Rancher's cluster proxy) keeps it before every path.
            base = URL(host)
            self._host, self._origin = host, base.origin()
            self._prefix = base.raw_path.rstrip("/")
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query)
        return target

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        content_type: str = JSON,
    ) -> aiohttp.ClientResponse | Response:
        """Send ``method`` to ``path`` (quoted already, see :func:`path_segment`) with ``body``
        as JSON, sent as ``content_type`` (a patch names its kind); the response (an aiohttp
        one unread, or a complete :class:`~.keepalive.Response`). Connection failures raise
        aiohttp's errors, as the generated methods do."""
        api_client = self._api_client
        headers: dict[str, str] = {**api_client.default_headers, "Accept": JSON}
        if api_client.cookie:
            headers["Cookie"] = api_client.cookie
        query: list[tuple[str, str]] = []
        applied = api_client.update_params_for_auth(headers, query, AUTH_SETTINGS)
        if inspect.isawaitable(applied):  # a coroutine in current kubernetes-asyncio releases
            await applied
        rest = api_client.rest_client
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = dump_bytes(body)
        keepalive: KeepAlivePool | None = getattr(api_client, "keepalive", None)
        target = self._target(path, query)
        if keepalive is not None and not rest.proxy:
            # A timeout cancels the request; the pool closes that connection.
            async with asyncio.timeout(self._timeout):
                return await keepalive.request(method, self._origin, target, headers, data)
        options: dict[str, Any] = {"headers": headers, "timeout": self._client_timeout}
        if data is not None:
            options["data"] = data
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.proxy_headers:
            options["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            options["server_hostname"] = rest.server_hostname
        session: aiohttp.ClientSession = rest.pool_manager
        url = URL(str(self._origin) + target, encoded=True)
        return await session.request(method, url, **options)
