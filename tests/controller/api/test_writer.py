"""The slice and Endpoints writes (``controller.writer`` on ``controller.direct_requests``)
against the API emulator over HTTP: the status semantics of ``ApiError``, and the client's
credentials (bearer token refreshed per request, basic auth) and proxy on every write. The
operator's client sends them on its own keep-alive connections (``controller.keepalive``),
through the aiohttp session when a proxy is configured or on a stock ``ApiClient``.

The emulator does not authenticate; a recording HTTP server in front of it (as the API server's
address, or as a forward proxy) shows what each write carried.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.direct_requests import path_segment
from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.api.writer import EndpointsWriter, SliceWriter
from endpointslice_operator.testing import Emulator, run_emulator

NS = "w"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
JSON = dict[str, Any]


def endpoint_slice(address: str = "10.0.0.1", **metadata: Any) -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "namespace": NS,
            "generateName": "web-",
            "labels": {"kubernetes.io/service-name": "web"},
            **metadata,
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
    }


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with run_emulator() as emulator:
        emulator.store.create_namespace(NS)
        yield emulator


@pytest.fixture
async def api(emu: Emulator) -> AsyncIterator[ApiClient]:
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(emu.kubeconfig_path), client_configuration=configuration
    )
    async with OperatorApiClient(configuration) as client:
        yield client


@dataclass
class Seen:
    method: str
    url: str
    headers: dict[str, str]


@dataclass
class RecordingServer:
    """An HTTP server that records each request and forwards it to the emulator; works as the
    API server's address and as a forward proxy (absolute-form request targets) alike."""

    emu: Emulator
    seen: list[Seen] = field(default_factory=list)
    url: str = ""
    prefix: str = ""
    """A path the API is served under (as behind Rancher's cluster proxy): removed."""

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(Seen(request.method, str(request.url), dict(request.headers)))
        headers = {
            name: request.headers[name] for name in ("Content-Type", "Accept") if name in request
        }
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method,
                self.emu.url + request.rel_url.path_qs.removeprefix(self.prefix),
                data=await request.read(),
                headers=headers,
            ) as answer,
        ):
            return web.Response(
                status=answer.status,
                body=await answer.read(),
                content_type=answer.content_type,
            )


@pytest.fixture
async def recorder(emu: Emulator) -> AsyncIterator[RecordingServer]:
    server = RecordingServer(emu)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


async def test_create_replace_delete_and_delete_again(emu: Emulator, api: ApiClient) -> None:
    assert isinstance(api, OperatorApiClient) and api.keepalive is not None
    writer = SliceWriter(api)
    created = await writer.create(endpoint_slice())
    name = created["metadata"]["name"]
    assert name.startswith("web-") and created["metadata"]["uid"]
    assert emu.store.get("endpointslices", NS, name) is not None

    created["endpoints"][0]["conditions"]["ready"] = False
    replaced = await writer.replace(created)
    assert replaced["endpoints"][0]["conditions"]["ready"] is False
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )

    assert await writer.delete(replaced) is True
    assert emu.store.get("endpointslices", NS, name) is None
    assert await writer.delete(replaced) is False  # 404: already gone, not an error
    codes = [(r.verb, r.code) for r in emu.requests.filter(resource="endpointslices")]
    assert codes == [("create", 201), ("update", 200), ("delete", 200), ("delete", 404)]


async def test_a_stale_replace_is_a_conflict(api: ApiClient) -> None:
    writer = SliceWriter(api)
    created = await writer.create(endpoint_slice())
    await writer.replace({**created, "ports": []})
    with pytest.raises(ApiError) as caught:
        await writer.replace(created)  # the resourceVersion is the one before
    error = caught.value
    assert (error.status, error.reason, error.conflict, error.not_found) == (
        409,
        "Conflict",
        True,
        False,
    )
    assert "the object has been modified" in str(error)


async def test_a_delete_of_a_replaced_object_is_refused(emu: Emulator, api: ApiClient) -> None:
    writer = SliceWriter(api)
    created = await writer.create(endpoint_slice())
    name = created["metadata"]["name"]
    emu.store.delete("endpointslices", NS, name)
    emu.store.create(
        {**endpoint_slice(), "metadata": {**endpoint_slice()["metadata"], "name": name}}
    )
    with pytest.raises(ApiError) as caught:
        await writer.delete(created)  # the uid precondition no longer holds
    assert caught.value.conflict
    assert emu.store.get("endpointslices", NS, name) is not None


async def test_an_invalid_slice_is_422_with_its_causes(api: ApiClient) -> None:
    with pytest.raises(ApiError) as caught:
        await SliceWriter(api).create(endpoint_slice(address="not-an-ip"))
    error = caught.value
    assert (error.status, error.reason) == (422, "Invalid")
    assert {c.get("field") for c in error.causes} == {"endpoints[0].addresses[0]"}
    assert not error.namespace_terminating


async def test_a_terminating_namespace_is_403_namespace_terminating(
    emu: Emulator, api: ApiClient
) -> None:
    held = endpoint_slice(finalizers=["example.com/hold"])
    emu.store.create({**held, "metadata": {**held["metadata"], "name": "held"}})
    emu.store.delete("namespaces", None, NS)  # stays Terminating: the finalizer holds it
    with pytest.raises(ApiError) as caught:
        await SliceWriter(api).create(endpoint_slice())
    error = caught.value
    assert (error.status, error.reason) == (403, "Forbidden")
    assert error.namespace_terminating
    assert error.has_cause("NamespaceTerminating")


