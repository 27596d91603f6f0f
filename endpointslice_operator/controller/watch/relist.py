"""Objects deleted while nobody watched: one re-listing check for every kind the operator holds.

After a 410 the new listing arrives as events of type ``None`` and an object deleted meanwhile
simply gets no ``DELETED``. :class:`Relisting` (one per kind) marks every object a re-listing
delivers; once no listing event came for :data:`RELIST_QUIET_PERIOD` seconds it GETs each held
object not delivered and forgets it (through ``forget``, if still held under the same UID) only
on proof it is gone: a 404 or another UID. Any other failure keeps it. A listing event for an
object already delivered means a newer listing began, so only the newer one counts. For Kopf's
kinds, whose empty listings show no event, :meth:`Relisting.keep_counting` compares a
``limit=1`` count per scope every :data:`COUNT_INTERVAL` seconds and re-lists when the server
holds fewer. A spurious re-listing costs reads only, never data.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence

from kubernetes_asyncio.client import ApiClient

from endpointslice_operator.controller.api.client import DEFAULT_API_TIMEOUT
from endpointslice_operator.controller.api.direct_requests import path_segment
from endpointslice_operator.controller.api.errors import get_unless_missing, raise_for_status

__all__ = ["COUNT_INTERVAL", "RELIST_QUIET_PERIOD", "Key", "Relisting", "object_path"]

log = logging.getLogger(__name__)

Key = tuple[str, str]
"""``(namespace, name)``; the namespace is empty for a cluster-scoped object."""

RELIST_QUIET_PERIOD = 2.0
"""A re-listing counts as complete once no listing event of its kind has come for this long."""
COUNT_INTERVAL = 60.0
"""Seconds between two comparisons of what the caller holds with the API server's count."""


def object_path(api: str, plural: str, key: Key) -> str:
    """The path of one object: ``api`` is ``/api/v1`` or ``/apis/<group>/<version>``."""
    namespace, name = key
    scope = f"/namespaces/{path_segment(namespace)}" if namespace else ""
    return f"{api}{scope}/{plural}/{path_segment(name)}"


