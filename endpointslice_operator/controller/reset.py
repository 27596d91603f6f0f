"""Noticing an API server whose state was reset (an etcd restore, a rebuilt control plane).

The API server behind the same address can come back with a store that is *behind* what the
operator has seen: resourceVersions restart low, objects the operator indexed are gone,
Services are recreated under the same names with new uids. Nothing in the watch protocol says
so. Measured on kube-apiserver v1.24: a watch resumed at a resourceVersion the server has not
reached is accepted (200) and stays silent until it times out; a list at such a version answers
``504 Timeout`` with cause ``ResourceVersionTooLarge``. Resumed watches would then deliver
nothing (or, once the new store passes the old version, only what comes after it), and the
indexes would keep publishing pods that no longer exist.

client-go's reflector lists again from scratch (a consistent read) when it meets
``ResourceVersionTooLarge``; the operator does that too (see ``list_watch``) and goes further,
because the silent watch never produces that error:

* :class:`Watermark` keeps the highest resourceVersion any watch has delivered. Every
  resourceVersion of one cluster comes from one etcd revision counter, so all kinds share it.
* :func:`probe` asks the server for its current resourceVersion with a ``limit=1`` list (a
  consistent read from etcd, so never behind anything the server served before). A value below
  the watermark read *before* the request is proof of a reset; so is a listing whose
  resourceVersion is below the one its own watch had reached.

On a reset the operator drops every index and starts over as a restart would (see
``operator.py``), with ``/readyz`` false until the new listings are in. resourceVersions are
opaque by the API's contract; only decimal ones (every kube-apiserver's) take part, anything
else is ignored and never counts as a reset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "RESET_PROBE_INTERVAL",
    "Watermark",
    "is_too_large_resource_version",
    "parse_version",
]

RESET_PROBE_INTERVAL = 10.0
"""Seconds between two probes of the server's current resourceVersion (one ``limit=1`` list)."""

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