async def test_endpoints_writes_carry_uid_and_resource_version_preconditions(
    emu: Emulator, api: ApiClient
) -> None:
    writer = EndpointsWriter(api)
    body = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"namespace": NS, "name": "web"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}],
    }
    created = await writer.create(body)
    replaced = await writer.replace({**created, "subsets": []})
    with pytest.raises(ApiError) as caught:
        await writer.delete(created)  # an older resourceVersion than the stored one
    assert caught.value.conflict
    assert await writer.delete(replaced) is True
    assert emu.store.get("endpoints", NS, "web") is None
    assert await writer.delete(replaced) is False


async def test_the_bearer_token_is_refreshed_for_every_write(recorder: RecordingServer) -> None:
    recorder.prefix = "/k8s/clusters/c-1"  # the API under a path: kept before every request
    configuration = Configuration(host=recorder.url + recorder.prefix)
    configuration.api_key = {"BearerToken": "expired"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    issued = iter(f"token-{i}" for i in range(1, 100))

    async def refresh(config: Any) -> None:  # as exec/OIDC plugins and in-cluster files do
        config.api_key["BearerToken"] = next(issued)

    configuration.refresh_api_key_hook = refresh
    async with OperatorApiClient(configuration) as api:
        writer = SliceWriter(api)
        created = await writer.create(endpoint_slice())
        await writer.replace(created)
        await writer.delete(created)
    assert [(s.method, s.headers.get("Authorization")) for s in recorder.seen] == [
        ("POST", "Bearer token-1"),
        ("PUT", "Bearer token-2"),
        ("DELETE", "Bearer token-3"),
    ]
    first = recorder.seen[0]
    assert first.url == recorder.url + recorder.prefix + SLICES
    assert first.headers["Content-Type"] == "application/json"
    assert first.headers["Accept"] == "application/json"
    assert first.headers["User-Agent"].startswith("OpenAPI-Generator/")


async def test_basic_auth_from_a_kubeconfig(recorder: RecordingServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": recorder.url}}],
                "users": [{"name": "u", "user": {"username": "admin", "password": "s3cret"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    async with OperatorApiClient(configuration) as api:
        await SliceWriter(api).create(endpoint_slice())
    expected = "Basic " + base64.b64encode(b"admin:s3cret").decode()
    assert [s.headers.get("Authorization") for s in recorder.seen] == [expected]


async def test_writes_go_through_the_proxy_from_the_environment(
    emu: Emulator, recorder: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", recorder.url)
    configuration = Configuration(host="http://api.invalid:8080")  # only the proxy resolves it
    configuration.api_key = {"BearerToken": "Bearer t"}
    resolve_env_proxy(configuration)
    async with OperatorApiClient(configuration) as api:
        assert api.keepalive is None  # through a proxy: the aiohttp session
        writer = SliceWriter(api)
        created = await writer.create(endpoint_slice())
        assert await writer.delete(created) is True
    assert [(s.method, s.url, s.headers.get("Authorization")) for s in recorder.seen] == [
        ("POST", f"http://api.invalid:8080{SLICES}", "Bearer t"),
        ("DELETE", f"http://api.invalid:8080{SLICES}/{created['metadata']['name']}", "Bearer t"),
    ]
    assert emu.requests.count(verb="create", resource="endpointslices") == 1


async def test_an_https_write_tunnels_through_the_proxy_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An HTTPS API server behind a proxy: the write opens a CONNECT tunnel, carrying the
    proxy credentials (``proxy_headers``); this proxy records the CONNECT and refuses it."""
    heads: list[bytes] = []

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _clear_proxy_env(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{port}")
    configuration = Configuration(host="https://api.invalid:6443")
    resolve_env_proxy(configuration)
    try:
        async with OperatorApiClient(configuration) as api:
            with pytest.raises(aiohttp.ClientHttpProxyError) as caught:
                await SliceWriter(api).create(endpoint_slice())
    finally:
        server.close()
        await server.wait_closed()
    assert caught.value.status == 407
    request_line, *header_lines = heads[0].decode().split("\r\n")
    assert request_line == "CONNECT api.invalid:6443 HTTP/1.1"
    proxy_auth = "Basic " + base64.b64encode(b"user:pw").decode()
    assert f"Proxy-Authorization: {proxy_auth}" in header_lines


def _clear_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


async def test_names_are_quoted_into_the_path() -> None:
    assert path_segment("web-abc.1") == "web-abc.1"
    assert path_segment("a/b c?") == "a%2Fb%20c%3F"


async def test_a_stock_api_client_writes_too(emu: Emulator) -> None:
    """The writer works on any kubernetes-asyncio ApiClient, not only the operator's."""
    configuration = Configuration()
    await k8s_config.load_kube_config(
        config_file=str(emu.kubeconfig_path), client_configuration=configuration
    )
    async with ApiClient(configuration) as api:
        created = await SliceWriter(api).create(endpoint_slice())
    assert emu.store.get("endpointslices", NS, created["metadata"]["name"]) is not None