class Relisting:
    """Re-listings of one kind (``plural`` under ``api``), and the check of what they left out.

    ``held()`` gives the keys the caller holds; ``uid_of(key)`` the UID it holds under a key
    (``""`` when unknown, None when no longer held); ``forget(key)`` handles a held object
    confirmed gone as its ``DELETED`` event would.
    """

    def __init__(
        self,
        api_client: ApiClient,
        api: str,
        plural: str,
        *,
        held: Callable[[], Iterable[Key]],
        uid_of: Callable[[Key], str | None],
        forget: Callable[[Key], None],
        quiet: float = RELIST_QUIET_PERIOD,
    ) -> None:
        self.api_client = api_client
        self.api = api
        self.plural = plural
        self.held = held
        self.uid_of = uid_of
        self.forget = forget
        self.quiet = quiet
        self.timeout = float(getattr(api_client, "api_timeout", DEFAULT_API_TIMEOUT))
        self.checked = 0
        """Objects asked for, over every re-listing."""
        self.forgotten = 0
        """Objects forgotten as gone, over every re-listing."""
        self._listed: dict[Key, object] | None = None
        """Per object, the token of the listing that last delivered it (or of the listing
        current when another event did); None while no re-listing runs."""
        self._generation = object()
        """The token of the latest listing."""
        self._last = 0.0
        self._tasks: set[asyncio.Task[None]] = set()
        self._begun: set[str | None] = set()
        """The scopes whose listing :meth:`begin` was told of, in the latest listing."""

    @property
    def running(self) -> bool:
        """Whether a re-listing is in progress (not yet quiet)."""
        return self._listed is not None

    def note(self, event_type: str | None, key: Key) -> None:
        """An event of this kind: a listing event (type None) starts a re-listing, or a newer
        listing within one; while one runs, every event's object counts as delivered."""
        if event_type is None:
            if self._listed is None:
                self._start()
            elif self._listed.get(key) is self._generation:
                self._newer_listing()
            self._last = asyncio.get_running_loop().time()
        if self._listed is not None:
            self._listed[key] = self._generation

    def begin(self, scope: str | None = None) -> None:
        """A listing of ``scope`` (a namespace, None for all) began, or objects may be
        missing: a re-listing with nothing delivered yet. Within one in progress, a second
        beginning of the same scope is a newer listing; the listings of other scopes (one
        per watched namespace, often expired together) run alongside."""
        if self._listed is None:
            self._start()
        elif scope in self._begun:
            self._newer_listing()
        self._begun.add(scope)
        self._last = asyncio.get_running_loop().time()

    def _start(self) -> None:
        self._listed = {}
        self._begun.clear()
        log.info("%s are listed again; will check what the listing leaves out", self.plural)
        task = asyncio.create_task(self._finish(), name=f"relist-{self.plural}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _newer_listing(self) -> None:
        self._generation = object()
        self._begun.clear()

    async def _finish(self) -> None:
        loop = asyncio.get_running_loop()
        while (wait := self._last + self.quiet - loop.time()) > 0:
            await asyncio.sleep(wait)
        listed, generation = self._listed or {}, self._generation
        self._listed = None
        suspects: list[tuple[Key, str]] = []
        for key in self.held():
            uid = self.uid_of(key)
            if uid is not None and listed.get(key) is not generation:
                suspects.append((key, uid))
        gone = 0
        for key, uid in sorted(suspects):
            self.checked += 1
            if await self._gone(key, uid) and self.uid_of(key) == uid:
                self.forget(key)
                gone += 1
        self.forgotten += gone
        log.info(
            "re-list of %s: %d object(s) not listed, %d confirmed gone",
            self.plural,
            len(suspects),
            gone,
        )

    async def _gone(self, key: Key, uid: str) -> bool:
        """Whether the API server no longer has the object held under ``key`` with ``uid``."""
        try:
            async with asyncio.timeout(self.timeout):
                found = await get_unless_missing(
                    self.api_client, object_path(self.api, self.plural, key)
                )
        except Exception as exc:  # keep it: a later event or re-listing will tell
            log.info("could not check %s %s/%s: %s", self.plural, *key, exc)
            return False
        if found is None:
            return True
        metadata = found.get("metadata")
        answered = str(metadata.get("uid") or "") if isinstance(metadata, dict) else ""
        return bool(uid and answered and answered != uid)

    async def count(self, scope: str | None) -> int | None:
        """How many objects of the kind the API server holds in ``scope`` (a namespace, None
        for all) now; None when it does not say."""
        path = f"{self.api}/namespaces/{path_segment(scope)}" if scope else self.api
        async with asyncio.timeout(self.timeout):
            response = await self.api_client.call_api(
                f"{path}/{self.plural}",
                "GET",
                query_params=[("limit", "1")],
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
            body = await raise_for_status(response)
        items = body.get("items") or []
        metadata = body.get("metadata") or {}
        if not metadata.get("continue"):
            return len(items)
        remaining = metadata.get("remainingItemCount")
        return len(items) + remaining if isinstance(remaining, int) else None

    async def missing_any(self, scopes: Sequence[str] = ()) -> bool:
        """Whether some watched scope (``scopes``, or the whole cluster) holds fewer objects
        than the caller holds there, so that at least one held object is gone. API errors
        are raised."""
        held = list(self.held())
        every: list[str | None] = list(scopes) or [None]
        for scope in every:
            in_scope = sum(1 for namespace, _ in held if scope is None or namespace == scope)
            if not in_scope:
                continue
            count = await self.count(scope)
            if count is not None and count < in_scope:
                return True
        return False

    async def keep_counting(
        self, scopes: Sequence[str] = (), *, interval: float = COUNT_INTERVAL
    ) -> None:
        """Every ``interval`` seconds, :meth:`missing_any`; when something is, :meth:`begin`
        (see the module's doc). Until cancelled; a failed round is logged and tried again at
        the next."""
        while True:
            await asyncio.sleep(interval)
            try:
                missing = await self.missing_any(scopes)
            except Exception as exc:
                log.info("could not count %s on the API server: %s", self.plural, exc)
                continue
            if missing:
                log.info("fewer %s on the API server than held: checking each", self.plural)
                self.begin()

    def cancel(self) -> None:
        """Stop every check in progress (the caller's watches end)."""
        for task in list(self._tasks):
            task.cancel()
