"""JSON on the per-event path, with ``orjson``: watch lines in (``list_watch``), write bodies
out and write answers in (``writer``). Nothing else uses it; the rest of the operator keeps the
standard library's ``json``.

On this project's payloads ``orjson`` decodes two to three times and encodes ten times faster
(a pod watch line, 10- and 100-endpoint slices), and with the writes on their own connections
(:mod:`.keepalive`) it cut the quick scale benchmark's ``cpu_us_per_event`` by 15-17%
(docs/performance.md). Objects are plain JSON both ways (dicts, lists, str, int, float, bool,
None); decoding failures raise ``orjson.JSONDecodeError``, a ``ValueError``.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["dump_bytes", "load_bytes"]


def dump_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return orjson.dumps(obj)


def load_bytes(raw: bytes) -> Any:
    """Decode UTF-8 JSON (what the API server sends); ``ValueError`` when it is not JSON."""
    return orjson.loads(raw)
