"""Query parameters decoded as kube-apiserver decodes them into ``ListOptions``/``DeleteOptions``.

The real server converts each integer parameter with Go's ``strconv.ParseInt(s, 10, 64)``: an
optional sign and decimal digits, nothing else (``"300.0"``, ``" 1"`` and ``"1e3"`` are refused
with ``400 BadRequest`` and the parser's own message). The emulator once accepted fractional
values, which let a client that sent ``timeoutSeconds=300.0`` pass every test and then fail on
the first real server; these helpers keep that class of difference out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from endpointslice_operator.testing.errors import bad_request

__all__ = ["int_param", "parse_go_int"]

_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_go_int(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``, raising the real server's 400 on failure."""
    if not _GO_INT.fullmatch(text):
        raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise bad_request(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def int_param(query: Mapping[str, str], name: str) -> int | None:
    """The integer parameter ``name``, ``None`` when absent or empty (as the real server)."""
    text = query.get(name)
    if not text:
        return None
    return parse_go_int(text)
