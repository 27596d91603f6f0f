"""The operator's API client: the proxy resolved once from the environment, no per-request
look-ups."""

from __future__ import annotations

import base64

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api

from endpointslice_operator.controller.api.client import (
    OperatorApiClient,
    resolve_env_proxy,
)
from endpointslice_operator.controller.watch.kopf_wiring import connection_info
from endpointslice_operator.testing import run_emulator

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def clean_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


def test_the_environment_proxy_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy.example:3128")
    configuration = Configuration(host="https://api.example:6443")
    resolve_env_proxy(configuration)
    assert configuration.proxy == "http://proxy.example:3128"
    expected = "Basic " + base64.b64encode(b"user:secret").decode()
    assert configuration.proxy_headers == {"Proxy-Authorization": expected}


def test_no_proxy_and_an_explicit_proxy_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "api.example")
    exempt = Configuration(host="https://api.example:6443")
    resolve_env_proxy(exempt)
    assert not exempt.proxy
    explicit = Configuration(host="https://other.example:6443")
    explicit.proxy = "http://mine.example:8080"
    resolve_env_proxy(explicit)
    assert explicit.proxy == "http://mine.example:8080"
    without = Configuration(host="http://plain.example:8080")  # no HTTP_PROXY set
    resolve_env_proxy(without)
    assert not without.proxy


async def test_requests_work_on_a_session_without_env_lookups() -> None:
    async with run_emulator() as emu:
        async with ApiClient(Configuration(host=emu.url)) as stock:
            assert stock.rest_client.pool_manager.trust_env is True
        async with OperatorApiClient(Configuration(host=emu.url)) as api_client:
            session = api_client.rest_client.pool_manager
            assert session.trust_env is False
            assert session.connector is not None and not session.connector.closed
            namespace = await CoreV1Api(api_client).read_namespace("default")
            assert namespace.metadata.name == "default"
        assert session.closed


async def test_requests_go_through_the_resolved_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forward proxy (absolute-form request targets) that answers for an unresolvable host."""
    seen: list[str] = []

    async def forward(request: web.Request) -> web.Response:
        seen.append(str(request.url))
        return web.json_response(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "via-proxy"}}
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        configuration = Configuration(host="http://api.invalid:8080")
        resolve_env_proxy(configuration)
        async with OperatorApiClient(configuration) as api_client:
            namespace = await CoreV1Api(api_client).read_namespace("anything")
    finally:
        await runner.cleanup()
    assert namespace.metadata.name == "via-proxy"
    assert seen == ["http://api.invalid:8080/api/v1/namespaces/anything"]


async def test_kopf_gets_the_same_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    configuration = Configuration(host="https://api.example:6443")
    resolve_env_proxy(configuration)
    assert (await connection_info(configuration)).proxy_url == "http://proxy.example:3128"
    assert (await connection_info(Configuration(host="https://x:1"))).proxy_url is None
