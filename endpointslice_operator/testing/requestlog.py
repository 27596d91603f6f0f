"""The emulator's request log: one entry per API request, with counts for assertions."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

DEFAULT_MAX_ENTRIES = 250_000  # about 50 MB of records; counts cover the retained ones


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as kube-apiserver's audit log would classify it."""

    verb: str  # get, list, watch, create, update, patch, delete, deletecollection, discovery
    resource: str  # plural ("endpointslices"); "" for discovery and other non-resource URLs
    group: str
    subresource: str
    namespace: str
    name: str
    code: int
    path: str


class RequestLog:
    """Bounded, ordered request records (the oldest are dropped beyond ``max_entries``)."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self._entries: deque[RequestRecord] = deque(maxlen=max_entries)
        self._waiters: set[asyncio.Event] = set()

    def append(self, record: RequestRecord) -> None:
        self._entries.append(record)
        for waiter in self._waiters:
            waiter.set()

    async def wait_for(
        self, predicate: Callable[[RequestLog], bool], timeout: float | None = None
    ) -> None:
        """Wait until ``predicate(log)`` holds, re-checking after every logged request.

        Raises TimeoutError after ``timeout`` seconds (loop time, so virtual time works).
        """
        waiter = asyncio.Event()
        self._waiters.add(waiter)
        try:
            async with asyncio.timeout(timeout):
                while not predicate(self):
                    waiter.clear()
                    await waiter.wait()
        finally:
            self._waiters.discard(waiter)

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(tuple(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def filter(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        code: int | None = None,
        group: str | None = None,
    ) -> list[RequestRecord]:
        """Records matching every given criterion (None matches anything)."""
        return [
            r
            for r in self._entries
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (subresource is None or r.subresource == subresource)
            and (namespace is None or r.namespace == namespace)
            and (name is None or r.name == name)
            and (code is None or r.code == code)
            and (group is None or r.group == group)
        ]

    def count(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        code: int | None = None,
        group: str | None = None,
    ) -> int:
        return len(
            self.filter(
                verb=verb,
                resource=resource,
                subresource=subresource,
                namespace=namespace,
                name=name,
                code=code,
                group=group,
            )
        )
