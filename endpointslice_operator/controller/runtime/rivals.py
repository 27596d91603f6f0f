"""The other leader-election Leases of the same ``--managed-by``, in any namespace.

A Lease is per namespace, so two operators with one ``--managed-by`` whose Leases live in two
namespaces (the chart's pod, and ``make run`` on a workstation) would both lead. Every Lease an
elector writes therefore carries ``endpointslice.kubernetes.io/managed-by: <managed-by>``, and
each attempt lists the Leases with that label in all namespaces (one list per retry period).
Another such Lease is *live* while it names a holder and its record changed within its
``leaseDurationSeconds`` on our own clock, as client-go judges its own Lease (a first sight
counts as a change, so a dead holder blocks for one lease duration at most). Live Leases are
ordered by ``(acquireTime, namespace, name)``: every candidate sees the same order. A 403 on the
list is named once and the election falls back to the one Lease.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client import ApiClient, CoordinationV1Api
from kubernetes_asyncio.client.exceptions import ApiException

__all__ = ["RIVAL_LABEL", "Rival", "RivalLeases", "micro_time"]

logger = logging.getLogger(__name__)

RIVAL_LABEL = "endpointslice.kubernetes.io/managed-by"
"""The label every leader-election Lease carries, with the elector's ``--managed-by``."""


@dataclass(frozen=True, slots=True)
class Rival:
    """Another live Lease of the same managed-by."""

    namespace: str
    name: str
    holder: str
    acquire_time: str

    @property
    def order(self) -> tuple[str, str, str]:
        """Earlier goes first: the Lease that has led longest keeps leading."""
        return (self.acquire_time, self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class RivalLeases:
    """Lists the Leases labelled with ``managed_by`` in every namespace but ours (ns/name)."""

    def __init__(self, api_client: ApiClient, *, managed_by: str, namespace: str, name: str):
        self.managed_by = managed_by
        self._own = (namespace, name)
        self._api = CoordinationV1Api(api_client)
        # (namespace, name) -> (holder, renew time, loop time when it last changed)
        self._seen: dict[tuple[str, str], tuple[str, str, float]] = {}
        self._forbidden_said = False

    @property
    def labels(self) -> dict[str, str]:
        return {RIVAL_LABEL: self.managed_by}

    async def live(self) -> list[Rival]:
        """The other live Leases of our managed-by, first in order first ([] when forbidden)."""
        try:
            leases: Any = await self._api.list_lease_for_all_namespaces(
                label_selector=f"{RIVAL_LABEL}={self.managed_by}"
            )
        except ApiException as exc:
            if exc.status != 403:
                raise
            if not self._forbidden_said:
                self._forbidden_said = True
                logger.warning(
                    "Cannot list Leases in all namespaces (403 %s): another operator with "
                    "--managed-by %s leading through a Lease in another namespace would not "
                    "be seen, and both would write. Grant list on coordination.k8s.io leases "
                    "cluster-wide (a ClusterRole; the chart's <fullname>-leases does)",
                    exc.reason,
                    self.managed_by,
                )
            return []
        if self._forbidden_said:
            self._forbidden_said = False
            logger.info("Listing Leases in all namespaces is allowed again")
        now = asyncio.get_running_loop().time()
        seen: dict[tuple[str, str], tuple[str, str, float]] = {}
        rivals: list[Rival] = []
        for lease in leases.items:
            key = (lease.metadata.namespace, lease.metadata.name)
            if key == self._own:
                continue
            spec = lease.spec
            holder = (spec.holder_identity if spec is not None else None) or ""
            renewed = str(spec.renew_time) if spec is not None else ""
            before = self._seen.get(key)
            changed = now if before is None or before[:2] != (holder, renewed) else before[2]
            seen[key] = (holder, renewed, changed)
            duration = int((spec.lease_duration_seconds if spec is not None else 0) or 0)
            if holder and changed + duration > now:
                acquired = spec.acquire_time
                rivals.append(
                    Rival(key[0], key[1], holder, _text(acquired) if acquired is not None else "")
                )
        self._seen = seen
        return sorted(rivals, key=lambda r: r.order)


def micro_time(moment: datetime) -> str:
    """A ``MicroTime`` in its canonical RFC 3339 form with microseconds, in UTC (as the elector
    writes it, so that acquire times compare as text)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(moment: Any) -> str:
    return micro_time(moment) if isinstance(moment, datetime) else str(moment)
