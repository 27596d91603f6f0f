"""The HTTP face of the emulator: URL routing, verbs, content types, watch streaming."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import yaml
from aiohttp import web

from endpointslice_operator.testing import (
    eventsview,
    protobuf,
    resources,
    scale,
    tables,
    validation,
)
from endpointslice_operator.testing.errors import ApiError, Cause, bad_request, expired
from endpointslice_operator.testing.faults import FaultConfig, FaultInjector
from endpointslice_operator.testing.list_options import check_list_options
from endpointslice_operator.testing.patch import apply_patch
from endpointslice_operator.testing.query import int_param
from endpointslice_operator.testing.requestlog import RequestLog, RequestRecord
from endpointslice_operator.testing.resources import ResourceInfo
from endpointslice_operator.testing.selectors import (
    FieldSelector,
    parse_field_selector,
    parse_label_selector,
)
from endpointslice_operator.testing.store import Store, Stored
from endpointslice_operator.testing.watch import (
    DELETED,
    Event,
    Render,
    bookmark_line,
    decode,
    encode,
    error_line,
)

logger = logging.getLogger(__name__)

JSON = dict[str, Any]
JSON_TYPE = "application/json"
DEFAULT_WATCH_TIMEOUT = 1800.0  # kube-apiserver's --min-request-timeout
BOOKMARK_BEFORE_TIMEOUT = 2.0  # seconds; the watch cache's last bookmark before a timeout
FAULT_RECHECK_SECONDS = 1.0  # idle watches re-read the fault settings this often
CLOCK_SLACK = 1e-3
"""A watch deadline this close counts as reached. Virtual clocks (looptime) quantize time, and
``started + 3.0`` may sit a hair above every value such a clock can reach: waiting for the
remaining ~1e-16 s would then spin at one instant for ever. A millisecond early is harmless."""
# Kinds whose DELETE answers with the object rather than a Status (ReturnDeletedObject).
RETURNS_DELETED_OBJECT = frozenset({"pods", "services"})
"""DELETE answers with the object, not a Status (kube-apiserver v1.24: pods, services)."""


def page_not_found() -> web.Response:
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
TRUE = ("true", "1")
CREATED_NAME = web.RequestKey("emulator_created_name", str)
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results."
)
NAMESPACE_MISMATCH = (
    "the namespace of the provided object does not match the namespace sent on the request"
)


@dataclass(frozen=True)
class Target:
    """A parsed resource URL."""

    info: ResourceInfo
    namespace: str | None
    name: str
    subresource: str


def openapi_v2_json() -> JSON:
    """The OpenAPI v2 document in JSON: no paths and no definitions (see ``_discovery``)."""
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": resources.VERSION_INFO["gitVersion"]},
        "paths": {},
        "definitions": {},
    }


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    raw = body if isinstance(body, bytes) else encode(body)
    return web.Response(body=raw, status=status, content_type=JSON_TYPE, headers=headers)


_WARNED_KINDS = frozenset({"pods", "endpoints", "services"})


def written_response(info: ResourceInfo, raw: bytes, status: int = 200) -> web.Response:
    """A write's answer, with v1.36's ``Warning: 299 - "..."`` headers for non-canonical IPv6
    addresses (pods, Endpoints, Services)."""
    response = json_response(raw, status)
    if not info.group and info.plural in _WARNED_KINDS:
        for text in validation.ip_warnings(info.group, info.plural, json.loads(raw)):
            response.headers.add("Warning", "299 - " + json.dumps(text))
    return response


def field_selector(info: ResourceInfo, text: str | None) -> FieldSelector:
    if info.storage:  # events.k8s.io Events: the core Events' field labels, spelled either way
        text = eventsview.core_field_selector(text)
    return parse_field_selector(text, info.plural)


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), error.code, error.headers or None)


def _encode_continue(rv: int, namespace: str, name: str) -> str:
    token = encode({"rv": rv, "start": [namespace, name]})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (binascii.Error, ValueError, KeyError, IndexError, TypeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion")


class Served(Protocol):
    """What the HTTP face reads of the emulator it serves (:class:`~.server.Emulator`), so that
    the two modules do not import each other."""

    store: Store
    requests: RequestLog
    injector: FaultInjector
    bookmark_interval: float

    @property
    def faults(self) -> FaultConfig: ...


class ApiApp:
    """Routes requests to the store; one instance per emulator."""

    def __init__(self, emulator: Served) -> None:
        self.emulator = emulator
        self.store: Store = emulator.store
        self.log: RequestLog = emulator.requests
        self.injector: FaultInjector = emulator.injector
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self.handle)

    # -----------------------------------------------------------------------------------------
    # Entry point

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        parts = [p for p in path.split("/") if p]
        try:
            discovery = self._discovery(request, parts)
            if discovery is not None:
                self._record_path(request, discovery.status)
                return discovery
            target = self._parse_target(parts)
        except ApiError as error:
            self._record_path(request, error.code)
            return error_response(error)
        verb = self._verb(request, target)
        info = target.info

        def record(code: int) -> None:
            name = request.get(CREATED_NAME, target.name)
            self._record(
                verb, info.plural, info.group, target.subresource,
                target.namespace or "", name, code, path,
            )  # fmt: skip

        try:
            delay = self.injector.latency_for(verb, info.plural, info.group)
            if delay:
                await asyncio.sleep(delay)
            failure = self.injector.failure_for(verb, info.plural, info.group, target.name)
            if failure is not None:
                raise failure
            if verb in ("list", "watch"):
                check_list_options(request.query, watch=verb == "watch")
            if verb == "watch":
                return await self._watch(request, target, record)
            response = await self._dispatch(verb, request, target)
        except ApiError as error:
            record(error.code)
            return error_response(error)
        record(response.status)
        return response

    def _record_path(self, request: web.Request, code: int) -> None:
        """A request outside the resource URLs (discovery, health, unknown paths)."""
        verb = "discovery" if request.method == "GET" else request.method.lower()
        self._record(verb, "", "", "", "", "", code, request.path)

    def _record(
        self,
        verb: str,
        resource: str,
        group: str,
        subresource: str,
        namespace: str,
        name: str,
        code: int,
        path: str,
    ) -> None:
        self.log.append(
            RequestRecord(verb, resource, group, subresource, namespace, name, code, path)
        )

    # -----------------------------------------------------------------------------------------
    # Discovery and non-resource URLs

    def _discovery(self, request: web.Request, parts: list[str]) -> web.Response | None:
        registry = self.store.registry
        n = len(parts)
        if request.method != "GET":
            if n <= 1 or (parts[0] == "apis" and n <= 3) or (parts[0] == "api" and n <= 2):
                raise ApiError(
                    405, "the server does not allow this method on the requested resource"
                )
            return None
        if n == 0:
            paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version"]
            paths += [f"/apis/{g}" for g in registry.groups()]
            paths += [f"/apis/{g}/{v}" for g, vs in registry.groups().items() for v in vs]
            return json_response({"paths": sorted(paths)})
        head = parts[0]
        if n == 1 and head in ("healthz", "livez", "readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if n == 1 and head == "version":
            return json_response(resources.VERSION_INFO)
        if n == 2 and head == "openapi" and parts[1] == "v2":
            # kubectl's client-side validation needs a document (protobuf, or JSON on request);
            # an empty one makes it skip schema checks for every kind, as for unknown kinds.
            accept = request.headers.get("Accept", "")
            if "protobuf" in accept:
                return web.Response(
                    body=protobuf.openapi_v2_document(resources.VERSION_INFO["gitVersion"]),
                    content_type=protobuf.OPENAPI_V2_MEDIA_TYPE,
                )
            return json_response(openapi_v2_json())
        if head == "openapi" or head == "swagger.json":
            # No OpenAPI v3 (as kube-apiserver before 1.23): kubectl falls back to v2.
            raise ApiError(404, "the server could not find the requested resource")
        if head == "api":
            if n == 1:
                return json_response(resources.api_versions(f"{request.host}"))
            if n == 2:
                if parts[1] != "v1":
                    raise ApiError(404, "the server could not find the requested resource")
                return json_response(resources.api_resource_list(registry, "", "v1"))
            return None
        if head == "apis":
            if n == 1:
                return json_response(resources.api_group_list(registry))
            versions = registry.groups().get(parts[1])
            if not versions or (n >= 3 and parts[2] not in versions):
                # Not a Status: kube-apiserver's mux answers unknown groups in plain text.
                return page_not_found()
            if n == 2:
                return json_response(resources.api_group(registry, parts[1]))
            if n == 3:
                return json_response(resources.api_resource_list(registry, parts[1], parts[2]))
            return None
        return page_not_found()  # the real server's mux: plain text, not a Status

    def _parse_target(self, parts: list[str]) -> Target:
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace: str | None = None
        if (
            len(rest) >= 3
            and rest[0] == "namespaces"
            and not (len(rest) == 3 and rest[2] in NAMESPACE_SUBRESOURCES and not group)
        ):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        info = self.store.registry.by_url(group, version, rest[0])
        if info.namespaced is False and namespace is not None:
            raise ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else ""
        subresource = rest[2] if len(rest) == 3 else ""
        if subresource and subresource not in info.subresources:
            raise ApiError(404, "the server could not find the requested resource")
        return Target(info, namespace, name, subresource)

    @staticmethod
    def _verb(request: web.Request, target: Target) -> str:
        method = request.method
        if method == "GET":
            if request.query.get("watch", "").lower() in TRUE:
                return "watch"
            return "get" if target.name else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if target.name else "deletecollection"
        return method.lower()

    # -----------------------------------------------------------------------------------------
    # Verbs

    async def _dispatch(self, verb: str, request: web.Request, target: Target) -> web.Response:
        info, ns, name = target.info, target.namespace, target.name
        query = request.query
        dry_run = "All" in query.getall("dryRun", [])
        if target.subresource == "scale":
            return await self._scale(verb, request, target, dry_run)
        if verb == "get":
            raw = self.store.stored(info, ns, name).raw
            table_version = tables.wants_table(request.headers.get("Accept", ""))
            if table_version is not None:
                return json_response(self._table(request, info, [raw], table_version, {}))
            return json_response(raw)
        if verb == "list":
            return self._list(request, target)
        if verb == "create":
            if target.name:
                raise ApiError(
                    405, "the server does not allow this method on the requested resource"
                )
            body = await self._body(request)
            self._check_body_namespace(info, ns, body)
            result = self.store.api_create(info, body, dry_run=dry_run)
            request[CREATED_NAME] = body["metadata"]["name"]  # for the request log
            return written_response(info, result.raw, 201)
        if not name:
            if verb == "deletecollection":
                return await self._delete_collection(request, target, dry_run)
            raise ApiError(405, "the server does not allow this method on the requested resource")
        if verb == "update":
            body = await self._body(request)
            self._check_body_namespace(info, ns, body)
            existed = self._exists(info, ns, name)
            result = self.store.api_update(
                info, ns, name, body, subresource=target.subresource or None, dry_run=dry_run
            )
            return written_response(info, result.raw, 200 if existed else 201)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            patch = await self._body(request, any_json=True)
            result = self.store.api_patch(
                info,
                ns,
                name,
                patch,
                content_type,
                subresource=target.subresource or None,
                dry_run=dry_run,
            )
            return written_response(info, result.raw)
        if verb == "delete":
            options = await self._delete_options(request)
            result = self.store.api_delete(info, ns, name, **options)
            return self._deleted_response(info, result)
        raise ApiError(405, "the server does not allow this method on the requested resource")

    async def _scale(
        self, verb: str, request: web.Request, target: Target, dry_run: bool
    ) -> web.Response:
        """GET, PUT or PATCH of ``.../NAME/scale`` (an autoscaling/v1 Scale)."""
        info, ns, name = target.info, target.namespace, target.name
        current = json.loads(self.store.stored(info, ns, name).raw)
        if verb == "get":
            return json_response(scale.to_scale(current))
        if verb == "update":
            wanted = await self._body(request)
        elif verb == "patch":
            patch = await self._body(request, any_json=True)
            content_type = request.headers.get("Content-Type", "")
            wanted = apply_patch(scale.to_scale(current), patch, content_type)
        else:
            raise ApiError(405, "the server does not allow this method on the requested resource")
        updated = scale.scaled(info, current, wanted)
        result = self.store.api_update(info, ns, name, updated, dry_run=dry_run)
        return json_response(scale.to_scale(json.loads(result.raw)))

    def _exists(self, info: ResourceInfo, ns: str | None, name: str) -> bool:
        try:
            self.store.stored(info, ns, name)
        except ApiError:
            return False
        return True

    @staticmethod
    def _check_body_namespace(info: ResourceInfo, ns: str | None, body: JSON) -> None:
        if not info.namespaced:
            return
        meta = (
            body.setdefault("metadata", {}) if isinstance(body.get("metadata"), dict | None) else {}
        )
        if body.get("metadata") is None:
            body["metadata"] = meta
        given = meta.get("namespace")
        if given and given != ns:
            raise bad_request(NAMESPACE_MISMATCH)
        meta["namespace"] = ns

    @staticmethod
    async def _body(request: web.Request, *, any_json: bool = False) -> Any:
        """The request body as JSON data; JSON and YAML are accepted for POST and PUT (a PATCH
        body is JSON whatever its patch media type). Protobuf and CBOR get a 415, after which
        client-go falls back to JSON."""
        raw = await request.read()
        media = request.content_type.lower()
        try:
            if not raw:
                body = None
            elif any_json or media in ("application/json", "application/octet-stream", ""):
                body = decode(raw)
            elif media in ("application/yaml", "application/x-yaml", "text/yaml"):
                body = yaml.safe_load(raw)
            elif media == protobuf.MEDIA_TYPE:
                body = protobuf.decode(raw)
            else:
                raise ApiError(
                    415,
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json, application/yaml",
                    reason="UnsupportedMediaType",
                )
        except (ValueError, yaml.YAMLError) as error:
            raise bad_request(f"couldn't get version/kind; json parse error: {error}")
        if any_json:
            return body
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        return body

    async def _delete_options(self, request: web.Request) -> JSON:
        query = request.query
        raw = await request.read()
        body: JSON = {}
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError as error:
                raise bad_request(f"invalid DeleteOptions: {error}")
            if isinstance(parsed, dict):
                body = parsed
        policy = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        if orphan is None and "orphanDependents" in query:
            orphan = query["orphanDependents"].lower() in TRUE
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        grace = body.get("gracePeriodSeconds")
        if grace is None:
            grace = int_param(query, "gracePeriodSeconds")
        return {
            "propagation_policy": policy,
            "preconditions": body.get("preconditions"),
            "grace_period_seconds": grace,
            "dry_run": "All" in (body.get("dryRun") or []) or "All" in query.getall("dryRun", []),
        }

    def _deleted_response(self, info: ResourceInfo, result: Event | Stored) -> web.Response:
        gone = isinstance(result, Event) and result.type == DELETED
        if gone and info.plural not in RETURNS_DELETED_OBJECT:
            meta = result.obj["metadata"]
            details: JSON = {"name": meta["name"], "kind": info.plural, "uid": meta.get("uid", "")}
            if info.group:
                details["group"] = info.group
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        return json_response(result.raw)

    def _list(self, request: web.Request, target: Target) -> web.Response:
        info = target.info
        query = request.query
        labels = parse_label_selector(query.get("labelSelector"))
        fields = field_selector(info, query.get("fieldSelector"))
        limit = max(0, int_param(query, "limit") or 0)  # negative: no limit, as the real server
        items: Iterator[tuple[tuple[str, str], bytes]]
        token = query.get("continue")
        if token:
            list_rv, after = _decode_continue(token)
            try:
                self.store.check_not_compacted(info, list_rv)
            except ApiError:
                raise expired(CONTINUE_EXPIRED)
            items = self.store.iter_at(info, list_rv, target.namespace, labels, fields, after=after)
        elif query.get("resourceVersionMatch") == "Exact" and query.get("resourceVersion"):
            list_rv = self._resource_version(query["resourceVersion"])
            current = self.store.resource_version
            if list_rv > current:
                raise ApiError(
                    504,
                    f"Too large resource version: {list_rv}, current: {current}",
                    reason="Timeout",
                    causes=[Cause("ResourceVersionTooLarge", "Too large resource version")],
                )
            items = self.store.iter_at(info, list_rv, target.namespace, labels, fields)
        else:
            list_rv = self.store.resource_version
            items = (
                (key, stored.raw)
                for key, stored in self.store.iter_stored(info, target.namespace, labels, fields)
            )
        raws: list[bytes] = []
        metadata: JSON = {"resourceVersion": str(list_rv)}
        last_key: tuple[str, str] | None = None
        filtered = not (labels is None or labels.empty) or not (fields is None or fields.empty)
        for key, raw in items:
            if limit and len(raws) == limit:
                metadata["continue"] = _encode_continue(list_rv, *(last_key or key))
                # As kube-apiserver: no count when a selector filters the list (the server
                # cannot know it without reading the rest), else the objects after this page.
                if not filtered:
                    if not self.store.changed_since(info, list_rv):
                        remaining = self.store.count_after(info, target.namespace, last_key or key)
                    else:  # a snapshot of the past: count what it holds
                        remaining = 1 + sum(1 for _ in items)
                    metadata["remainingItemCount"] = remaining
                break
            raws.append(raw)
            last_key = key
        table_version = tables.wants_table(request.headers.get("Accept", ""))
        if table_version is not None:
            return json_response(self._table(request, info, raws, table_version, metadata))
        head = encode(
            {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": metadata}
        )
        body = head[:-1] + b',"items":[' + b",".join(raws) + b"]}"
        return json_response(body)

    def _table(
        self,
        request: web.Request,
        info: ResourceInfo,
        raws: list[bytes],
        version: str,
        metadata: JSON,
    ) -> JSON:
        return tables.table(
            info,
            (decode(raw) for raw in raws),
            version=version,
            now=self.store.clock(),
            include=request.query.get("includeObject", "Metadata"),
            metadata=metadata,
        )

    @staticmethod
    def _resource_version(text: str) -> int:
        """``strconv.ParseUint``; kube-apiserver v1.24 answers 500, with no reason, otherwise."""
        if not (text.isascii() and text.isdigit()):
            raise ApiError(
                500,
                f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing '
                f'"{text}": invalid syntax',
                omit_reason=True,
            )
        return int(text)

    async def _delete_collection(
        self, request: web.Request, target: Target, dry_run: bool
    ) -> web.Response:
        info = target.info
        labels = parse_label_selector(request.query.get("labelSelector"))
        fields = field_selector(info, request.query.get("fieldSelector"))
        options = await self._delete_options(request)
        options.pop("preconditions", None)
        options["dry_run"] = options["dry_run"] or dry_run
        keys = [key for key, _ in self.store.iter_stored(info, target.namespace, labels, fields)]
        deleted: list[bytes] = []
        for namespace, name in keys:
            try:
                result = self.store.api_delete(info, namespace or None, name, **options)
            except ApiError as error:
                if error.code == 404:
                    continue
                raise
            deleted.append(result.raw)
        head = encode(
            {
                "kind": info.list_kind,
                "apiVersion": info.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
            }
        )
        return json_response(head[:-1] + b',"items":[' + b",".join(deleted) + b"]}")

    # -----------------------------------------------------------------------------------------
    # Watch

    def _table_render(self, request: web.Request, info: ResourceInfo) -> Render | None:
        """Watch events as one-row Tables when asked (``kubectl get -w``)."""
        version = tables.wants_table(request.headers.get("Accept", ""))
        if version is None:
            return None
        include = request.query.get("includeObject", "Metadata")

        def render(obj: JSON) -> bytes:
            now = self.store.clock()
            return encode(tables.table(info, [obj], version=version, now=now, include=include))

        return render

    async def _watch(
        self, request: web.Request, target: Target, record: Callable[[int], None]
    ) -> web.StreamResponse:
        info = target.info
        query = request.query
        labels = parse_label_selector(query.get("labelSelector"))
        fields = field_selector(info, query.get("fieldSelector"))
        bookmarks = query.get("allowWatchBookmarks", "").lower() in TRUE
        send_initial = query.get("sendInitialEvents", "").lower() in TRUE
        rv_text = query.get("resourceVersion", "")
        since: int | None = None
        if rv_text and rv_text != "0" and not send_initial:
            since = self._resource_version(rv_text)
        timeout_seconds = int_param(query, "timeoutSeconds")
        timeout = DEFAULT_WATCH_TIMEOUT if timeout_seconds is None else float(timeout_seconds)
        if target.name:  # a watch on one object: fieldSelector=metadata.name=...
            by_name = [query.get("fieldSelector"), f"metadata.name={target.name}"]
            fields = field_selector(info, ",".join(filter(None, by_name)))

        response = web.StreamResponse(status=200, headers={"Content-Type": JSON_TYPE})
        response.enable_chunked_encoding()
        record(200)
        if since is not None and self.injector.gone_on_resume(info.plural, info.group):
            await response.prepare(request)
            await response.write(
                error_line(expired(f"too old resource version: {since} ({since + 1})").status())
            )
            await response.write_eof()
            return response
        try:
            watcher = self.store.watch(
                info,
                target.namespace,
                labels,
                fields,
                since,
                render=self._table_render(request, info),
            )
        except ApiError as error:
            await response.prepare(request)
            await response.write(error_line(error.status()))
            await response.write_eof()
            return response
        if send_initial and bookmarks:
            watcher.push(bookmark_line(info, self.store.resource_version, initial_events_end=True))
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout
        bookmark_every = self.emulator.bookmark_interval

        def next_bookmark_after(now: float) -> float:
            # As the watch cache: roughly every interval, and once just before the timeout.
            if not bookmarks:
                return float("inf")
            pre_timeout = deadline - BOOKMARK_BEFORE_TIMEOUT
            return min(now + bookmark_every, pre_timeout if pre_timeout > now else float("inf"))

        next_bookmark = next_bookmark_after(started)
        # One timer wakes the watch for its next check (deadline, drop, bookmark, fault
        # recheck); it stays while it is due no later than needed, instead of a new
        # asyncio.timeout around every wait (a timer handle made and cancelled per event).
        timer: asyncio.TimerHandle | None = None

        def wake() -> None:
            nonlocal timer
            timer = None  # spent (on a quantized clock it may run a little before when())
            watcher.wakeup.set()

        try:
            await response.prepare(request)
            while True:
                if watcher.pending:
                    await response.write(watcher.drain())
                else:
                    watcher.wakeup.clear()  # woken by the timer (or nothing left to send)
                if watcher.closed:
                    break
                now = loop.time()
                drop_after = self.emulator.faults.watch_drop_seconds  # may change at runtime
                drop_at = started + drop_after if drop_after > 0 else float("inf")
                if now >= drop_at - CLOCK_SLACK:
                    self.injector.record_watch_drop()
                    if request.transport is not None:
                        request.transport.abort()
                    return response
                if now >= deadline - CLOCK_SLACK:
                    break
                if now >= next_bookmark - CLOCK_SLACK:
                    watcher.push(bookmark_line(info, self.store.resource_version))
                    next_bookmark = next_bookmark_after(now)
                    continue
                wake_at = min(deadline, drop_at, next_bookmark, now + FAULT_RECHECK_SECONDS)
                if timer is None or timer.when() > wake_at:
                    if timer is not None:
                        timer.cancel()
                    timer = loop.call_at(wake_at, wake)
                await watcher.wakeup.wait()
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client went away; nothing more to send
        finally:
            if timer is not None:
                timer.cancel()
            self.store.unwatch(watcher)
        return response
