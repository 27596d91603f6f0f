"""core/v1 Events on Services, aggregated like client-go's recorder.

The first occurrence of (object, type, reason, message) creates an Event; repeats PATCH that
Event's ``count`` and ``lastTimestamp`` instead of creating new ones, so a retry loop that fails
the same way every time leaves one Event with a growing count. Like client-go's aggregator,
once more than 10 different messages with the same (object, type, reason) arrive within 10
minutes, further ones go into a single Event whose message starts with
``(combined from similar events):`` and always shows the latest one. The caches are bounded.
Recording never raises: a failed Event write is logged and forgotten, as in client-go, because
Events are best effort and must not fail a sync.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from kubernetes_asyncio.client import ApiClient, CoreV1Api

from endpointslice_operator.controller.api.errors import ApiError, raise_for_status
from endpointslice_operator.controller.api.reset import StateReset, WriteFence
from endpointslice_operator.controller.work.budget import WriteBudget

__all__ = ["EVENT_SOURCE_COMPONENT", "NORMAL", "WARNING", "EventRecorder"]

log = logging.getLogger(__name__)

EVENT_SOURCE_COMPONENT = "endpoint-slice-controller"
"""Upstream's event source component; kept so tooling that filters on it keeps working."""

NORMAL = "Normal"
WARNING = "Warning"

_CacheKey = tuple[str, str, str, str, str, str]
_SimilarKey = tuple[str, str, str, str, str]

MAX_SIMILAR_MESSAGES = 10
"""client-go's ``maxSimilarEvents``: distinct messages before aggregation."""
SIMILAR_WINDOW = timedelta(minutes=10)
"""client-go's ``aggregateIntervalInSeconds``."""
COMBINED_PREFIX = "(combined from similar events): "


@dataclass(slots=True)
class _Similar:
    started: datetime
    messages: set[str]


@dataclass(slots=True)
class _Seen:
    name: str
    count: int
    first: str


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """Records Events about Services through the core/v1 API."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        component: str = EVENT_SOURCE_COMPONENT,
        instance: str = "",
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        cache_size: int = 4096,
        budget: WriteBudget | None = None,
        fence: WriteFence | None = None,
    ) -> None:
        self._api = CoreV1Api(api_client)
        self.fence = fence
        """Events wait for it as the other writes do; none is written once it closed (an
        Event about a state the API server no longer has would only mislead)."""
        self._budget = budget  # Events count against the write budget, as in client-go
        self._component = component
        self._instance = instance
        self._clock = clock
        self._cache: collections.OrderedDict[_CacheKey, _Seen] = collections.OrderedDict()
        self._cache_size = cache_size
        self._similar: collections.OrderedDict[_SimilarKey, _Similar] = collections.OrderedDict()
        self.recorded = 0
        """Events written (created or aggregated), for logs and tests."""

    async def record(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        """Record an Event about ``obj`` (a Service JSON object); never raises."""
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(metadata, Mapping)
        namespace = str(metadata.get("namespace") or "default")
        name = str(metadata.get("name") or "")
        uid = str(metadata.get("uid") or "")
        kind = str(obj.get("kind") or "Service")
        log.log(
            logging.WARNING if event_type == WARNING else logging.INFO,
            "Event %s %s on %s %s/%s: %s",
            event_type,
            reason,
            kind,
            namespace,
            name,
            message,
        )
        moment = self._clock()
        now = _timestamp(moment)
        dedupe = message
        if self._too_many_similar((namespace, name, uid, event_type, reason), message, moment):
            dedupe = COMBINED_PREFIX
            message = COMBINED_PREFIX + message
        key: _CacheKey = (namespace, name, uid, event_type, reason, dedupe)
        try:
            seen = self._cache.get(key)
            if seen is not None:
                self._cache.move_to_end(key)
                if await self._bump(namespace, seen, now, message):
                    self.recorded += 1
                    return
            event_name = f"{name}.{time.time_ns():x}"
            body = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": event_name, "namespace": namespace},
                "involvedObject": {
                    "apiVersion": str(obj.get("apiVersion") or "v1"),
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                    "uid": uid,
                    "resourceVersion": str(metadata.get("resourceVersion") or ""),
                },
                "reason": reason,
                "message": message,
                "type": event_type,
                "source": {"component": self._component},
                "reportingComponent": self._component,
                "reportingInstance": self._instance,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            }
            if self._budget is not None:
                await self._budget.acquire()
            if self.fence is not None:
                await self.fence.admit()
            response = await self._api.create_namespaced_event(
                namespace, cast(Any, body), _preload_content=False
            )
            await raise_for_status(response)
            self.recorded += 1
            self._cache[key] = _Seen(event_name, 1, now)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        except StateReset:
            log.debug(
                "Event %s on %s/%s not recorded: the server was reset", reason, namespace, name
            )
        except Exception as exc:  # best effort: an Event must never fail a sync
            log.warning("could not record Event %s on %s/%s: %s", reason, namespace, name, exc)

    def _too_many_similar(self, key: _SimilarKey, message: str, moment: datetime) -> bool:
        similar = self._similar.get(key)
        if similar is None or moment - similar.started > SIMILAR_WINDOW:
            similar = self._similar[key] = _Similar(moment, set())
        self._similar.move_to_end(key)
        while len(self._similar) > self._cache_size:
            self._similar.popitem(last=False)
        similar.messages.add(message)
        return len(similar.messages) > MAX_SIMILAR_MESSAGES

    async def _bump(self, namespace: str, seen: _Seen, now: str, message: str) -> bool:
        """PATCH count/lastTimestamp (and message) of an Event we created; False if it is gone."""
        seen.count += 1
        patch = {"count": seen.count, "lastTimestamp": now, "message": message}
        try:
            if self._budget is not None:
                await self._budget.acquire()
            if self.fence is not None:
                await self.fence.admit()
            response = await self._api.patch_namespaced_event(
                seen.name, namespace, patch, _preload_content=False
            )
            await raise_for_status(response)
        except ApiError as exc:
            if exc.not_found:
                return False
            raise
        return True
