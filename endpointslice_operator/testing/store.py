"""The object store: kube-apiserver's registry semantics over an in-memory map.

Every write gets the next value of one global, monotonically increasing resourceVersion, is kept
in a bounded per-resource history (so watches can resume), and is offered to the live watchers.
Objects are kept encoded (with their labels and selectable fields beside them), and callers
always receive fresh copies. What happens to an object before it is stored, per kind, is in
:mod:`.strategy`.

The public methods (``create``, ``get``, ``list``, ``update``, ``patch``, ``delete``,
``create_namespace``) take a resource as a :class:`ResourceInfo` or any spelling kubectl accepts
(``"pods"``, ``"Pod"``, ``"po"``, ``"endpointslices.discovery.k8s.io"``). They run the same code
path as the HTTP API, so they validate, default and emit watch events exactly like HTTP writes;
the only differences are documented per method (status is kept on create; deletion is immediate
unless a grace period is given).
"""

from __future__ import annotations

import bisect
import random
import time
import typing
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Literal

from endpointslice_operator.testing import defaults, eventsview, strategy, validation
from endpointslice_operator.testing.errors import (
    ApiError,
    Cause,
    already_exists,
    conflict,
    expired,
    invalid,
    not_found,
)
from endpointslice_operator.testing.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    apply_patch,
)
from endpointslice_operator.testing.resources import ResourceInfo, ResourceRegistry
from endpointslice_operator.testing.selectors import (
    FieldSelector,
    LabelSelector,
    indexed_fields,
    parse_field_selector,
    parse_label_selector,
)
from endpointslice_operator.testing.strategy import metadata
from endpointslice_operator.testing.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    Event,
    Render,
    Watcher,
    decode,
    encode,
)

JSON = dict[str, Any]
Listener = Callable[[Event], None]
PropagationPolicy = Literal["Background", "Foreground", "Orphan"]

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
GENERATED_SUFFIX_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - GENERATED_SUFFIX_LENGTH
GENERATE_NAME_ATTEMPTS = 8
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"
NAMESPACE_FINALIZER = "kubernetes"
DEFAULT_HISTORY_SIZE = 10_000
DEFAULT_MAX_PENDING = 1_000_000

PATCH_ALIASES = {
    "merge": MERGE_PATCH,
    "json": JSON_PATCH,
    "strategic": STRATEGIC_MERGE_PATCH,
}


_NO_FIELDS: dict[str, str] = {}


class Stored:
    """A committed object, kept encoded; plus what LIST filtering needs without decoding it.

    Only the encoded form is kept (the dict is rebuilt on demand with ``obj``), so 100,000
    objects cost little more than their JSON.
    """

    __slots__ = ("fields", "labels", "raw")

    def __init__(self, raw: bytes, labels: dict[str, str] | None, fields: dict[str, str]) -> None:
        self.raw = raw
        self.labels = labels
        self.fields = fields

    @classmethod
    def of(cls, info: ResourceInfo, obj: JSON, raw: bytes | None = None) -> Stored:
        indexed = indexed_fields(info.plural, obj) or _NO_FIELDS
        return cls(raw if raw is not None else encode(obj), obj["metadata"].get("labels"), indexed)

    @property
    def obj(self) -> JSON:
        """A fresh copy of the object."""
        return decode(self.raw)  # type: ignore[no-any-return]


def clone(obj: Any) -> Any:
    """A deep copy of plain JSON data (several times faster than copy.deepcopy)."""
    return decode(encode(obj))


