"""A list-watch started by its first user and kept from then on.

Two watches of the operator cost every install something only some use: ResourceClaims
(:mod:`..watch.claim_watch`, for device networks) and core/v1 Endpoints (for the Endpoints the
operator writes, and for mirroring). Each index of theirs carries an :class:`OnDemand` state: the
first sync that needs the watch calls :meth:`OnDemand.want`, which starts it; until every watched
scope has been listed once, those syncs write nothing (they have not seen the objects they would
write over) and are noted; the end of the first listing (:meth:`OnDemand.scope_listed`) hands them
back to be queued again. Once started the watch stays for the round.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["OnDemand"]


class OnDemand:
    """Whether a list-watch is wanted, started, and listed; the Services waiting for it."""

    def __init__(self) -> None:
        self.wanted = False
        """Something needs the watch: it was started (or is about to be)."""
        self.synced = False
        """Every scope has been listed once."""
        self.start: Callable[[], None] | None = None
        """Starts the watch; called once, by the first :meth:`want`."""
        self._listed: set[str | None] = set()
        self._waiting: set[str] = set()

    def want(self, key: str | None = None) -> bool:
        """Ask for the watch (the first call starts it); True once its first listing is in.
        ``key``: a Service to queue again when that happens, if it is not in yet."""
        if not self.wanted:
            self.wanted = True
            if self.start is not None:
                self.start()
        if not self.synced and key is not None:
            self._waiting.add(key)
        return self.synced

    def scope_listed(self, scope: str | None, scopes: int) -> list[str] | None:
        """A listing of ``scope`` (a namespace, None for the whole cluster) is in, out of
        ``scopes`` scopes; returns the waiting Services when this makes the watch synced (at
        most once), else None."""
        if self.synced:
            return None
        self._listed.add(scope)
        if len(self._listed) < scopes:
            return None
        self.synced = True
        waiting = sorted(self._waiting)
        self._waiting.clear()
        return waiting
