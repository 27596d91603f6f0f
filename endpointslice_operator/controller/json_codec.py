"""JSON on the per-event path: watch lines in, write bodies out, write responses in.

Objects are plain JSON both ways (dicts, lists, str, int, float, bool, None).
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
