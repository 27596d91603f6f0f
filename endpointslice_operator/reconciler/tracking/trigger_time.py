"""The ``endpoints.kubernetes.io/last-change-trigger-time`` value for a sync.

A port of upstream's ``TriggerTimeTracker`` taking each pod's Ready ``lastTransitionTime``
(:func:`pod_ready_times`): a new Service gives its ``creationTimestamp``; otherwise the earliest
Ready transition (or re-creation) since the previous sync, or None when nothing changed (the
annotation is then removed). Approximate, as upstream's, for several changes between syncs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

__all__ = ["TriggerTimeTracker", "parse_time", "pod_ready_time", "pod_ready_times"]

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))$"
)


def parse_time(value: str | datetime | None) -> datetime | None:
    """An RFC 3339 timestamp as an aware UTC datetime; None for None, "" or anything invalid.

    Accepts ``Z`` or numeric offsets and any number of fraction digits (truncated to
    microseconds). A ``datetime`` (as YAML loaders produce) is normalised to UTC; a naive one
    is taken to be UTC.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
    if not isinstance(value, str):
        return None
    return _parse_rfc3339(value)


@functools.lru_cache(maxsize=4096)
def _parse_rfc3339(value: str) -> datetime | None:
    """Memoised: every sync parses the Ready transition time of each selected pod, and those
    have one-second resolution, so a rollout's pods share a handful of values."""
    match = _RFC3339.match(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        offset = timedelta(0)
        if not zulu:
            # timezone() below refuses a day or more (ValueError): no check of our own.
            offset = timedelta(hours=int(off_h), minutes=int(off_m))
            if sign == "-":
                offset = -offset
        # RFC 3339 allows a leap second (:60); fold it onto the last representable instant.
        leap = int(second) == 60
        parsed = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            59 if leap else int(second),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=timezone(offset),
        )
    except (ValueError, OverflowError):
        return None
    return parsed.astimezone(UTC)


def pod_ready_time(pod: Mapping[str, object]) -> datetime | None:
    """The ``lastTransitionTime`` of a Pod's Ready condition; None if it has none."""
    status = pod.get("status")
    if not isinstance(status, Mapping):
        return None
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return None
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            transition = condition.get("lastTransitionTime")
            if isinstance(transition, str | datetime):
                return parse_time(transition)
            return None
    return None


def pod_ready_times(pods: Iterable[Mapping[str, object]]) -> dict[str, datetime | None]:
    """Pod name -> Ready ``lastTransitionTime``, the input of
    :meth:`TriggerTimeTracker.compute_trigger_time`."""
    times: dict[str, datetime | None] = {}
    for pod in pods:
        metadata = pod.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if isinstance(name, str):
            times[name] = pod_ready_time(pod)
    return times


@dataclass(slots=True)
class _ServiceState:
    service_time: datetime | None = None
    pod_times: dict[str, datetime] = field(default_factory=dict)


def _earliest(current: datetime | None, candidate: datetime) -> datetime:
    return candidate if current is None or candidate < current else current


def _after(value: datetime, previous: datetime | None) -> bool:
    return previous is None or value > previous


class TriggerTimeTracker:
    """Remembers, per Service, the trigger times seen on its previous sync.

    Not thread-safe, and must not be called concurrently for the same Service (the operator's
    queue never syncs one key twice at once).
    """

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], _ServiceState] = {}

    def compute_trigger_time(
        self,
        namespace: str,
        name: str,
        service_created: datetime | None,
        pod_ready_times: Mapping[str, datetime | None],
    ) -> datetime | None:
        """The trigger time to stamp on the slices written by this sync, or None.

        ``pod_ready_times`` maps each selected pod's name to its Ready condition's
        ``lastTransitionTime`` (None when it has no Ready condition; such pods are ignored).
        The Service's state is replaced by what this call saw.
        """
        key = (namespace, name)
        previous = self._states.get(key)
        state = previous if previous is not None else _ServiceState()

        earliest_change: datetime | None = None
        seen: dict[str, datetime] = {}
        for pod_name, ready_time in pod_ready_times.items():
            if ready_time is None:
                continue
            seen[pod_name] = ready_time
            if _after(ready_time, state.pod_times.get(pod_name)):
                earliest_change = _earliest(earliest_change, ready_time)
        if service_created is not None and _after(service_created, state.service_time):
            earliest_change = _earliest(earliest_change, service_created)

        self._states[key] = _ServiceState(service_time=service_created, pod_times=seen)
        if previous is None:
            return service_created
        return earliest_change

    def delete_service(self, namespace: str, name: str) -> None:
        """Forget a deleted Service."""
        self._states.pop((namespace, name), None)

    def __len__(self) -> int:
        """The number of Services remembered."""
        return len(self._states)
