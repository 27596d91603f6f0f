"""List+watch without Kopf, for Pods, Services, EndpointSlices and Endpoints.

Kopf's per-object machinery measured at three quarters of the CPU per pod event
(docs/performance.md), so these kinds are listed and watched here and each event goes straight
to the router with Kopf's conventions: a paginated listing delivered as events of type ``None``;
the watch resumed from the last resourceVersion seen, also after a broken stream (as client-go's
reflector); ``410 Gone`` or ``ResourceVersionTooLarge`` list again; other failures retried after
``backoff`` and logged once per cause. Every version goes into the shared
:class:`~..api.reset.Watermark`, and ``on_reset``/``on_suspect`` report what :mod:`..api.reset`
calls proof or suspicion of a reset. One watch per namespace, or one cluster-wide.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient, CustomObjectsApi

from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.api.json_codec import load_bytes
from endpointslice_operator.controller.api.kinds import CLUSTER_SCOPED, methods_of
from endpointslice_operator.controller.api.kinds import KINDS as API_KINDS
from endpointslice_operator.controller.api.reset import (
    Watermark,
    is_too_large_resource_version,
    parse_version,
)
from endpointslice_operator.retry_log import RetryLog

__all__ = ["KINDS", "ListWatcher"]

log = logging.getLogger(__name__)

PAGE_SIZE = 500
GONE = 410

Handler = Callable[[str | None, Mapping[str, Any]], None]

KINDS = ("pods", "services", "endpointslices", "endpoints")


class _Expired(Exception):
    """The resourceVersion or continue token is too old (or ahead of the server): list again."""

    def __init__(self, too_large: bool = False) -> None:
        super().__init__()
        self.too_large = too_large


class _Position:
    """Where one scope's watch has got to: the last resourceVersion delivered (event or
    bookmark), kept up to date while the stream runs so that a broken stream resumes there."""

    __slots__ = ("version",)

    def __init__(self, version: str) -> None:
        self.version = version


def _must_relist(status: int, body: Mapping[str, Any]) -> bool:
    return status == GONE or is_too_large_resource_version(body)


class ListWatcher:
    """Lists and watches one kind, calling ``handler(event_type, obj)`` for each event."""

    def __init__(
        self,
        api_client: ApiClient,
        kind: str,
        handler: Handler,
        *,
        namespaces: Sequence[str] = (),
        server_timeout: float = 300.0,
        client_timeout: float = 360.0,
        backoff: float = 1.0,
        page_size: int = PAGE_SIZE,
        watermark: Watermark | None = None,
        on_reset: Callable[[str], None] | None = None,
        on_suspect: Callable[[str], None] | None = None,
        group_version: str = "",
        on_listed: Callable[[str | None], None] | None = None,
        on_listing: Callable[[str | None], None] | None = None,
        fail_fast: bool = False,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        # Called with _preload_content=False: both return the raw aiohttp response.
        self._everywhere: Callable[..., Awaitable[Any]]
        self._namespaced: Callable[..., Awaitable[Any]]
        if kind == "namespaces":
            # Cluster-scoped (the multi-cluster controller imports only into namespaces that
            # exist): listed cluster-wide whatever the scope.
            self._everywhere = methods_of(api_client, kind).everywhere

            async def no_namespaces(namespace: str, **params: Any) -> Any:
                raise ValueError("namespaces are cluster-scoped")

            self._namespaced = no_namespaces
        elif kind in API_KINDS and kind not in CLUSTER_SCOPED:
            methods = methods_of(api_client, kind)
            assert methods.namespaced is not None
            self._everywhere, self._namespaced = methods.everywhere, methods.namespaced
        elif group_version:
            # Any other resource by group/version (the ResourceClaims of controller.claims).
            custom = CustomObjectsApi(api_client)
            group, _, version = group_version.partition("/")

            async def everywhere(**params: Any) -> Any:
                return await custom.list_cluster_custom_object(group, version, kind, **params)

            async def namespaced(namespace: str, **params: Any) -> Any:
                return await custom.list_namespaced_custom_object(
                    group, version, namespace, kind, **params
                )

            self._everywhere, self._namespaced = everywhere, namespaced
        else:
            raise ValueError(f"no list+watch for {kind!r}: one of {KINDS}")
        self.kind = kind
        self._handler = handler
        self._namespaces = list(namespaces)
        self._server_timeout = server_timeout
        self._client_timeout = client_timeout
        self._backoff = backoff
        self._page_size = page_size
        self._watermark = watermark if watermark is not None else Watermark()
        self._on_reset = on_reset
        self._on_suspect = on_suspect
        """Called when the connection to the server broke or the server said it is behind a
        version already seen: a reason to check at once whether its state was reset."""
        self._on_listed = on_listed
        """Called after every completed listing with its scope (a namespace, None for the
        whole cluster): each scope is listed on its own."""
        self._on_listing = on_listing
        """Called when a listing of a scope begins (its objects follow, then ``on_listed``)."""
        self._fail_fast = fail_fast
        """Raise a failure of the first listing out of :meth:`run` instead of retrying it (for
        one-shot clients that must report it, such as the endpoint view's first snapshot)."""
        self.listings = 0
        """Completed listings (initial and re-listings), for tests and logs."""
        self._selectors: dict[str, str] = {}
        """``label_selector`` / ``field_selector`` for every list and watch: only the objects
        a client shows (the endpoint view of named Services), not the whole scope."""
        if label_selector:
            self._selectors["label_selector"] = label_selector
        if field_selector:
            self._selectors["field_selector"] = field_selector

    async def run(self) -> None:
        """Watch until cancelled."""
        scopes: list[str | None] = list(self._namespaces) or [None]
        await asyncio.gather(*(self._run_scope(namespace) for namespace in scopes))

    # -- one scope ------------------------------------------------------------------------

    async def _run_scope(self, namespace: str | None) -> None:
        loop = asyncio.get_running_loop()
        retries = RetryLog(log, f"{self.kind} watch in {namespace or 'all namespaces'}")
        position: _Position | None = None
        listed_at = -float("inf")
        while True:
            try:
                if position is None:
                    listed_at = loop.time()
                    # A listing is a consistent read: never behind anything served before it.
                    seen = self._watermark.value
                    position = _Position(await self._list(namespace))
                    retries.succeeded()
                    self._check_listing(namespace, seen, position.version)
                await self._watch(namespace, position, retries)
            except _Expired as expired:
                log.debug(
                    "%s watch in %s: version expired, listing again", self.kind, namespace or "*"
                )
                if expired.too_large:
                    self._suspect(f"{self.kind}: the server is behind a resourceVersion seen")
                position = None
                if loop.time() - listed_at < self._backoff:
                    # Expired again right after a listing: do not hammer the API server.
                    await asyncio.sleep(self._backoff)
            except (aiohttp.ClientError, TimeoutError, ApiError, ValueError) as exc:
                if self._fail_fast and not self.listings:
                    raise
                # Resumed from ``position``: the last version delivered, wherever it broke.
                # One line per cause of failures, with a count (not one per attempt).
                retries.failed(exc)
                self._suspect(f"{self.kind} watch failed: {exc}")
                await asyncio.sleep(self._backoff)

    def _suspect(self, reason: str) -> None:
        if self._on_suspect is not None:
            self._on_suspect(reason)

    def _check_listing(self, namespace: str | None, seen: int, listed: str) -> None:
        if self._watermark.is_behind(listed, seen):
            if self._on_reset is not None:
                self._on_reset(
                    f"{self.kind} in {namespace or 'all namespaces'} listed at resourceVersion "
                    f"{listed}, below the {seen} already seen"
                )
        else:
            self._watermark.observe(listed)

    async def _call(self, namespace: str | None, **params: Any) -> Any:
        if self._selectors:
            params.update(self._selectors)
        if namespace is None:
            return await self._everywhere(_preload_content=False, **params)
        return await self._namespaced(namespace, _preload_content=False, **params)

    async def _list(self, namespace: str | None) -> str:
        """Deliver every object (type None) page by page; returns the listing's
        resourceVersion."""
        if self._on_listing is not None:
            self._on_listing(namespace)
        token = ""
        while True:
            params: dict[str, Any] = {"limit": self._page_size}
            if token:
                params["_continue"] = token
            try:
                body = await raise_for_status(await self._call(namespace, **params))
            except ApiError as exc:
                if _must_relist(exc.status, exc.body):
                    raise _Expired from exc
                raise
            for item in body.get("items") or ():
                if isinstance(item, Mapping):
                    self._deliver(None, item)
            metadata = body.get("metadata") or {}
            token = str(metadata.get("continue") or "")
            if not token:
                self.listings += 1
                if self._on_listed is not None:
                    self._on_listed(namespace)
                return str(metadata.get("resourceVersion") or "")
            await asyncio.sleep(0)  # let the rest of the operator run between pages

    async def _watch(self, namespace: str | None, position: _Position, retries: RetryLog) -> None:
        """One watch request from ``position``, which follows every version delivered (so
        that it is where to resume however the request ends)."""
        start = position.version
        response = await self._call(
            namespace,
            watch=True,
            resource_version=start,
            allow_watch_bookmarks=True,
            timeout_seconds=int(self._server_timeout),
            _request_timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=30, sock_read=self._client_timeout
            ),
        )
        if response.status != 200:
            try:
                await raise_for_status(response)
            except ApiError as exc:
                if _must_relist(exc.status, exc.body):
                    raise _Expired(is_too_large_resource_version(exc.body)) from exc
                raise
        retries.succeeded()
        floor = parse_version(start)
        try:
            async for line in response.content:
                if line.isspace():
                    continue  # a blank line (stops at the first other byte: no copy)
                event = load_bytes(line)
                kind = event.get("type")
                obj = event.get("object")
                if not isinstance(obj, Mapping):
                    continue
                if kind == "ERROR":
                    code = int(obj.get("code") or 500)
                    if _must_relist(code, obj):
                        raise _Expired(is_too_large_resource_version(obj))
                    raise ApiError(code, obj)
                metadata = obj.get("metadata")
                if isinstance(metadata, Mapping) and metadata.get("resourceVersion"):
                    version = str(metadata["resourceVersion"])
                    number = parse_version(version)
                    if floor is not None and number is not None and number < floor:
                        # A watch only ever delivers what came after the version it resumed
                        # from: this server's history went back.
                        if self._on_reset is not None:
                            self._on_reset(
                                f"a {self.kind} watch resumed at resourceVersion {start} "
                                f"delivered {version}"
                            )
                        raise _Expired
                    self._watermark.observe(version)
                    position.version = version
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self._deliver(kind, obj)
        finally:
            response.release()

    def _deliver(self, event_type: str | None, obj: Mapping[str, Any]) -> None:
        try:
            self._handler(event_type, obj)
        except Exception:
            metadata = obj.get("metadata")
            name = metadata.get("name") if isinstance(metadata, Mapping) else None
            namespace = metadata.get("namespace") if isinstance(metadata, Mapping) else None
            log.exception("failed to handle a %s event for %s/%s", self.kind, namespace, name)
