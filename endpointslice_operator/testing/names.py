"""Name and label checks as apimachinery's ``validation`` package makes them (DNS-1123 labels
and subdomains, DNS-1035 labels, qualified names, label values), with its messages; the
``*_messages`` forms are the cached tuples the ``*_errors`` lists are made of. Used by
:mod:`.validation` (object metadata, per-kind rules) and :mod:`.selectors` (label selectors).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = [
    "CACHE_SIZE",
    "DNS1123_LABEL_MAX",
    "DNS1123_SUBDOMAIN_MAX",
    "LABEL_VALUE_MAX",
    "NAME_RULES",
    "QUALIFIED_NAME_MAX",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "dns1123_subdomain_messages",
    "label_key_errors",
    "label_value_errors",
    "label_value_messages",
    "max_len",
    "qualified_name_errors",
    "qualified_name_messages",
]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63
CACHE_SIZE = 65536  # names and label values repeat a lot; their checks are pure

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"

_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_QUALIFIED_RE = re.compile(f"^{_QUALIFIED_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")


def max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label_errors(value: str) -> list[str]:
    return list(_dns1123_label_errors(value))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _dns1123_label_errors(value: str) -> tuple[str, ...]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_len(DNS1123_LABEL_MAX))
    if not _LABEL_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
            f"'123-abc', regex used for validation is '{_LABEL_FMT}')"
        )
    return tuple(errors)


def dns1123_subdomain_errors(value: str) -> list[str]:
    return list(dns1123_subdomain_messages(value))


@functools.lru_cache(maxsize=CACHE_SIZE)
def dns1123_subdomain_messages(value: str) -> tuple[str, ...]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(max_len(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.match(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            f"'example.com', regex used for validation is '{_SUBDOMAIN_FMT}')"
        )
    return tuple(errors)


def dns1035_label_errors(value: str) -> list[str]:
    return list(_dns1035_label_errors(value))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _dns1035_label_errors(value: str) -> tuple[str, ...]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(max_len(DNS1123_LABEL_MAX))
    if not _DNS1035_RE.match(value):
        errors.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character (e.g. "
            f"'my-name',  or 'abc-123', regex used for validation is '{_DNS1035_FMT}')"
        )
    return tuple(errors)


NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    "subdomain": dns1123_subdomain_errors,
    "label": dns1123_label_errors,
    "dns1035": dns1035_label_errors,
    "any": lambda name: [],  # core/v1 Events: v1.36 checks neither name nor generateName
}


def qualified_name_errors(value: str) -> list[str]:
    return list(qualified_name_messages(value))


@functools.lru_cache(maxsize=CACHE_SIZE)
def qualified_name_messages(value: str) -> tuple[str, ...]:
    """IsQualifiedName: an optional DNS-subdomain prefix, a slash, and a name part."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + msg for msg in dns1123_subdomain_messages(prefix))
    else:
        return (
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            f"'123-abc', regex used for validation is '{_QUALIFIED_FMT}') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_len(QUALIFIED_NAME_MAX))
    if name and not _QUALIFIED_RE.match(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            f"'123-abc', regex used for validation is '{_QUALIFIED_FMT}')"
        )
    return tuple(errors)


def label_key_errors(key: str) -> list[str]:
    return qualified_name_errors(key)


def label_value_errors(value: str) -> list[str]:
    return list(label_value_messages(value))


@functools.lru_cache(maxsize=CACHE_SIZE)
def label_value_messages(value: str) -> tuple[str, ...]:
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(max_len(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
            f"or 'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"
        )
    return tuple(errors)
