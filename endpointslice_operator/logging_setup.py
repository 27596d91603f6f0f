"""Process-wide logging for the operator: readable text or one JSON object per line.

A record's extra fields for people (strings, numbers, booleans) are appended as ``key=value``
or top-level JSON keys; library internals are not printed (Kopf's reference becomes
``object=ns/name``). At ``info``: start-up, leadership, problems and a periodic summary, nothing
per event; Kopf's per-object lines only at ``debug``; kubernetes_asyncio and Kopf's framework at
``info``+, aiohttp's access log at ``warning``+; Kopf's retry lines collapsed
(:class:`~endpointslice_operator.retry_log.CollapseRetries`).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from endpointslice_operator.retry_log import CollapseRetries

__all__ = ["JsonFormatter", "TextFormatter", "configure_logging"]

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}

#: Library loggers and the most verbose level they may log at.
QUIET_LOGGERS = {
    "aiohttp.access": logging.WARNING,
    "kubernetes_asyncio": logging.INFO,
    "kopf": logging.INFO,
}

#: Loggers that log once per object event: shown at ``debug`` only.
PER_EVENT_LOGGERS = ("kopf.objects",)

# Extras that are library internals, not for people (Kopf attaches these to every record).
_HIDDEN_EXTRAS = frozenset({"settings", "k8s_skip", "k8s_ref"})

# Attributes every LogRecord has; anything else on a record came in through ``extra``.
_STANDARD_ATTRIBUTES = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))
) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    ref = getattr(record, "k8s_ref", None)
    if isinstance(ref, dict) and ref.get("name"):
        namespace = ref.get("namespace")
        fields["object"] = f"{namespace}/{ref['name']}" if namespace else str(ref["name"])
    for key, value in vars(record).items():
        if key in _STANDARD_ATTRIBUTES or key in _HIDDEN_EXTRAS or key.startswith("_"):
            continue
        if value is None or isinstance(value, str | int | float | bool):
            fields[key] = value
    return fields


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TextFormatter(logging.Formatter):
    """``2026-01-02T03:04:05.678Z INFO    logger: message key=value ...``"""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {message}"
        extras = _extras(record)
        if extras:
            line += " " + " ".join(f"{key}={_text_value(value)}" for key, value in extras.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


def _text_value(value: object) -> str:
    text = str(value)
    if not text or any(char.isspace() for char in text) or '"' in text:
        return json.dumps(text)
    return text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, extras, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _extras(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class _OperatorHandler(logging.StreamHandler[TextIO]):
    """Marks the handler this module installed, so that reconfiguring replaces it."""


def configure_logging(format: str, level: str, *, stream: TextIO | None = None) -> None:
    """Route all logging to ``stream`` (stderr) in ``format`` (text|json) at ``level``.

    Calling it again replaces the previous configuration (handlers added by others stay).
    """
    if format not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', got {format!r}")
    try:
        threshold = LEVELS[level.lower()]
    except KeyError:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, got {level!r}") from None

    handler = _OperatorHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    handler.addFilter(CollapseRetries())  # Kopf's per-attempt retry lines: one per cause

    root = logging.getLogger()
    for existing in list(root.handlers):
        if isinstance(existing, _OperatorHandler):
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(threshold)
    for name, loudest in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(max(threshold, loudest))
    for name in PER_EVENT_LOGGERS:
        logging.getLogger(name).setLevel(
            logging.INFO if threshold <= logging.DEBUG else max(threshold, logging.WARNING)
        )
    logging.captureWarnings(True)
