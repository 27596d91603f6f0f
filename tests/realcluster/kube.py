"""A small async JSON client for real API servers, from any kubeconfig (tokens or client certs).

Tests use it to create objects, set pod status, read slices and count writes from a watch; the
operator under test always runs as its own process (``operator_process.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import Configuration

from tests.realcluster.deadline import Deadline

JSON = dict[str, Any]
LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
OURS = "endpointslice-operator.io"
KCM = "endpointslice-controller.k8s.io"


class ApiFailure(AssertionError):
    def __init__(self, method: str, path: str, status: int, body: Any) -> None:
        super().__init__(f"{method} {path}: {status} {body}")
        self.status = status
        self.body = body


class Kube:
    """``async with await Kube.load(path) as kube:`` then ``await kube.get(path)`` etc."""

    def __init__(self, configuration: Configuration, kubeconfig: Path) -> None:
        self.configuration = configuration
        self.kubeconfig = kubeconfig
        self.base = str(configuration.host).rstrip("/")
        context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
        if configuration.cert_file:
            context.load_cert_chain(configuration.cert_file, configuration.key_file)
        if not configuration.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._ssl = context
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    async def load(cls, kubeconfig: Path) -> Kube:
        configuration = Configuration()
        await k8s_config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration
        )
        return cls(configuration, kubeconfig)

    async def __aenter__(self) -> Kube:
        headers = {"Accept": "application/json"}
        token = self.configuration.api_key.get("BearerToken") or self.configuration.api_key.get(
            "authorization"
        )
        if token:
            headers["Authorization"] = token if " " in token else f"Bearer {token}"
        self._session = aiohttp.ClientSession(
            headers=headers, connector=aiohttp.TCPConnector(ssl=self._ssl)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use `async with`"
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        content_type: str = "application/json",
        ok: tuple[int, ...] = (200, 201, 202),
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The decoded body; raises :class:`ApiFailure` on a status outside ``ok``."""
        data = None if body is None else json.dumps(body)
        headers = dict(headers or {})
        if data is not None:
            headers["Content-Type"] = content_type
        async with self.session.request(
            method, self.base + path, data=data, params=params, headers=headers
        ) as response:
            raw = await response.read()
            decoded = json.loads(raw) if raw else None
            if response.status not in ok:
                raise ApiFailure(method, path, response.status, decoded)
            return decoded

    async def status_of(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        try:
            return 200, await self.request(method, path, body, ok=tuple(range(200, 300)))
        except ApiFailure as failure:
            return failure.status, failure.body

    async def get(self, path: str, **params: str) -> Any:
        return await self.request("GET", path, params=params or None)

    async def create(self, path: str, body: JSON) -> JSON:
        return await self.request("POST", path, body)  # type: ignore[no-any-return]

    async def patch(self, path: str, body: JSON) -> JSON:
        return await self.request(  # type: ignore[no-any-return]
            "PATCH", path, body, content_type="application/merge-patch+json"
        )

    async def delete(self, path: str, body: JSON | None = None) -> Any:
        return await self.request("DELETE", path, body, ok=(200, 202, 404))

    # -- helpers for the objects the tests use -------------------------------------------------

    async def slices(self, namespace: str, service: str, manager: str | None = OURS) -> list[JSON]:
        selector = f"{LABEL_SERVICE_NAME}={service}"
        if manager is not None:
            selector += f",{LABEL_MANAGED_BY}={manager}"
        body = await self.get(
            f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
            labelSelector=selector,
        )
        return list(body["items"])

    async def events(self, namespace: str, reason: str | None = None) -> list[JSON]:
        body = await self.get(f"/api/v1/namespaces/{namespace}/events")
        return [e for e in body["items"] if reason is None or e.get("reason") == reason]

    @contextlib.asynccontextmanager
    async def watch(
        self, path: str, *, resource_version: str, **params: str
    ) -> AsyncIterator[list[JSON]]:
        """Collect a watch's events into a list while the block runs."""
        events: list[JSON] = []
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "false",
            "timeoutSeconds": "600",
            **params,
        }

        async def reader() -> None:
            async with self.session.get(self.base + path, params=query) as response:
                assert response.status == 200, await response.text()
                async for line in response.content:
                    if line.strip():
                        events.append(json.loads(line))

        task = asyncio.create_task(reader())
        try:
            yield events
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                await task


async def eventually(
    check: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.1
) -> Any:
    """Await ``check()`` (a coroutine function) until it returns a truthy value without raising
    AssertionError; the last failure is the error. ``timeout`` counts idle-machine seconds
    (:class:`~tests.realcluster.deadline.Deadline`): it stretches with the measured load."""
    deadline = Deadline(timeout)
    while True:
        error: AssertionError | None = None
        try:
            result = await check()
            if result:
                return result
        except AssertionError as exc:
            error = exc
        if deadline.expired():
            raise AssertionError(f"condition not met within {deadline.describe()}") from error
        await asyncio.sleep(interval)
