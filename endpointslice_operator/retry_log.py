"""Retries logged once per cause, with a count, instead of once per attempt.

During an API outage per-attempt logging was about 3.5 lines per second. Here a cause is one
WARNING line (``... failed, retrying``), then at most one every ``REPORT_EVERY`` seconds with
the count, and one INFO ``recovered after N attempts`` when it ends; a new cause starts over.
:class:`RetryLog` does it for one retrying thing; :class:`CollapseRetries` is a logging filter
doing it for libraries that log every attempt (Kopf's ``Request attempt #N failed``), lowered
to WARNING.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["REPORT_EVERY", "CollapseRetries", "RetryLog"]

REPORT_EVERY = 60.0
"""Seconds between two lines about the same cause of retries (with the count so far)."""
FORGET_AFTER = 300.0
"""A library retry cause not seen again for this long starts anew (CollapseRetries)."""


def _now() -> float:
    """The event loop's clock when there is one (virtual time in tests), else monotonic."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:
        return time.monotonic()


@dataclass(slots=True)
class _Cause:
    text: str
    attempts: int
    since: float
    reported_at: float


class RetryLog:
    """Logs the retries of one thing (``what``) on ``logger``: one line per cause."""

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        *,
        report_every: float = REPORT_EVERY,
        clock: Callable[[], float] = _now,
    ) -> None:
        self._logger = logger
        self.what = what
        self._report_every = report_every
        self._clock = clock
        self._cause: _Cause | None = None
        self.lines = 0
        """Lines logged (for tests)."""

    @property
    def failing(self) -> bool:
        return self._cause is not None

    def failed(self, why: object, **extra: object) -> None:
        """One more failed attempt, because of ``why`` (an exception or a text)."""
        text = str(why) or type(why).__name__
        now = self._clock()
        cause = self._cause
        if cause is None or cause.text != text:
            self._cause = _Cause(text, 1, now, now)
            self._log(logging.WARNING, "%s failed, retrying: %s", self.what, text, extra)
            return
        cause.attempts += 1
        if now - cause.reported_at >= self._report_every:
            cause.reported_at = now
            self._log(
                logging.WARNING,
                "%s still failing after %d attempts in %.0f s, retrying: %s",
                self.what,
                cause.attempts,
                now - cause.since,
                text,
                extra,
            )

    def succeeded(self, **extra: object) -> None:
        """The thing works again: one line if it had failed more than once."""
        cause, self._cause = self._cause, None
        if cause is not None and cause.attempts > 1:
            self._log(
                logging.INFO,
                "%s recovered after %d failed attempts in %.0f s",
                self.what,
                cause.attempts,
                self._clock() - cause.since,
                extra,
            )

    def _log(self, level: int, message: str, *args: object) -> None:
        *values, extra = args
        assert isinstance(extra, dict)
        self.lines += 1
        self._logger.log(level, message, *values, extra=extra or None)


_LIBRARY_RETRY = re.compile(
    r"^Request attempt #?\d+(?:/\d+)? failed; (?:will retry|escalating): (\S+) (\S+) -> (.*)$",
    re.DOTALL,
)


class CollapseRetries(logging.Filter):
    """A filter for the operator's log handler: library lines that report each retry of a
    request (Kopf's) become one WARNING line per cause, then one line with a count at most
    every ``report_every`` seconds while the cause goes on."""

    def __init__(
        self, *, report_every: float = REPORT_EVERY, clock: Callable[[], float] = _now
    ) -> None:
        super().__init__()
        self._report_every = report_every
        self._clock = clock
        self._causes: dict[tuple[str, str, str], _Cause] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("kopf") or record.levelno < logging.WARNING:
            return True
        match = _LIBRARY_RETRY.match(record.getMessage())
        if match is None:
            return True
        method, url, error = match.groups()
        path = url.partition("?")[0]  # the query (its resourceVersion) changes per attempt
        key = (method, path, error)
        now = self._clock()
        for old in [k for k, c in self._causes.items() if now - c.reported_at > FORGET_AFTER]:
            del self._causes[old]
        cause = self._causes.get(key)
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        record.args = None
        if cause is None:
            self._causes[key] = _Cause(error, 1, now, now)
            record.msg = f"{method} {path} failed, retrying: {error}"
            return True
        cause.attempts += 1
        if now - cause.reported_at < self._report_every:
            return False
        cause.reported_at = now
        record.msg = (
            f"{method} {path} still failing after {cause.attempts} attempts in "
            f"{now - cause.since:.0f} s, retrying: {error}"
        )
        return True
