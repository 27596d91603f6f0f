"""Watching the view: :func:`watch_endpoints` (async) and :func:`list_endpoints` (a snapshot).

Services and EndpointSlices are listed and watched with the operator's own
:class:`~endpointslice_operator.controller.watch.list_watch.ListWatcher`: paginated listings,
watches resumed from the last resourceVersion, a new listing after ``410 Gone`` or
``ResourceVersionTooLarge``. A listing also tells what was deleted while no watch ran: an
object the view holds that a completed listing (of its namespace scope) did not show is
removed, with ``removed`` changes for what it contributed.

The first listing failing (no cluster, no permission) raises :class:`ViewError`; after the
``synced`` marker every failure is retried, as the operator's watches are.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import Any, Literal, overload

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.client import OperatorApiClient, resolve_env_proxy
from endpointslice_operator.controller.api.cluster_config import load_client_configuration
from endpointslice_operator.controller.api.errors import ApiError
from endpointslice_operator.controller.cache.selectors import Selector, parse_selector
from endpointslice_operator.controller.watch.list_watch import ListWatcher
from endpointslice_operator.reconciler.mcs import MCS_API_VERSION
from endpointslice_operator.settings import load_settings
from endpointslice_operator.view.merge import EndpointView, Gatherer, ServiceFilter
from endpointslice_operator.view.model import (
    DEFAULT_ANNOTATION_PREFIX,
    LABEL_SERVICE_NAME,
    Change,
    Endpoint,
    EndpointGroup,
    EndpointKey,
    Policy,
    ServicePortKey,
    view_annotation,
)

__all__ = [
    "ViewError",
    "list_endpoints",
    "open_api_client",
    "service_filter",
    "snapshot",
    "watch_endpoints",
]

KINDS = ("services", "endpointslices")
SELECTOR_KINDS = ("endpointselectors", "endpointslices")
"""What the view of EndpointSelectors lists and watches (``endpoint_selectors=``)."""
SELECTOR_GROUP_VERSION = "endpointslice-operator.io/v1alpha1"
IMPORT_KINDS = ("serviceimports", "endpointslices")
"""What the view of ServiceImports lists and watches (``service_imports=``)."""
IMPORT_GROUP_VERSION = MCS_API_VERSION


class ViewError(RuntimeError):
    """The view could not be built: the first listing failed."""

    def __init__(self, kind: str, cause: Exception) -> None:
        self.kind = kind
        self.cause = cause
        if isinstance(cause, ApiError):
            what = f"the API server refused to list {kind}: {cause.status} {cause.reason}".strip()
        else:
            what = f"cannot list {kind}: {type(cause).__name__}: {cause}"
        super().__init__(what)


_SYNCED = Change("synced")


class _Feed:
    """Applies events to the view and queues the changes for the generator."""

    def __init__(
        self, view: EndpointView, scopes: list[str | None], kinds: tuple[str, str] = KINDS
    ) -> None:
        self.view = view
        self.queue: asyncio.Queue[list[Change] | Exception] = asyncio.Queue()
        self.synced = False
        self.owners = kinds[0]
        """The owners' kind: ``services``, or ``endpointselectors``."""
        self._pending = {(kind, scope) for kind in kinds for scope in scopes}
        self._seen: dict[tuple[str, str | None], set[tuple[str, str]] | None] = {}

    def _put(self, changes: list[Change]) -> None:
        if changes and self.synced:
            self.queue.put_nowait(changes)

    def handler(self, kind: str) -> Callable[[str | None, Mapping[str, Any]], None]:
        def handle(event_type: str | None, obj: Mapping[str, Any]) -> None:
            metadata = obj.get("metadata")
            if not isinstance(metadata, Mapping):
                return
            key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            if event_type is None:
                for (seen_kind, _), seen in self._seen.items():
                    if seen_kind == kind and seen is not None:
                        seen.add(key)
            if event_type == "DELETED":
                changes = (
                    self.view.delete_service(*key)
                    if kind == self.owners
                    else self.view.delete_slice(*key)
                )
            elif kind == self.owners:
                changes = self.view.apply_service(obj)
            else:
                changes = self.view.apply_slice(obj)
            self._put(changes)

        return handle

    def on_listing(self, kind: str, namespace: str | None) -> None:
        self._seen[(kind, namespace)] = set()

    def on_listed(self, kind: str, namespace: str | None) -> None:
        seen = self._seen.pop((kind, namespace), None) or set()
        held = self.view.service_names() if kind == self.owners else self.view.slice_names()
        changes: list[Change] = []
        for key in held:
            if (namespace is None or key[0] == namespace) and key not in seen:
                if kind == self.owners:
                    changes += self.view.delete_service(*key)
                else:
                    changes += self.view.delete_slice(*key)
        self._put(changes)
        self._pending.discard((kind, namespace))
        if not self.synced and not self._pending:
            self.synced = True
            self.queue.put_nowait([*self.view.snapshot(), _SYNCED])

    def on_done(self, kind: str, task: asyncio.Task[None]) -> None:
        """A watcher ended: before the view is synced, its first listing failed (the
        watchers are ``fail_fast``), which the generator raises."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not self.synced and isinstance(exc, Exception):
            self.queue.put_nowait(ViewError(kind, exc))


def service_filter(
    *,
    namespace: str | None = None,
    services: Iterable[str] | str | None = None,
    selector: Selector | str | None = None,
    annotation_prefix: str = DEFAULT_ANNOTATION_PREFIX,
) -> ServiceFilter:
    """The :class:`~.merge.ServiceFilter` for :func:`watch_endpoints`'s arguments (a selector
    string is parsed: :class:`~endpointslice_operator.controller.cache.selectors.SelectorError`)."""
    names = [services] if isinstance(services, str) else services
    return ServiceFilter(
        namespace=namespace,
        services=frozenset(names) if names is not None else None,
        selector=parse_selector(selector) if isinstance(selector, str) else selector,
        annotation=view_annotation(annotation_prefix),
    )


async def watch_endpoints(
    api: ApiClient,
    *,
    namespace: str | None = None,
    services: Iterable[str] | str | None = None,
    selector: Selector | str | None = None,
    managed_by: str | None = None,
    policy: Policy = "ready",
    gather: bool = False,
    annotation_prefix: str = DEFAULT_ANNOTATION_PREFIX,
    backoff: float = 1.0,
    server_timeout: float = 300.0,
    endpoint_selectors: Iterable[str] | str | None = None,
    service_imports: Iterable[str] | str | None = None,
) -> AsyncGenerator[Change, None]:
    """The endpoints of the selected Services as a stream of changes.

    First the current view as ``added`` changes (sorted by key), then one ``synced`` change,
    then ``added`` / ``updated`` / ``removed`` as Services and EndpointSlices change. Keys are
    :class:`EndpointKey` (values :class:`Endpoint`), or with ``gather=True``
    :class:`ServicePortKey` (values :class:`EndpointGroup`).

    ``services`` (names, or ``namespace/name``) and ``selector`` (a label selector on the
    Services) choose the Services; with neither, those annotated ``<prefix>/view: "true"``.
    ``managed_by`` keeps only the slices of that manager (default: every slice).
    ``endpoint_selectors`` (names, or ``namespace/name``): instead of Services, the view of
    these EndpointSelectors (docs/endpointselector.md) and their slices; the key's ``service``
    is the EndpointSelector's name, its ``port`` the EndpointSelector's port number (0 for a
    container port name: each endpoint's ``target_port`` has the number).
    ``service_imports`` (names, or ``namespace/name``): instead of Services, the view of these
    ServiceImports (Multi-Cluster Services, docs/multicluster.md) and their imported slices;
    each endpoint's ``cluster`` is the source cluster it was imported from.
    """
    on_selectors = endpoint_selectors is not None
    on_imports = service_imports is not None
    if on_selectors and on_imports:
        raise ValueError("endpoint_selectors and service_imports exclude each other")
    view = EndpointView(
        policy=policy,
        service_filter=service_filter(
            namespace=namespace,
            services=(
                endpoint_selectors if on_selectors else service_imports if on_imports else services
            ),
            selector=selector,
            annotation_prefix=annotation_prefix,
        ),
        managed_by=managed_by,
        endpoint_selectors=on_selectors,
        service_imports=on_imports,
    )
    scopes: list[str | None] = [namespace]
    kinds = SELECTOR_KINDS if on_selectors else IMPORT_KINDS if on_imports else KINDS
    feed = _Feed(view, scopes, kinds)
    tasks: list[asyncio.Task[None]] = []
    # Server-side narrowing is by Service name: not for EndpointSelectors' or imports' slices.
    selectors = {} if on_selectors or on_imports else _server_selectors(services, selector)
    for kind in kinds:
        watcher = ListWatcher(
            api,
            kind,
            feed.handler(kind),
            namespaces=[namespace] if namespace is not None else [],
            on_listing=functools.partial(feed.on_listing, kind),
            on_listed=functools.partial(feed.on_listed, kind),
            fail_fast=True,
            backoff=backoff,
            server_timeout=server_timeout,
            client_timeout=server_timeout + 60.0,
            label_selector=selectors.get(kind, {}).get("label_selector"),
            field_selector=selectors.get(kind, {}).get("field_selector"),
            group_version=(
                SELECTOR_GROUP_VERSION
                if kind == "endpointselectors"
                else IMPORT_GROUP_VERSION
                if kind == "serviceimports"
                else ""
            ),
        )
        task = asyncio.create_task(watcher.run())
        task.add_done_callback(functools.partial(feed.on_done, kind))
        tasks.append(task)
    gatherer = Gatherer() if gather else None
    try:
        while True:
            item = await feed.queue.get()
            if isinstance(item, Exception):
                raise item
            if gatherer is not None:
                if item and item[-1] is _SYNCED:
                    gatherer.feed(item[:-1])
                    item = [*gatherer.snapshot(), _SYNCED]
                else:
                    item = gatherer.feed(item)
            for change in item:
                yield change
    finally:
        for task in tasks:
            task.cancel()
        # A watcher whose first listing failed has ended with that error, raised above.
        await asyncio.gather(*tasks, return_exceptions=True)


_LABEL_VALUE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?").fullmatch
"""A Service name usable in a label selector (a DNS-1035 label is)."""


def _server_selectors(
    services: Iterable[str] | str | None, selector: Selector | str | None
) -> dict[str, dict[str, str]]:
    """Per kind, the selectors that let the API server send only what the view can show:
    for named Services, their slices (``kubernetes.io/service-name in (...)``) and, for one
    name, the Service itself (``metadata.name``); for a label selector string, the Services
    it selects. The view still filters (namespaces, the annotation): this only lists less."""
    found: dict[str, dict[str, str]] = {}
    if services is not None:
        names = sorted(
            {n.rpartition("/")[2] for n in ([services] if isinstance(services, str) else services)}
        )
        if names and all(_LABEL_VALUE(n) for n in names):
            found["endpointslices"] = {
                "label_selector": f"{LABEL_SERVICE_NAME} in ({','.join(names)})"
            }
            if len(names) == 1:
                found["services"] = {"field_selector": f"metadata.name={names[0]}"}
    if isinstance(selector, str) and selector.strip():
        found.setdefault("services", {})["label_selector"] = selector
    return found


async def open_api_client(
    kubeconfig: str | os.PathLike[str] | None = None,
    annotation_prefix: str | None = None,
) -> OperatorApiClient:
    """An API client as the operator makes one: ``kubeconfig``, else in-cluster, else the
    default kubeconfig (and ``ENDPOINTSLICE_OPERATOR_*`` variables, as ``run`` reads them)."""
    argv = ["--kubeconfig", os.fspath(kubeconfig)] if kubeconfig is not None else []
    if annotation_prefix is not None:
        argv += ["--annotation-prefix", annotation_prefix]
    settings = load_settings(argv)
    configuration = await load_client_configuration(settings)
    resolve_env_proxy(configuration)
    return OperatorApiClient(configuration, api_timeout=settings.api_timeout)


async def snapshot(api: ApiClient, **kwargs: Any) -> list[Change]:
    """The current view (the ``added`` changes before ``synced``)."""
    found: list[Change] = []
    stream = watch_endpoints(api, **kwargs)
    try:
        async for change in stream:
            if change.type == "synced":
                break
            found.append(change)
    finally:
        await stream.aclose()
    return found


@overload
def list_endpoints(
    kubeconfig: str | os.PathLike[str] | None = ...,
    *,
    namespace: str | None = ...,
    services: Iterable[str] | str | None = ...,
    selector: str | None = ...,
    managed_by: str | None = ...,
    policy: Policy = ...,
    gather: Literal[False] = ...,
    annotation_prefix: str = ...,
) -> dict[EndpointKey, Endpoint]: ...


@overload
def list_endpoints(
    kubeconfig: str | os.PathLike[str] | None = ...,
    *,
    namespace: str | None = ...,
    services: Iterable[str] | str | None = ...,
    selector: str | None = ...,
    managed_by: str | None = ...,
    policy: Policy = ...,
    gather: Literal[True],
    annotation_prefix: str = ...,
) -> dict[ServicePortKey, EndpointGroup]: ...


def list_endpoints(
    kubeconfig: str | os.PathLike[str] | None = None,
    *,
    namespace: str | None = None,
    services: Iterable[str] | str | None = None,
    selector: str | None = None,
    managed_by: str | None = None,
    policy: Policy = "ready",
    gather: bool = False,
    annotation_prefix: str = DEFAULT_ANNOTATION_PREFIX,
) -> dict[EndpointKey, Endpoint] | dict[ServicePortKey, EndpointGroup]:
    """The view now, for scripts (synchronous: runs its own event loop). Same arguments as
    :func:`watch_endpoints`, with the cluster from ``kubeconfig`` (else in-cluster, else the
    default kubeconfig). Raises :class:`ViewError` when the listing fails."""

    async def run() -> list[Change]:
        async with await open_api_client(kubeconfig) as api:
            return await snapshot(
                api,
                namespace=namespace,
                services=services,
                selector=selector,
                managed_by=managed_by,
                policy=policy,
                gather=gather,
                annotation_prefix=annotation_prefix,
            )

    found: dict[Any, Any] = {change.key: change.endpoint for change in asyncio.run(run())}
    return found
