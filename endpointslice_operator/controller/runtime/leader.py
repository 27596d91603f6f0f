"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's algorithm.

As kube-controller-manager (lease 15 s, renew deadline 10 s, retry period 2 s with jitter 1.2,
identity ``<hostname>_<uuid>``): a candidate takes the Lease when it has no holder or its record
has not changed for ``lease_duration`` *on our own clock* (so clock skew is harmless); the leader
renews (optimistic update first), loses the Lease after ``renew_deadline`` without renewal, and
releases it on stop (empty holder, 1 s duration: client-go's ``ReleaseOnCancel``). Not
``kubernetes_asyncio.leaderelection``: wall-clock timing (no virtual time), local time written
as ``Z``, no release, no ``leaseTransitions``. Unlike client-go, ``on_stopped_leading`` runs
only after a term, and the leading work ending ends the term.

With ``rivals`` (:mod:`.rivals`), the Leases of the same managed-by in other namespaces count
too. A candidate that does not hold its Lease does not take it while another is live. One
that holds it leads only once no other is live: if one goes before it, it releases its
Lease; if all go after it, it keeps renewing and waits for them to step down. A leader that
finds a live Lease going before its own (both took theirs at once) ends its term and
releases. Whoever stands by says once which Lease leads and what to change. Lists and writes
are linearizable, so of two candidates taking their Leases at once at least one sees the
other before it starts: never two writers.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import random
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

import aiohttp
from kubernetes_asyncio.client import ApiClient, CoordinationV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from endpointslice_operator.controller.runtime.rivals import Rival, RivalLeases, micro_time
from endpointslice_operator.metrics import OperatorMetrics
from endpointslice_operator.retry_log import RetryLog

__all__ = ["LeaderElector", "LeaseRecord", "default_identity"]

logger = logging.getLogger(__name__)

#: client-go's ``JitterFactor`` for the candidate's retry period.
JITTER_FACTOR = 1.2

StartedLeading = Callable[[], Awaitable[None]] | Callable[[asyncio.Event], Awaitable[None]]
StoppedLeading = Callable[[], Awaitable[None] | None]


def default_identity() -> str:
    """``<hostname>_<uuid>``, as kube-controller-manager builds its leader-election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The Lease spec fields leader election reads and writes (client-go's LeaderElectionRecord)."""

    holder: str
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def from_spec(cls, spec: Any) -> LeaseRecord:
        def text(value: object) -> str | None:
            if value is None:
                return None
            if isinstance(value, datetime):
                return micro_time(value)
            return str(value)

        if spec is None:
            return cls("", 0, None, None, 0)
        return cls(
            holder=spec.holder_identity or "",
            lease_duration_seconds=int(spec.lease_duration_seconds or 0),
            acquire_time=text(spec.acquire_time),
            renew_time=text(spec.renew_time),
            transitions=int(spec.lease_transitions or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


class LeaderElector:
    """Competes for one Lease; :meth:`run` leads for one term and returns when it ends."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        name: str,
        namespace: str,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        stop_grace: float = 10.0,
        metrics: OperatorMetrics | None = None,
        wall_clock: Callable[[], datetime] | None = None,
        rng: random.Random | None = None,
        may_release: Callable[[], bool] | None = None,
        rivals: RivalLeases | None = None,
    ) -> None:
        # client-go's config validation
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * 1.2")
        if retry_period <= 0 or stop_grace < 0:
            raise ValueError("retry_period must be > 0 and stop_grace >= 0")
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.stop_grace = stop_grace
        self._api = CoordinationV1Api(api_client)
        self._metrics = metrics
        self._wall_clock = wall_clock or (lambda: datetime.now(UTC))
        self._rng = rng or random.Random()
        self._may_release = may_release
        self._rivals = rivals
        self._deferred_to: Rival | None = None  # the live Lease we stand by for, as last said
        self._step_down: Rival | None = None  # set when a Lease going before ours is found
        self._retries = RetryLog(logger, f"Leader election (Lease {namespace}/{name})")
        """Asked before releasing: False leaves the Lease to expire (the operator's state was
        reset, and a write from this term would reach a state that never knew it)."""

        self._observed: LeaseRecord | None = None  # last record seen or written
        self._observed_at = 0.0  # loop time when _observed last changed
        self._resource_version: str | None = None  # of the Lease last read or written
        self._is_leader = False

    # -- state -------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True while this elector leads (between acquiring the Lease and the end of the term)."""
        return self._is_leader

    @property
    def observed_holder(self) -> str:
        """Holder of the Lease as last seen ("" when free or never seen)."""
        return self._observed.holder if self._observed is not None else ""

    def _set_leader(self, value: bool) -> None:
        self._is_leader = value
        if self._metrics is not None:
            self._metrics.set_leader(value)

    def _holds_lease(self) -> bool:
        """client-go's IsLeader(): the last observed record names us."""
        return self._observed is not None and self._observed.holder == self.identity

    def _lease_valid(self, now: float) -> bool:
        if self._observed is None:
            return False
        return self._observed_at + self._observed.lease_duration_seconds > now

    def _observe(self, record: LeaseRecord, resource_version: str | None) -> None:
        if record != self._observed:
            self._observed = record
            self._observed_at = asyncio.get_running_loop().time()
        self._resource_version = resource_version

    # -- the election loop ---------------------------------------------------------------------

    async def run(
        self,
        on_started_leading: StartedLeading,
        on_stopped_leading: StoppedLeading | None = None,
        *,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Wait to become leader, run ``on_started_leading`` while leading, return after the term.

        ``on_started_leading`` takes no argument (it is cancelled when the term ends), or one
        :class:`asyncio.Event` that is set when the term ends, so that it can wind down by
        itself (it is cancelled only if still running ``stop_grace`` seconds later).
        The term ends when a renewal fails for ``renew_deadline`` (leadership lost), when
        ``stop`` is set, when the leading work returns or raises, or when ``run`` is cancelled;
        in all but the first case the Lease is released. ``on_stopped_leading`` then runs.
        If ``stop`` is set before leading, ``run`` returns without calling either callback.
        """
        stop = stop if stop is not None else asyncio.Event()
        self._step_down = None
        if not await self._acquire(stop):
            return
        logger.info(
            "Became the leader (Lease %s/%s)",
            self.namespace,
            self.name,
            extra={"identity": self.identity},
        )
        self._set_leader(True)
        term_over = asyncio.Event()
        graceful = _takes_event(on_started_leading)
        work = asyncio.create_task(self._start_work(on_started_leading, term_over))
        lost = False
        try:
            lost = not await self._renew_until_done(stop, work)
        finally:
            if lost:
                self._lost()
            else:
                self._stepping_down()
            term_over.set()
            if graceful and not work.done() and self.stop_grace > 0:
                # Let the work wind down by itself; while we still hold the Lease, keep
                # renewing it meanwhile so that it does not expire under in-flight writes.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.stop_grace):
                        if lost:
                            await asyncio.wait({work})
                        elif not await self._renew_until_done(
                            asyncio.Event(), work, may_yield=False
                        ):
                            lost = True
                            self._lost()
            if not work.done():
                work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work  # its exception, if any, is re-raised below
            if not lost:
                await self._release_bounded()
                self._set_leader(False)
            if on_stopped_leading is not None:
                result = on_stopped_leading()
                if inspect.isawaitable(result):
                    await result
        if not work.cancelled() and work.exception() is not None:
            raise cast(BaseException, work.exception())

    def _lost(self) -> None:
        self._set_leader(False)
        logger.error(
            "Lost the leader Lease %s/%s: could not renew it within %ss",
            self.namespace,
            self.name,
            self.renew_deadline,
            extra={"identity": self.identity},
        )

    async def _start_work(self, callback: StartedLeading, term_over: asyncio.Event) -> None:
        if _takes_event(callback):
            await cast(Callable[[asyncio.Event], Awaitable[None]], callback)(term_over)
        else:
            await cast(Callable[[], Awaitable[None]], callback)()

    async def _acquire(self, stop: asyncio.Event) -> bool:
        """Try every retry period (with jitter) until the Lease is ours; False if stopped."""
        loop = asyncio.get_running_loop()
        announced = ""
        while not stop.is_set():
            if await self._attempt(loop.time() + self.renew_deadline):
                return True
            if self.observed_holder not in ("", self.identity, announced):
                announced = self.observed_holder
                logger.info(
                    "Standby: the leader is %s (Lease %s/%s); taking over if it stops renewing",
                    announced,
                    self.namespace,
                    self.name,
                    extra={"identity": self.identity},
                )
            delay = self.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR)
            if await _wait_event(stop, delay):
                return False
        return False

    async def _renew_until_done(
        self, stop: asyncio.Event, work: asyncio.Task[None], *, may_yield: bool = True
    ) -> bool:
        """Renew every retry period until stop or the work ends (True) or renewal fails (False);
        with ``may_yield``, also until a live Lease going before ours is found (True)."""
        loop = asyncio.get_running_loop()
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while True:
                done, _ = await asyncio.wait(
                    {stopped, work}, timeout=self.retry_period, return_when=asyncio.FIRST_COMPLETED
                )
                if done:
                    return True
                deadline = loop.time() + self.renew_deadline
                while not await self._attempt(deadline):
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        return False
                    done, _ = await asyncio.wait(
                        {stopped, work},
                        timeout=min(self.retry_period, remaining),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    if done:
                        return True
                    if loop.time() >= deadline:
                        return False
                if may_yield and self._step_down is not None:
                    return True
        finally:
            stopped.cancel()

    async def _attempt(self, deadline: float) -> bool:
        """One tryAcquireOrRenew, bounded by ``deadline`` (loop time); errors count as failure
        (logged once per cause, with a count: see :class:`~endpointslice_operator.retry_log.
        RetryLog`)."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        try:
            async with asyncio.timeout(remaining):
                done = await self._try_lead()
        except TimeoutError:
            self._retries.failed(f"the API did not answer within {remaining:.1f}s")
        except ApiException as exc:
            if exc.status == 409:
                logger.debug("Leader election: Lease update conflict (%s)", exc.reason)
            elif exc.status == 403:
                self._retries.failed(self._forbidden(exc))
            else:
                self._retries.failed(f"API error {exc.status} {exc.reason}")
        except (aiohttp.ClientError, OSError) as exc:
            self._retries.failed(f"cannot reach the API: {exc}")
        except Exception as exc:
            # Anything else from the client (e.g. a closed session) is a failed attempt too:
            # the election loop must keep its timing, not crash.
            self._retries.failed(repr(exc))
        else:
            self._retries.succeeded()
            return done
        return False

    def _forbidden(self, exc: ApiException) -> str:
        """What a 403 means here, and what to set."""
        return (
            f"forbidden (403) to read or write the Lease {self.name!r} in namespace "
            f"{self.namespace!r}: {exc.reason}. Grant get, create and update on "
            "coordination.k8s.io leases in that namespace, or put the Lease in a namespace "
            "where it may: set --lease-namespace (ENDPOINTSLICE_OPERATOR_LEASE_NAMESPACE), "
            "else POD_NAMESPACE (the Downward API's metadata.namespace) is used"
        )

    async def _try_lead(self) -> bool:
        """One attempt: True when we hold our Lease and no Lease of a rival stands in the way
        (see the module's docstring for the rules)."""
        if self._rivals is None:
            return await self._try_acquire_or_renew()
        if not self._is_leader:
            # Before touching our Lease: a candidate that holds none goes after every live one.
            rivals = await self._rivals.live()
            held = self._observed if self._holds_lease() else None
            mine = (held.acquire_time or "") if held is not None else None
            if rivals and (mine is None or rivals[0].order < (mine, self.namespace, self.name)):
                if mine is not None:
                    await self.release()  # so that the one ahead is not kept waiting for us
                self._defer(rivals[0])
                return False
        if not await self._try_acquire_or_renew():
            return False
        rivals = await self._rivals.live()
        if not rivals:
            self._deferred_to = None
            if self._metrics is not None:
                self._metrics.set_leader_deferred(False)
            return True
        first = rivals[0]
        assert self._observed is not None
        ahead = first.order < (self._observed.acquire_time or "", self.namespace, self.name)
        if self._is_leader:
            if ahead:
                self._step_down = first
            return True  # the ones after us wait for us (or step down themselves)
        if ahead:
            await self.release()  # so that the one ahead is not kept waiting for us
        self._defer(first)
        return False

    def _defer(self, rival: Rival) -> None:
        """Stand by for ``rival``: said once per Lease and holder."""
        if self._metrics is not None:
            self._metrics.set_leader_deferred(True)
        if self._deferred_to is not None and (
            (self._deferred_to.namespace, self._deferred_to.name, self._deferred_to.holder)
            == (rival.namespace, rival.name, rival.holder)
        ):
            return
        self._deferred_to = rival
        managed_by = self._rivals.managed_by if self._rivals is not None else ""
        logger.warning(
            "Not leading: another operator with --managed-by %s leads this cluster through "
            "the Lease %s (holder %s); this one's Lease is %s/%s. Standing by: it takes over "
            "when that Lease is released or expires. To run both, give this one another "
            "--managed-by; to make it a standby of that one, set --lease-namespace %s",
            managed_by,
            rival,
            rival.holder,
            self.namespace,
            self.name,
            rival.namespace,
            extra={"identity": self.identity},
        )

    def _stepping_down(self) -> None:
        """Said when the term ends because a Lease going before ours was found."""
        rival = self._step_down
        if rival is None:
            return
        logger.warning(
            "Stepping down: the Lease %s (holder %s) of the same --managed-by was taken before "
            "ours (%s/%s); releasing ours and standing by",
            rival,
            rival.holder,
            self.namespace,
            self.name,
            extra={"identity": self.identity},
        )

    async def _try_acquire_or_renew(self) -> bool:
        loop = asyncio.get_running_loop()
        now_wall = micro_time(self._wall_clock())
        duration = max(1, math.ceil(self.lease_duration))
        desired = LeaseRecord(self.identity, duration, now_wall, now_wall, 0)

        # 1. Fast path: the leader updates optimistically from the Lease it last wrote.
        if self._holds_lease() and self._lease_valid(loop.time()) and self._observed is not None:
            record = replace(
                desired,
                acquire_time=self._observed.acquire_time,
                transitions=self._observed.transitions,
            )
            try:
                await self._write(record)
                return True
            except ApiException as exc:
                logger.debug("Optimistic Lease renewal failed (%s), reading it", exc.status)

        # 2. Read, or create when missing.
        try:
            lease = await self._api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            await self._create(desired)
            return True
        current = LeaseRecord.from_spec(lease.spec)
        self._observe(current, lease.metadata.resource_version)

        # 3. Someone else holds a Lease that has not expired yet.
        if current.holder and current.holder != self.identity and self._lease_valid(loop.time()):
            return False

        # 4. Take over or renew.
        if current.holder == self.identity:
            record = replace(
                desired, acquire_time=current.acquire_time, transitions=current.transitions
            )
        else:
            record = replace(desired, transitions=current.transitions + 1)
        await self._write(record)
        return True

    async def _create(self, record: LeaseRecord) -> None:
        body: Any = {  # a plain dict: serialised as is, MicroTime strings untouched
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace, **self._labels()},
            "spec": record.to_spec(),
        }
        created = await self._api.create_namespaced_lease(self.namespace, body)
        self._observe(record, created.metadata.resource_version)

    async def _write(self, record: LeaseRecord) -> None:
        """Replace the Lease, conditional on the resourceVersion last seen."""
        body: Any = {  # a plain dict: serialised as is, MicroTime strings untouched
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": self._resource_version,
                **self._labels(),
            },
            "spec": record.to_spec(),
        }
        written = await self._api.replace_namespaced_lease(self.name, self.namespace, body)
        self._observe(record, written.metadata.resource_version)

    def _labels(self) -> dict[str, Any]:
        return {"labels": self._rivals.labels} if self._rivals is not None else {}

    # -- release -----------------------------------------------------------------------------

    async def release(self) -> bool:
        """Give the Lease up now (empty holder, 1 s duration) if we hold it; True when done.

        Idempotent; does nothing (and returns True) when the Lease is not ours.
        """
        if not self._holds_lease() or self._observed is None:
            return True
        if self._may_release is not None and not self._may_release():
            logger.info(
                "Leaving the Lease %s/%s to expire (not released)", self.namespace, self.name
            )
            return True
        now_wall = micro_time(self._wall_clock())
        record = LeaseRecord("", 1, now_wall, now_wall, self._observed.transitions)
        try:
            await self._write(record)
        except ApiException as exc:
            logger.warning("Could not release the Lease: API error %s %s", exc.status, exc.reason)
            return False
        except Exception as exc:
            logger.warning("Could not release the Lease: %r", exc)
            return False
        logger.info("Released the leader Lease %s/%s", self.namespace, self.name)
        return True

    async def _release_bounded(self) -> None:
        try:
            async with asyncio.timeout(self.renew_deadline):
                await self.release()
        except TimeoutError:
            logger.warning("Could not release the Lease within %ss", self.renew_deadline)


def _takes_event(callback: StartedLeading) -> bool:
    """Whether the leading callback accepts the term-over event as its one argument."""
    try:
        parameters = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 1


async def _wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``event``; True if it is set."""
    if event.is_set():
        return True
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
    return event.is_set()