def format_timestamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class Store:
    """All objects, the resourceVersion counter, the watch history and the live watchers."""

    def __init__(
        self,
        registry: ResourceRegistry | None = None,
        *,
        seed: int = 0,
        history_size: int = DEFAULT_HISTORY_SIZE,
        clock: Callable[[], float] = time.time,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.registry = registry or ResourceRegistry()
        self.history_size = history_size
        self.clock = clock
        self.max_pending = max_pending
        self._rng = random.Random(seed)
        self._rv = 0
        self._objects: dict[str, dict[str, dict[str, Stored]]] = {
            info.key: {} for info in self.registry.resources
        }
        self._history: dict[str, deque[Event]] = {
            info.key: deque() for info in self.registry.resources
        }
        self._compacted: dict[str, int] = {info.key: 0 for info in self.registry.resources}
        self._watchers: dict[str, set[Watcher]] = {
            info.key: set() for info in self.registry.resources
        }
        self._listeners: list[Listener] = []
        self._by_uid: dict[str, tuple[ResourceInfo, str, str]] = {}
        self._sorted_names: dict[tuple[str, str], list[str]] = {}
        """Names per (resource, namespace) in order, for paginated lists: built on demand and
        dropped when a name comes or goes (not on updates)."""
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}
        self._terminating: set[str] = set()  # namespaces being deleted
        self.cluster_ips = defaults.ClusterIPAllocator()

    # -----------------------------------------------------------------------------------------
    # Introspection

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out (0 before the first write)."""
        return self._rv

    def resolve(self, resource: str | ResourceInfo) -> ResourceInfo:
        return resource if isinstance(resource, ResourceInfo) else self.registry.lookup(resource)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(event)`` synchronously after every committed write."""
        self._listeners.append(listener)

    def count(self, resource: str | ResourceInfo, namespace: str | None = None) -> int:
        buckets = self._objects[self._storage(self.resolve(resource)).key]
        if namespace is not None:
            return len(buckets.get(namespace, {}))
        return sum(len(bucket) for bucket in buckets.values())

    def owner_exists(self, uid: str) -> bool:
        return uid in self._by_uid

    def locate(self, uid: str) -> tuple[ResourceInfo, str, str] | None:
        return self._by_uid.get(uid)

    def dependents_of(self, uid: str) -> list[tuple[ResourceInfo, str, str]]:
        return [
            (self.registry.lookup(key), ns, name)
            for key, ns, name in sorted(self._dependents.get(uid, ()))
        ]

    def _storage(self, info: ResourceInfo) -> ResourceInfo:
        """The resource that keeps ``info``'s objects (itself, unless ``info`` is a view)."""
        return self.registry.lookup(info.storage) if info.storage else info

    @typing.overload
    def _as_view(self, view: ResourceInfo, result: Stored) -> Stored: ...

    @typing.overload
    def _as_view(self, view: ResourceInfo, result: Event | Stored) -> Event | Stored: ...

    def _as_view(self, view: ResourceInfo, result: Event | Stored) -> Event | Stored:
        """A stored object or committed event of the storage resource, in the view's shape."""
        shown = eventsview.from_core(result.obj)
        if isinstance(result, Event):
            return Event(result.rv, result.type, view, shown, encode(shown), None)
        return Stored.of(view, shown)

    # -----------------------------------------------------------------------------------------
    # Reads

    def stored(self, info: ResourceInfo, namespace: str | None, name: str) -> Stored:
        if info.storage:
            return self._as_view(info, self.stored(self._storage(info), namespace, name))
        bucket = self._objects[info.key].get((namespace or "") if info.namespaced else "")
        found = bucket.get(name) if bucket else None
        if found is None:
            raise not_found(info.plural, info.group, name)
        return found

    def get(self, resource: str | ResourceInfo, namespace: str | None, name: str) -> JSON | None:
        """A copy of the object, or None when it does not exist."""
        info = self.resolve(resource)
        try:
            return decode(self.stored(info, namespace, name).raw)  # type: ignore[no-any-return]
        except ApiError:
            return None

    def iter_stored(
        self,
        info: ResourceInfo,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        *,
        after: tuple[str, str] | None = None,
    ) -> Iterator[tuple[tuple[str, str], Stored]]:
        """Matching objects in (namespace, name) order, optionally strictly after a key."""
        if info.storage:
            storage = self._storage(info)
            for key, stored in self.iter_stored(storage, namespace, labels, fields, after=after):
                yield key, self._as_view(info, stored)
            return
        buckets = self._objects[info.key]
        if fields is not None and info.namespaced and namespace is None:
            namespace = fields.exact("metadata.namespace")
        if namespace is not None and info.namespaced:
            namespaces = [namespace] if namespace in buckets else []
        else:
            namespaces = sorted(buckets)
        name_hint = fields.exact("metadata.name") if fields is not None else None
        for ns in namespaces:
            if after is not None and ns < after[0]:
                continue
            bucket = buckets[ns]
            if name_hint is not None:
                names = [name_hint] if name_hint in bucket else []
            else:
                names = self._names_in_order(info.key, ns, bucket)
            start = 0
            if after is not None and ns == after[0]:
                # A continued list starts right after the last key served: a page costs what it
                # holds, as an etcd range read does, not a pass over the names before it.
                start = bisect.bisect_right(names, after[1])
            for index in range(start, len(names)):
                name = names[index]
                if after is not None and (ns, name) <= after:
                    continue
                stored = bucket[name]
                if labels is not None and not labels.empty and not labels.matches(stored.labels):
                    continue
                if (
                    fields is not None
                    and not fields.empty
                    and not fields.matches_indexed(name, ns, stored.fields)
                ):
                    continue
                yield (ns, name), stored

    def _names_in_order(self, key: str, namespace: str, bucket: dict[str, Stored]) -> list[str]:
        names = self._sorted_names.get((key, namespace))
        if names is None:
            names = self._sorted_names[(key, namespace)] = sorted(bucket)
        return names

    def changed_since(self, resource: str | ResourceInfo, since: int) -> bool:
        """Whether any object of ``resource`` was written after resourceVersion ``since``."""
        key = self._storage(self.resolve(resource)).key
        history = self._history[key]
        if since < self._compacted[key]:
            return True  # compacted since: whether anything changed is not known any more
        return bool(history) and history[-1].rv > since

    def count_after(
        self, resource: str | ResourceInfo, namespace: str | None, after: tuple[str, str]
    ) -> int:
        """How many objects (of ``namespace``, or all) sort after the key ``after`` now: the
        ``remainingItemCount`` of an unfiltered page that ended there."""
        info = self._storage(self.resolve(resource))
        buckets = self._objects[info.key]
        if namespace is not None and info.namespaced:
            namespaces = [namespace] if namespace in buckets else []
        else:
            namespaces = list(buckets)
        remaining = 0
        for ns in namespaces:
            if ns > after[0]:
                remaining += len(buckets[ns])
            elif ns == after[0]:
                names = self._names_in_order(info.key, ns, buckets[ns])
                remaining += len(names) - bisect.bisect_right(names, after[1])
        return remaining

    def iter_at(
        self,
        info: ResourceInfo,
        since: int,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
        *,
        after: tuple[str, str] | None = None,
    ) -> Iterator[tuple[tuple[str, str], bytes]]:
        """Like :meth:`iter_stored`, but the objects as they were at resourceVersion ``since``,
        rebuilt by undoing the later history (410 when that history is compacted)."""
        if info.storage:
            storage = self._storage(info)
            for key, raw in self.iter_at(storage, since, namespace, labels, fields, after=after):
                yield key, self._as_view(info, Stored.of(storage, decode(raw))).raw
            return
        self.check_not_compacted(info, since)
        history = self._history[info.key]
        start = self._history_position(history, since)
        past: dict[tuple[str, str], bytes | None] = {}
        for index in range(len(history) - 1, start - 1, -1):  # newest first; oldest wins
            event = history[index]
            key = (event.namespace if info.namespaced else "", event.name)
            past[key] = None if event.type == ADDED else event.old_raw
        if not past:
            for key, stored in self.iter_stored(info, namespace, labels, fields, after=after):
                yield key, stored.raw
            return
        items: dict[tuple[str, str], bytes] = {
            key: stored.raw
            for key, stored in self.iter_stored(info, namespace, labels, fields, after=after)
            if key not in past
        }
        filtered = (labels is not None and not labels.empty) or (
            fields is not None and not fields.empty
        )
        for key, state_raw in past.items():
            if state_raw is None or (after is not None and key <= after):
                continue
            if namespace is not None and info.namespaced and key[0] != namespace:
                continue
            if filtered:
                state = decode(state_raw)
                if labels is not None and not labels.matches(state["metadata"].get("labels")):
                    continue
                if fields is not None and not fields.matches(state):
                    continue
            items[key] = state_raw
        for key in sorted(items):
            yield key, items[key]

    def list(
        self,
        resource: str | ResourceInfo,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[JSON]:
        """Copies of the matching objects, ordered by namespace and name."""
        info = self.resolve(resource)
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, info.plural)
        return [
            decode(stored.raw) for _, stored in self.iter_stored(info, namespace, labels, fields)
        ]

    # -----------------------------------------------------------------------------------------
    # Commit, history and watchers

    def _commit(
        self,
        info: ResourceInfo,
        event_type: str,
        obj: JSON,
        old: JSON | None,
        old_raw: bytes | None = None,
    ) -> Event:
        """Store ``obj`` (``old_raw``: ``old`` encoded, when the caller has it) and dispatch
        the event; the history keeps it encoded only."""
        self._rv += 1
        rv = self._rv
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        raw = encode(obj)
        namespace = meta.get("namespace", "") if info.namespaced else ""
        name = meta["name"]
        buckets = self._objects[info.key]
        if event_type == DELETED:
            bucket = buckets.get(namespace)
            if bucket is not None:
                bucket.pop(name, None)
                if not bucket:
                    del buckets[namespace]
            self._by_uid.pop(meta.get("uid", ""), None)
            self._sorted_names.pop((info.key, namespace), None)
        else:
            bucket = buckets.setdefault(namespace, {})
            if name not in bucket:
                self._sorted_names.pop((info.key, namespace), None)
            bucket[name] = Stored.of(info, obj, raw)
            self._by_uid[meta["uid"]] = (info, namespace, name)
        self._index_owners(info, namespace, name, old, None if event_type == DELETED else obj)
        if info.key == "namespaces":
            if meta.get("deletionTimestamp") and event_type != DELETED:
                self._terminating.add(name)
            else:
                self._terminating.discard(name)
        event = Event(rv, event_type, info, obj, raw, old, old_raw)
        history = self._history[info.key]
        history.append(event)
        while len(history) > self.history_size:
            self._compacted[info.key] = history.popleft().rv
        for watcher in tuple(self._watchers[info.key]):
            watcher.offer(event)
        for listener in self._listeners:
            listener(event)
        event.settle()
        return event

    def _index_owners(
        self, info: ResourceInfo, namespace: str, name: str, old: JSON | None, new: JSON | None
    ) -> None:
        if (
            old is not None
            and new is not None
            and old["metadata"].get("ownerReferences") == new["metadata"].get("ownerReferences")
        ):
            return  # the same owners: dropping and adding them again would change nothing
        key = (info.key, namespace, name)
        for obj, add in ((old, False), (new, True)):
            if obj is None:
                continue
            for ref in obj["metadata"].get("ownerReferences") or []:
                owner_uid = ref.get("uid", "")
                dependents = self._dependents.setdefault(owner_uid, set())
                if add:
                    dependents.add(key)
                else:
                    dependents.discard(key)
                    if not dependents:
                        del self._dependents[owner_uid]

    def watch(
        self,
        info: ResourceInfo,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        since: int | None,
        render: Render | None = None,
    ) -> Watcher:
        """Register a watcher, first filled with the events after ``since`` (or, when ``since``
        is None, with ``ADDED`` for every current object). Raises 410 if ``since`` is compacted.
        """
        if info.storage:
            view, inner = info, render or encode

            def render_view(obj: JSON) -> bytes:
                return inner(eventsview.from_core(obj))

            return self.watch(self._storage(view), namespace, labels, fields, since, render_view)
        watcher = Watcher(
            info,
            namespace if info.namespaced else None,
            labels,
            fields,
            max_pending=self.max_pending,
            render=render,
        )
        if since is None:
            for _, stored in self.iter_stored(info, watcher.namespace, labels, fields):
                watcher.offer_object(ADDED, stored.raw)
        else:
            self.check_not_compacted(info, since)
            history = self._history[info.key]
            if history and history[-1].rv > since:
                start = self._history_position(history, since)
                for index in range(start, len(history)):
                    watcher.offer(history[index])
        self._watchers[info.key].add(watcher)
        return watcher

    def check_not_compacted(self, info: ResourceInfo, since: int) -> None:
        info = self._storage(info)
        compacted = self._compacted[info.key]
        if since < compacted:
            raise expired(f"too old resource version: {since} ({compacted})")

    @staticmethod
    def _history_position(history: deque[Event], since: int) -> int:
        """Index of the first event with rv > since (binary search over the deque)."""
        low, high = 0, len(history)
        while low < high:
            mid = (low + high) // 2
            if history[mid].rv <= since:
                low = mid + 1
            else:
                high = mid
        return low

    def unwatch(self, watcher: Watcher) -> None:
        watcher.close()
        self._watchers[watcher.info.key].discard(watcher)

    def close_watchers(self, resource: str | ResourceInfo | None = None) -> None:
        """End the open watches (of ``resource`` only, if given), as a server-side timeout or
        an API server restart ends them: each client resumes from its last resourceVersion."""
        keys = [self._storage(self.resolve(resource)).key] if resource is not None else None
        for key, watchers in self._watchers.items():
            if keys is None or key in keys:
                for watcher in tuple(watchers):
                    self.unwatch(watcher)

    def compact(self, resource: str | ResourceInfo) -> int:
        """Drop the history of ``resource`` up to now, as etcd's periodic compaction does: a
        watch (or a list page) resuming from an older resourceVersion gets 410 ``Expired``, and
        the client lists again; objects deleted since it last watched show no ``DELETED``
        event. Returns the compacted revision."""
        info = self._storage(self.resolve(resource))
        history = self._history[info.key]
        if history:
            self._compacted[info.key] = max(self._compacted[info.key], history[-1].rv)
        history.clear()
        return self._compacted[info.key]

    # -----------------------------------------------------------------------------------------
    # Shared write helpers

    def _generate_name(self, base: str) -> str:
        suffix = "".join(self._rng.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LENGTH))
        return base[:MAX_GENERATED_NAME_LENGTH] + suffix

    def _new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _check_namespace(self, info: ResourceInfo, namespace: str, name: str = "") -> None:
        if not info.namespaced:
            return
        if namespace not in self._objects["namespaces"].get("", {}):
            raise not_found("namespaces", "", namespace)
        if namespace in self._terminating:
            raise strategy.terminating_namespace(info, namespace, name)

    # -----------------------------------------------------------------------------------------
    # Create

    def create(
        self,
        obj: JSON,
        *,
        resource: str | ResourceInfo | None = None,
        namespace: str | None = None,
    ) -> JSON:
        """Create an object (kind/apiVersion pick the resource); returns the stored copy.

        Unlike POST, a status given here is kept: tests can create Pods that are already
        running and ready. Use ``update(..., subresource="status")`` for later status changes.
        """
        info = self.resolve(resource) if resource else self.registry.for_object(obj)
        body = clone(obj)
        if namespace is not None:
            metadata(body)["namespace"] = namespace
        elif info.namespaced:
            metadata(body).setdefault("namespace", "default")
        return decode(self.api_create(info, body, keep_status=True).raw)  # type: ignore[no-any-return]

    def api_create(
        self,
        info: ResourceInfo,
        obj: JSON,
        *,
        keep_status: bool = False,
        dry_run: bool = False,
    ) -> Event | Stored:
        """POST semantics; takes ownership of ``obj``."""
        if info.storage:
            strategy.check_identity(info, obj)
            strategy.validate(info, obj, None)  # the view's own rules, on its own shape
            result = self.api_create(
                self._storage(info), eventsview.to_core(obj), keep_status=keep_status,
                dry_run=dry_run,
            )  # fmt: skip
            return self._as_view(info, result)
        try:
            result = self._create(info, obj, keep_status=keep_status, dry_run=dry_run)
        except BaseException:
            self.cluster_ips.rollback()
            raise
        self._settle_allocations(dry_run)
        return result

    def _create(
        self,
        info: ResourceInfo,
        obj: JSON,
        *,
        keep_status: bool = False,
        dry_run: bool = False,
    ) -> Event | Stored:
        strategy.check_identity(info, obj)
        meta = metadata(obj)
        if meta.get("resourceVersion"):
            raise ApiError(500, "resourceVersion should not be set on objects to be created")
        namespace = (meta.get("namespace") or "") if info.namespaced else ""
        if not info.namespaced:
            meta.pop("namespace", None)  # BeforeCreate clears it for cluster-scoped kinds
        self._check_namespace(info, namespace, meta.get("name") or "")
        strategy.prepare_for_create(info, obj, keep_status=keep_status)
        meta["creationTimestamp"] = format_timestamp(self.clock())
        strategy.apply_defaults(info, obj, None, self.cluster_ips)
        generate = meta.get("generateName")
        if not meta.get("name") and generate:
            meta["name"] = self._generate_name(generate)
        strategy.validate(info, obj, None)
        bucket = self._objects[info.key].get(namespace, {})
        if meta["name"] in bucket:
            attempts = 1
            while generate and meta["name"] in bucket and attempts < GENERATE_NAME_ATTEMPTS:
                meta["name"] = self._generate_name(generate)
                attempts += 1
            if meta["name"] in bucket:
                raise already_exists(info.plural, info.group, meta["name"])
        meta["uid"] = self._new_uid()
        if dry_run:
            meta["resourceVersion"] = ""
            return Stored.of(info, obj)
        return self._commit(info, ADDED, obj, None)

    def create_namespace(self, name: str, labels: dict[str, str] | None = None) -> JSON:
        """Create a namespace (Active, with the kubernetes.io/metadata.name label)."""
        meta: JSON = {"name": name}
        if labels:
            meta["labels"] = dict(labels)
        return self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    # -----------------------------------------------------------------------------------------
    # Update (PUT) and patch

    def update(self, obj: JSON, *, subresource: str | None = None) -> JSON:
        """PUT semantics for a whole object: 409 when it carries a stale resourceVersion,
        unconditional without one. ``subresource="status"`` changes only the status.
        """
        info = self.registry.for_object(obj)
        body = clone(obj)
        meta = metadata(body)
        result = self.api_update(
            info,
            meta.get("namespace"),
            meta.get("name", ""),
            body,
            subresource=subresource,
            privileged=True,
        )
        return decode(result.raw)  # type: ignore[no-any-return]

    def patch(
        self,
        resource: str | ResourceInfo,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> JSON:
        """PATCH: ``patch_type`` is ``merge``, ``json``, ``strategic`` or a media type."""
        info = self.resolve(resource)
        content_type = PATCH_ALIASES.get(patch_type, patch_type)
        result = self.api_patch(
            info,
            namespace,
            name,
            clone(patch),
            content_type,
            subresource=subresource,
            privileged=True,
        )
        return decode(result.raw)  # type: ignore[no-any-return]

    def api_patch(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        *,
        subresource: str | None = None,
        privileged: bool = False,
        dry_run: bool = False,
    ) -> Event | Stored:
        current = self.stored(info, namespace, name)
        original: JSON = decode(current.raw)
        patched = apply_patch(original, patch, content_type)
        patched_meta = metadata(patched)
        if patched_meta.get("name", name) != name:
            raise strategy.name_mismatch(patched_meta.get("name"), name)
        patched_meta.setdefault("name", name)
        return self.api_update(
            info,
            namespace,
            name,
            patched,
            subresource=subresource,
            privileged=privileged,
            dry_run=dry_run,
            from_patch=True,
        )

    def api_update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        obj: JSON,
        *,
        subresource: str | None = None,
        privileged: bool = False,
        dry_run: bool = False,
        from_patch: bool = False,
    ) -> Event | Stored:
        """PUT semantics; takes ownership of ``obj``."""
        if info.storage:
            strategy.check_identity(info, obj)
            result = self.api_update(
                self._storage(info), namespace, name, eventsview.to_core(obj),
                subresource=subresource, privileged=privileged, dry_run=dry_run,
                from_patch=from_patch,
            )  # fmt: skip
            return self._as_view(info, result)
        try:
            result = self._update(
                info, namespace, name, obj, subresource=subresource,
                privileged=privileged, dry_run=dry_run, from_patch=from_patch,
            )  # fmt: skip
        except BaseException:
            self.cluster_ips.rollback()
            raise
        self._settle_allocations(dry_run)
        return result

    def _settle_allocations(self, dry_run: bool) -> None:
        """Cluster IPs taken by a write are kept only if it is stored (a failed write gives
        them back in its caller's ``except``; inline there, without a context manager's cost
        on every write)."""
        if dry_run:
            self.cluster_ips.rollback()
        else:
            self.cluster_ips.commit()

    def _update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        obj: JSON,
        *,
        subresource: str | None = None,
        privileged: bool = False,
        dry_run: bool = False,
        from_patch: bool = False,
    ) -> Event | Stored:
        strategy.check_identity(info, obj)
        meta = metadata(obj)
        ns = (namespace or "") if info.namespaced else ""
        if meta.get("name") != name:
            raise strategy.name_mismatch(meta.get("name"), name)
        if info.namespaced:
            if meta.get("namespace") in (None, ""):
                meta["namespace"] = ns
            elif meta["namespace"] != ns:
                raise ApiError(
                    400,
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
        try:
            current = self.stored(info, ns, name)
        except ApiError:
            if info.allow_create_on_update and subresource is None and not from_patch:
                meta.pop("resourceVersion", None)
                return self._create(info, obj, keep_status=privileged, dry_run=dry_run)
            raise
        old = current.obj
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise conflict(info.plural, info.group, name)
        if not wanted_rv and not info.unconditional_update and not from_patch:
            raise invalid(
                info.kind,
                info.group,
                name,
                [Cause("FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                       "metadata.resourceVersion")],
            )  # fmt: skip
        new = strategy.prepare_for_update(
            info, obj, old, subresource=subresource, privileged=privileged,
            copy_of_old=lambda: current.obj,
        )  # fmt: skip
        strategy.apply_defaults(info, new, old, self.cluster_ips)
        strategy.bump_generation(info, new, old)
        strategy.validate(info, new, old)
        if dry_run:
            return Stored.of(info, new)
        if strategy.same_object(new, old):
            return current
        old_meta = old["metadata"]
        if (
            old_meta.get("deletionTimestamp")
            and not old_meta.get("deletionGracePeriodSeconds")
            and not strategy.has_finalizers(info, new)
        ):
            # The last finalizer is gone from an object being deleted: it goes away now.
            return self._commit_or_dry(info, DELETED, new, old, False, current.raw)
        return self._commit(info, MODIFIED, new, old, current.raw)

    # -----------------------------------------------------------------------------------------
    # Delete

    def delete(
        self,
        resource: str | ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: PropagationPolicy = "Background",
        preconditions: JSON | None = None,
        grace_period_seconds: int | None = 0,
    ) -> JSON | None:
        """DELETE. Returns the object if it still exists (finalizers, a grace period), else None.

        Unlike the HTTP API, which applies a Pod's terminationGracePeriodSeconds, the default
        here is an immediate deletion; pass ``grace_period_seconds=None`` for the API default.
        """
        info = self.resolve(resource)
        event_or_stored = self.api_delete(
            info,
            namespace,
            name,
            propagation_policy=propagation_policy,
            preconditions=preconditions,
            grace_period_seconds=grace_period_seconds,
        )
        if isinstance(event_or_stored, Event) and event_or_stored.type == DELETED:
            return None
        return decode(event_or_stored.raw)  # type: ignore[no-any-return]

    def api_delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        preconditions: JSON | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> Event | Stored:
        if info.storage:
            result = self.api_delete(
                self._storage(info), namespace, name, propagation_policy=propagation_policy,
                preconditions=preconditions, grace_period_seconds=grace_period_seconds,
                dry_run=dry_run,
            )  # fmt: skip
            return self._as_view(info, result)
        current = self.stored(info, namespace, name)
        old = current.obj
        old_meta = old["metadata"]
        for key, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            wanted = (preconditions or {}).get(key)
            if wanted and wanted != old_meta.get(key):
                raise conflict(
                    info.plural,
                    info.group,
                    name,
                    f"Precondition failed: {label} in precondition: {wanted}, "
                    f"{label} in object meta: {old_meta.get(key)}",
                )
        if propagation_policy not in (None, "Background", "Foreground", "Orphan"):
            cause = validation.not_supported(
                "propagationPolicy", propagation_policy, ("Background", "Foreground", "Orphan")
            )
            raise invalid("DeleteOptions", "", "", [cause])
        new: JSON = decode(current.raw)
        meta = new["metadata"]
        finalizers: list[str] = list(meta.get("finalizers") or [])
        if propagation_policy == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
            finalizers.append(FOREGROUND_FINALIZER)
        if propagation_policy == "Orphan" and ORPHAN_FINALIZER not in finalizers:
            finalizers.append(ORPHAN_FINALIZER)
        if info.key == "namespaces":
            finalizers_in_spec = (new.get("spec") or {}).get("finalizers") or []
            if finalizers_in_spec or finalizers:
                if old_meta.get("deletionTimestamp"):
                    return current
                meta["deletionTimestamp"] = format_timestamp(self.clock())
                meta["deletionGracePeriodSeconds"] = 0
                meta["finalizers"] = finalizers
                new.setdefault("status", {})["phase"] = "Terminating"
                if not meta["finalizers"]:
                    meta.pop("finalizers")
                return self._commit_or_dry(info, MODIFIED, new, old, dry_run, current.raw)
        grace = strategy.grace_period(info, old, grace_period_seconds)
        if grace > 0:
            existing = old_meta.get("deletionGracePeriodSeconds")
            if old_meta.get("deletionTimestamp") and existing is not None and existing <= grace:
                return current
            meta["deletionTimestamp"] = format_timestamp(self.clock() + grace)
            meta["deletionGracePeriodSeconds"] = grace
            if finalizers:
                meta["finalizers"] = finalizers
            meta["generation"] = int(meta.get("generation", 0)) + 1
            return self._commit_or_dry(info, MODIFIED, new, old, dry_run, current.raw)
        if finalizers:
            if (
                old_meta.get("deletionTimestamp")
                and finalizers == (old_meta.get("finalizers") or [])
                and not old_meta.get("deletionGracePeriodSeconds")
            ):
                return current
            if not old_meta.get("deletionTimestamp") or old_meta.get("deletionGracePeriodSeconds"):
                meta["deletionTimestamp"] = format_timestamp(self.clock())
            meta["deletionGracePeriodSeconds"] = 0
            meta["finalizers"] = finalizers
            if not old_meta.get("deletionTimestamp"):
                meta["generation"] = int(meta.get("generation", 0)) + 1
            return self._commit_or_dry(info, MODIFIED, new, old, dry_run, current.raw)
        return self._commit_or_dry(info, DELETED, new, old, dry_run, current.raw)

    def _commit_or_dry(
        self,
        info: ResourceInfo,
        event_type: str,
        new: JSON,
        old: JSON,
        dry_run: bool,
        old_raw: bytes | None = None,
    ) -> Event | Stored:
        if dry_run:
            return Stored.of(info, new)
        if event_type == DELETED and info.key == "services":
            for ip in (new.get("spec") or {}).get("clusterIPs") or []:
                self.cluster_ips.release(ip)
        return self._commit(info, event_type, new, old, old_raw)

    def finish_graceful_deletion(
        self, info: ResourceInfo, namespace: str, name: str, uid: str
    ) -> None:
        """What the kubelet does when a pod's grace period ends: delete it with grace 0."""
        try:
            current = self.stored(info, namespace, name)
        except ApiError:
            return
        if current.obj["metadata"].get("uid") != uid:
            return
        self.api_delete(info, namespace, name, grace_period_seconds=0)

    def remove_finalizer(
        self, info: ResourceInfo, namespace: str, name: str, finalizer: str
    ) -> None:
        """Drop one finalizer (as its controller would); deletes the object if it was the last."""
        try:
            current = self.stored(info, namespace, name)
        except ApiError:
            return
        finalizers = current.obj["metadata"].get("finalizers") or []
        if finalizer not in finalizers:
            return
        new: JSON = decode(current.raw)
        remaining = [f for f in finalizers if f != finalizer]
        if remaining:
            new["metadata"]["finalizers"] = remaining
        else:
            new["metadata"].pop("finalizers", None)
        self.api_update(info, namespace, name, new, privileged=True)

    def snapshot_stats(self) -> JSON:
        """Counts for diagnostics: objects per resource, history length, watchers."""
        return {
            "resourceVersion": self._rv,
            "objects": {
                key: sum(len(b) for b in buckets.values()) for key, buckets in self._objects.items()
            },
            "watchers": {key: len(w) for key, w in self._watchers.items() if w},
        }
