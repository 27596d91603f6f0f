"""JSON requests straight through the API client's aiohttp session, for the writes that every
pod event can cost (EndpointSlice and Endpoints create, replace, delete).

kubernetes-asyncio's generated methods go through ``ApiClient.__call_api``: parameter checks,
``Accept`` and ``Content-Type`` negotiation, ``sanitize_for_serialization`` of headers and path
parameters, query building, then ``RESTClientObject.request`` with its own ``json.dumps`` of the
body into a ``str`` (which aiohttp encodes again). Measured per slice PUT, that machinery cost
about as much CPU as aiohttp itself. :class:`DirectRequests` sends the same request with what
it needs and nothing else, and keeps every setting of the client as the generic path applies it:

* the session (``rest_client.pool_manager``): its connector holds the TLS context, with the CA,
  the client certificate and key and ``verify_ssl``; and the connection pool;
* ``rest_client.proxy`` / ``proxy_headers`` (from ``configuration.proxy``: kubeconfig
  ``proxy-url`` or :func:`~.api_client.resolve_env_proxy`) and ``server_hostname``
  (kubeconfig ``tls-server-name``), passed per request as ``RESTClientObject.request`` does;
* the client's default headers (``User-Agent``) and cookie;
* authentication through ``ApiClient.update_params_for_auth`` on every request, as the
  generated methods do: that calls ``configuration.auth_settings()``, which runs
  ``configuration.refresh_api_key_hook`` first (the in-cluster token file re-read, exec and OIDC
  refreshes) and yields the ``authorization`` header, bearer token or ``Basic`` credentials
  alike (kubernetes-asyncio's kubeconfig loader keeps both as the ``BearerToken`` key);
* no client-side timeout, as ``RESTClientObject.request`` without ``_request_timeout``.

Two deliberate differences: ``Accept`` is ``application/json`` only (the generated methods also
offer YAML and protobuf, which the caller could not read), and the body goes out as compact
JSON bytes (:mod:`.json_codec`).

The response is returned unread; :func:`~.writer.raise_for_status` reads it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
from kubernetes_asyncio.client import ApiClient
from yarl import URL

from endpointslice_operator.controller.json_codec import dump_bytes

__all__ = ["DirectRequests", "path_segment"]

AUTH_SETTINGS = ("BearerToken",)
"""The only security scheme of the Kubernetes OpenAPI spec, as every generated method lists."""
NO_TIMEOUT = aiohttp.ClientTimeout()
JSON = "application/json"


def path_segment(value: str) -> str:
    """A name or namespace quoted for the URL path, as kubernetes-asyncio quotes path
    parameters (``safe_chars_for_path_param`` is empty by default: everything is escaped)."""
    return quote(value, safe="")


class DirectRequests:
    """JSON requests on one kubernetes-asyncio ``ApiClient``'s session and settings."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api_client: Any = api_client
        self._host = ""
        self._base = ""

    def _url(self, path: str, query: list[tuple[str, str]]) -> URL:
        host = str(self._api_client.configuration.host)
        if host != self._host:
            # Parsed (and IDNA/percent-encoded) once per host; each path is already quoted.
            self._host, self._base = host, str(URL(host))
        url = self._base + path
        if query:
            url += "?" + urlencode(query)
        return URL(url, encoded=True)

    async def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> aiohttp.ClientResponse:
        """Send ``method`` to ``path`` (quoted already, see :func:`path_segment`) with ``body``
        as JSON; the aiohttp response, unread. Connection failures raise aiohttp's errors, as
        the generated methods do."""
        api_client = self._api_client
        headers: dict[str, str] = {**api_client.default_headers, "Accept": JSON}
        if api_client.cookie:
            headers["Cookie"] = api_client.cookie
        query: list[tuple[str, str]] = []
        applied = api_client.update_params_for_auth(headers, query, AUTH_SETTINGS)
        if inspect.isawaitable(applied):  # a coroutine in current kubernetes-asyncio releases
            await applied
        rest = api_client.rest_client
        options: dict[str, Any] = {"headers": headers, "timeout": NO_TIMEOUT}
        if body is not None:
            headers["Content-Type"] = JSON
            options["data"] = dump_bytes(body)
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.proxy_headers:
            options["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            options["server_hostname"] = rest.server_hostname
        session: aiohttp.ClientSession = rest.pool_manager
        return await session.request(method, self._url(path, query), **options)
