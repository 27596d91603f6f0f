"""The periodic one-line activity summary: the only routine line at the default log level.

Per-event lines (Kopf's handler results, each sync) are debug detail; an operator running at
``info`` logs its start-up, leadership changes, problems, and, every
:data:`SUMMARY_INTERVAL` seconds *in which something happened*, one line such as::

    in the last 5m: 42 syncs (1 failed, 0 stale), EndpointSlices 3 created, 39 updated,
    0 deleted; cached 12 Services, 310 pods, 4 nodes, 14 EndpointSlices

An idle operator stays silent, as kube-controller-manager does at its default verbosity.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from endpointslice_operator.metrics import SUBSYSTEM, OperatorMetrics, SyncResult

__all__ = ["SUMMARY_INTERVAL", "Activity", "describe", "run_summaries"]

SUMMARY_INTERVAL = 300.0
"""Seconds between summary lines (only when there was activity)."""

log = logging.getLogger("endpointslice_operator.summary")

_OPERATIONS = ("create", "update", "delete")


@dataclass(frozen=True, slots=True)
class Activity:
    """Cumulative counters at one moment."""

    syncs: Mapping[str, int]
    changes: Mapping[str, int]

    @classmethod
    def read(cls, metrics: OperatorMetrics) -> Activity:
        def value(name: str, label: str, key: str) -> int:
            return int(metrics.sample_value(f"{SUBSYSTEM}_{name}", {label: key}) or 0)

        return cls(
            syncs={r.value: value("syncs", "result", r.value) for r in SyncResult},
            changes={op: value("changes", "operation", op) for op in _OPERATIONS},
        )


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    if minutes and rest:
        return f"{minutes}m{rest}s"
    return f"{minutes}m" if minutes else f"{rest}s"


def describe(
    before: Activity, after: Activity, seconds: float, cached: Mapping[str, int]
) -> str | None:
    """The summary line for the activity between two readings, or None when there was none."""
    syncs = {key: after.syncs[key] - before.syncs.get(key, 0) for key in after.syncs}
    changes = {key: after.changes[key] - before.changes.get(key, 0) for key in after.changes}
    if not any(syncs.values()) and not any(changes.values()):
        return None
    total = sum(syncs.values())
    failed = syncs.get(SyncResult.ERROR.value, 0)
    stale = syncs.get(SyncResult.STALE.value, 0)
    cache = ", ".join(
        f"{cached.get(kind, 0)} {label}"
        for kind, label in (
            ("services", "Services"),
            ("pods", "pods"),
            ("nodes", "nodes"),
            ("endpointslices", "EndpointSlices"),
        )
    )
    return (
        f"in the last {_duration(seconds)}: {total} syncs ({failed} failed, {stale} stale), "
        f"EndpointSlices {changes['create']} created, {changes['update']} updated, "
        f"{changes['delete']} deleted; cached {cache}"
    )


async def run_summaries(
    metrics: OperatorMetrics,
    cached: Callable[[], Mapping[str, int]],
    interval: float = SUMMARY_INTERVAL,
) -> None:
    """Log :func:`describe`'s line every ``interval`` seconds, until cancelled."""
    loop = asyncio.get_running_loop()
    before, since = Activity.read(metrics), loop.time()
    while True:
        await asyncio.sleep(interval)
        after, now = Activity.read(metrics), loop.time()
        line = describe(before, after, now - since, cached())
        if line is not None:
            log.info("%s", line)
        before, since = after, now
