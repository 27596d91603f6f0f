"""IP parsing as upstream does it: sloppy, canonicalising, family-aware.

Go's ``netutils.ParseIPSloppy`` accepts IPv4 octets with leading zeros (read as decimal) and
``net.IP.String()`` prints the canonical form; an IPv4-mapped IPv6 address is an IPv4 address.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

__all__ = ["canonical_ip"]


def _sloppy_ipv4(text: str) -> str | None:
    parts = text.split(".")
    if len(parts) != 4:
        return None
    octets: list[str] = []
    for part in parts:
        if not part or not part.isascii() or not part.isdigit():
            return None
        value = int(part)
        if value > 255:
            return None
        octets.append(str(value))
    return ".".join(octets)


@lru_cache(maxsize=1 << 16)
def canonical_ip(text: str) -> tuple[str, bool] | None:
    """``(canonical text, is_ipv6)`` for an IP string, or ``None`` if it is not an IP.

    Deliberate difference: upstream turns an unparsable address into the string ``<nil>`` and
    files it under IPv4; API validation makes that impossible for real pods, and we skip it.
    """
    if ":" not in text:
        v4 = _sloppy_ipv4(text)
        return None if v4 is None else (v4, False)
    if "%" in text:  # Go's ParseIP rejects zoned addresses.
        return None
    head, sep, tail = text.rpartition(":")
    if "." in tail:  # an embedded IPv4 tail may carry leading zeros too
        v4 = _sloppy_ipv4(tail)
        if v4 is None:
            return None
        text = head + sep + v4
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    if mapped is not None:
        return str(mapped), False
    return address.compressed, True
