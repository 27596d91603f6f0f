"""Noticing an API server whose state was reset (an etcd restore, a rebuilt control plane).

Nothing in the watch protocol says so: measured on v1.24, a watch resumed beyond the server's
version is accepted and stays silent. :class:`Watermark` keeps the highest resourceVersion
delivered (one etcd counter for all kinds); :func:`probe` reads the current one with a
``limit=1`` consistent list, and a value below the watermark read before it is proof of a reset.
:class:`WriteFence` stands before every write of a round: a broken connection or
``ResourceVersionTooLarge`` *suspects* a reset (writes held, probed at once, then every 0.5 s);
a listing, resumed watch or write answer below the watermark *closes* it for good (writes raise
:class:`StateReset`). Only decimal resourceVersions take part (docs/architecture.md,
"Reset probe and write fence").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "RESET_PROBE_INTERVAL",
    "SUSPECT_PROBE_INTERVAL",
    "StateReset",
    "Watermark",
    "WriteFence",
    "is_too_large_resource_version",
    "parse_version",
]

log = logging.getLogger(__name__)

RESET_PROBE_INTERVAL = 10.0
"""Seconds between two probes of the server's current resourceVersion (one ``limit=1`` list)."""
SUSPECT_PROBE_INTERVAL = 0.5
"""Seconds between two probes while a reset is suspected (the server unreachable meanwhile)."""

TOO_LARGE_CAUSE = "ResourceVersionTooLarge"


def parse_version(text: object) -> int | None:
    """A resourceVersion as a number, or ``None`` when it is not a decimal one."""
    if isinstance(text, str) and text.isdecimal():
        return int(text)
    return None


class Watermark:
    """The highest resourceVersion seen from the API server in this run."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def observe(self, version: object) -> None:
        number = parse_version(version)
        if number is not None and number > self.value:
            self.value = number

    def is_behind(self, version: object, seen: int | None = None) -> bool:
        """Whether the server's ``version`` is below what was seen (``seen``, else the mark):
        the server's state was reset."""
        number = parse_version(version)
        reference = self.value if seen is None else seen
        return number is not None and number < reference


def is_too_large_resource_version(status: Mapping[str, Any]) -> bool:
    """A ``Status`` saying the requested resourceVersion is ahead of the server's."""
    details = status.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    if isinstance(causes, list) and any(
        isinstance(c, Mapping) and c.get("reason") == TOO_LARGE_CAUSE for c in causes
    ):
        return True
    message = status.get("message")
    return isinstance(message, str) and "Too large resource version" in message


class StateReset(Exception):
    """A write refused: the state it was computed from predates a reset of the API server."""


class WriteFence:
    """Stands in front of one round's writes (see the module's docstring).

    ``open`` (writes go), ``held`` (a reset is suspected: writes wait for the probe's verdict)
    or ``closed`` (a reset was detected: every write of this round raises :class:`StateReset`).
    ``on_reset`` is called once with the reason when a write's answer proves a reset.
    """

    def __init__(
        self, watermark: Watermark, *, on_reset: Callable[[str], None] | None = None
    ) -> None:
        self.watermark = watermark
        self.on_reset = on_reset
        self.closed: str | None = None
        """Why the fence closed (the reset's reason), or None while it is not."""
        self.suspicion: str | None = None
        """Why writes are held, or None while they are not."""
        self._open = asyncio.Event()
        self._open.set()
        self._wanted = asyncio.Event()
        self.suspicions = 0
        """How many times a reset was suspected (for tests and logs)."""
        self.held_writes = 0
        """Writes that had to wait for a probe's verdict (for tests and logs)."""

    @property
    def suspected(self) -> bool:
        return self.suspicion is not None

    def suspect(self, reason: str) -> None:
        """Hold the writes and ask for a probe now (see ``wait_for_suspicion``)."""
        if self.closed is not None:
            return
        if self.suspicion is None:
            log.debug("holding writes until the server's resourceVersion is known: %s", reason)
            self.suspicion = reason
        self.suspicions += 1
        self._open.clear()
        self._wanted.set()

    def verified(self) -> None:
        """The server is at or above the watermark: the writes may go.

        Also when another suspicion came while the probe was in flight: the answer came from a
        live server after the first one, and a restore takes seconds (the server or etcd away),
        far longer than a probe. Waiting for a probe undisturbed by any new suspicion could
        hold the writes for good while watches keep being cut (a load balancer's habit)."""
        self.suspicion = None
        self._wanted.clear()
        self._open.set()

    def close(self, reason: str) -> None:
        """A reset was detected: no write of this round goes out any more."""
        if self.closed is None:
            self.closed = reason
        self._wanted.clear()
        self._open.set()  # wakes the writes held, which then raise

    async def wait_for_suspicion(self, timeout: float) -> bool:
        """Wait until a probe is wanted (True) or ``timeout`` seconds passed (False)."""
        if self._wanted.is_set():
            return True
        try:
            async with asyncio.timeout(timeout):
                await self._wanted.wait()
        except TimeoutError:
            return False
        return True

    async def admit(self) -> None:
        """Return when a write may go; raise :class:`StateReset` once the fence is closed."""
        if self.closed is None and not self._open.is_set():
            self.held_writes += 1
            await self._open.wait()
        if self.closed is not None:
            raise StateReset(self.closed)

    def written(self, answer: Mapping[str, Any], seen: int, what: str) -> None:
        """Check a create's or replace's answer: its resourceVersion is the new etcd revision,
        above every version served before the request (``seen``: the watermark read before
        it was sent; events of other writes may have raised it since), unless the store went
        back."""
        metadata = answer.get("metadata")
        version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
        if self.watermark.is_behind(version, seen):
            reason = (
                f"{what} was written at resourceVersion {version}, "
                f"below the {seen} already seen before it was sent"
            )
            if self.on_reset is not None:
                self.on_reset(reason)
            self.close(reason)
            raise StateReset(reason)
