"""Watch events, the per-watcher filtering and buffering, and their wire encoding."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from endpointslice_operator.testing.resources import ResourceInfo
from endpointslice_operator.testing.selectors import FieldSelector, LabelSelector

JSON = dict[str, Any]
Render = Callable[[JSON], bytes]

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"


def encode(obj: Any) -> bytes:
    """Compact UTF-8 JSON (``orjson``: the store encodes every write and every object it
    serves; the standard library for what orjson refuses, such as integers beyond 64 bits,
    which a request may carry and validation must get to see)."""
    try:
        return orjson.dumps(obj)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


_DIGITS_ONLY = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
"""A translation table: ASCII digits stay digits (as ``0``), every other byte becomes a space."""
_LONG_NUMBER = b"0" * 19
"""Nineteen digits in a row (after translation): possibly an integer beyond 64 bits, which orjson
would decode as a float (a request may carry one, and validation must see the integer)."""


def has_long_number(raw: bytes) -> bool:
    """Whether ``raw`` holds nineteen ASCII digits in a row (what ``re.search(rb"\\d{19}")``
    finds, about fifteen times faster: a translation and a substring search, both in C)."""
    return _LONG_NUMBER in raw.translate(_DIGITS_ONLY)


def decode(raw: bytes) -> Any:
    """The inverse of :func:`encode` (the standard library for what orjson refuses or would
    change)."""
    if not has_long_number(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def event_line(event_type: str, raw_object: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw_object + b"}\n"


class Event:
    """One committed change: its resourceVersion, type, object states and encoded object.

    While the write is being dispatched (to watchers and listeners) the event holds the
    decoded states; once it is kept in the history it holds bytes only (:meth:`settle`), and
    ``obj`` and ``old`` decode a fresh copy on each access. Ten thousand events of decoded
    dicts per resource made the garbage collector walk several hundred thousand containers over
    and over (about 100 us per EndpointSlice write at the benchmark's scale); bytes are not
    tracked by it.
    """

    __slots__ = (
        "_line",
        "_line_type",
        "_obj",
        "_old",
        "_old_raw",
        "info",
        "name",
        "namespace",
        "raw",
        "rv",
        "type",
    )

    def __init__(
        self,
        rv: int,
        type: str,
        info: ResourceInfo,
        obj: JSON,
        raw: bytes,
        old: JSON | None,
        old_raw: bytes | None = None,
    ) -> None:
        self.rv = rv
        self.type = type
        self.info = info
        self.raw = raw
        meta = obj.get("metadata") or {}
        self.namespace: str = meta.get("namespace") or ""
        self.name: str = meta.get("name") or ""
        self._obj: JSON | None = obj
        self._old = old
        self._old_raw = old_raw
        self._line_type: str | None = None
        self._line = b""

    @property
    def obj(self) -> JSON:
        """The new state; for DELETED the last state, carrying the deletion's version."""
        if self._obj is not None:
            return self._obj
        return decode(self.raw)  # type: ignore[no-any-return]

    @property
    def old(self) -> JSON | None:
        """The previous state for MODIFIED and DELETED (to see objects leave a selector)."""
        if self._old is not None:
            return self._old
        if self._old_raw is None:
            return None
        return decode(self._old_raw)  # type: ignore[no-any-return]

    @property
    def old_raw(self) -> bytes | None:
        """The previous state, encoded."""
        if self._old_raw is None and self._old is not None:
            self._old_raw = encode(self._old)
        return self._old_raw

    def settle(self) -> None:
        """Keep only the encoded states (the event goes into the history)."""
        if self._old is not None and self._old_raw is None:
            self._old_raw = encode(self._old)
        self._obj = None
        self._old = None

    def line(self, event_type: str) -> bytes:
        """The event's wire line as ``event_type`` (the last one asked for is kept: nearly
        every watcher sees an event as the same type)."""
        if self._line_type != event_type:
            self._line = event_line(event_type, self.raw)
            self._line_type = event_type
        return self._line


def _namespace_of(obj: JSON) -> str:
    return (obj.get("metadata") or {}).get("namespace") or ""


class Watcher:
    """A watch's filter and its pending, already encoded lines.

    Filtering follows the watch cache: an object entering the selector is ``ADDED``, one
    leaving it is ``DELETED`` (with its new state), and changes outside it are not sent.
    """

    def __init__(
        self,
        info: ResourceInfo,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        max_pending: int,
        render: Render | None = None,
    ) -> None:
        self.info = info
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.max_pending = max_pending
        self.render = render  # another encoding of objects (server-side printed Tables)
        self.unfiltered = not namespace and labels.empty and fields.empty
        """Every object matches: each event is seen as its own type, without looking at it."""
        self.pending: deque[bytes] = deque()
        self.overflowed = False
        self.closed = False
        self.wakeup = asyncio.Event()

    def matches(self, obj: JSON | None) -> bool:
        if obj is None:
            return False
        if self.namespace and _namespace_of(obj) != self.namespace:
            return False
        if not self.labels.empty and not self.labels.matches(
            (obj.get("metadata") or {}).get("labels")
        ):
            return False
        return self.fields.empty or self.fields.matches(obj)

    def classify(self, event: Event) -> str | None:
        """The event type this watcher sees for ``event``, or None to skip it."""
        if self.unfiltered:
            return event.type
        now = self.matches(event.obj)
        if event.type == ADDED:
            return ADDED if now else None
        if event.type == DELETED:
            return DELETED if now else None
        before = self.matches(event.old)
        if before and now:
            return MODIFIED
        if now:
            return ADDED
        if before:
            return DELETED
        return None

    def offer(self, event: Event) -> None:
        event_type = self.classify(event)
        if event_type is None:
            return
        if self.render is None:
            self.push(event.line(event_type))
        else:
            self.push(event_line(event_type, self.render(event.obj)))

    def offer_object(self, event_type: str, raw: bytes) -> None:
        """An event for an encoded object (the synthetic ADDED of a watch's initial state)."""
        if self.render is None:
            self.push(event_line(event_type, raw))
        else:
            self.push(event_line(event_type, self.render(decode(raw))))

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self.pending) >= self.max_pending:
            # Like the watch cache with a blocked watcher: terminate it; the client re-lists.
            self.overflowed = True
            self.closed = True
        else:
            self.pending.append(line)
        self.wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()

    def drain(self) -> bytes:
        lines = b"".join(self.pending)
        self.pending.clear()
        self.wakeup.clear()
        return lines


def bookmark_line(info: ResourceInfo, rv: int, *, initial_events_end: bool = False) -> bytes:
    metadata: JSON = {"resourceVersion": str(rv)}
    if initial_events_end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    body = {"kind": info.kind, "apiVersion": info.api_version, "metadata": metadata}
    return event_line(BOOKMARK, encode(body))


def error_line(status: JSON) -> bytes:
    return event_line(ERROR, encode(status))
