"""Fixtures: a running emulator and an aiohttp session pointed at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from endpointslice_operator.testing import Emulator, run_emulator

JSON = dict[str, Any]


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator(seed=7) as emulator:
        yield emulator


class Client:
    """A thin JSON client: returns (status, body) and never raises on HTTP errors."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self.session.request(
            method, self.base + path, data=data, headers=headers, params=params
        ) as response:
            text = await response.text()
            parsed = json.loads(text) if text and text[0] in "[{" else text
            return response.status, parsed

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body)

    async def put(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body)

    async def patch(self, path: str, body: Any, kind: str = "merge") -> tuple[int, Any]:
        content_type = {
            "merge": "application/merge-patch+json",
            "json": "application/json-patch+json",
            "strategic": "application/strategic-merge-patch+json",
        }[kind]
        return await self.request("PATCH", path, body, content_type=content_type)

    async def delete(self, path: str, body: Any = None, **params: str) -> tuple[int, Any]:
        return await self.request("DELETE", path, body, params=params or None)


@pytest.fixture
async def client(emu: Emulator) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(session, emu.url)


SLICES = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"


def endpoint_slice(name: str = "", **extra: Any) -> JSON:
    meta: JSON = {"name": name} if name else {"generateName": "web-"}
    meta.update(extra.pop("metadata", {}))
    body: JSON = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    body.update(extra)
    return body


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }
