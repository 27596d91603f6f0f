"""JSON on the per-event path: watch lines in, write bodies out, write responses in.

Objects are plain JSON both ways (dicts, lists, str, int, float, bool, None). The standard
library's ``json``: ``orjson`` is two to twelve times faster on these payloads (a pod watch line,
10- and 100-endpoint slices), but JSON is a small share of an event's CPU, and swapping it in here
cut the quick scale benchmark's ``cpu_us_per_event`` by 6-10%, short of the 15% that would
justify a new dependency (docs/performance.md).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dump_bytes", "load_bytes"]

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dump_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return _encode(obj).encode()


def load_bytes(raw: bytes) -> Any:
    """Decode UTF-8 JSON (what the API server sends); ``ValueError`` when it is not JSON."""
    return json.loads(raw.decode())
