"""The log_format / log_level settings applied by configure_logging."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import kopf
import pytest

from endpointslice_operator.logging_setup import configure_logging
from endpointslice_operator.settings import load_settings


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    quiet = {name: logging.getLogger(name).level for name in ("aiohttp.access", "kopf")}
    quiet["kubernetes_asyncio"] = logging.getLogger("kubernetes_asyncio").level
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, level in quiet.items():
        logging.getLogger(name).setLevel(level)
    logging.captureWarnings(False)


def test_json_lines_carry_time_level_logger_message_and_extras() -> None:
    stream = io.StringIO()
    settings = load_settings(["--log-format", "json", "--log-level", "debug"], {})
    configure_logging(settings.log_format, settings.log_level, stream=stream)
    log = logging.getLogger("endpointslice_operator.controller.sync.service")
    log.debug("Synced %s in %d writes", "ns/web", 2, extra={"service": "ns/web", "writes": 2})
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("Failed", extra={"service": "ns/db"})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "debug"
    assert first["logger"] == "endpointslice_operator.controller.sync.service"
    assert first["message"] == "Synced ns/web in 2 writes"
    assert first["service"] == "ns/web"
    assert first["writes"] == 2
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert second["level"] == "error"
    assert "RuntimeError: boom" in second["exception"]


def test_text_lines_append_extras() -> None:
    stream = io.StringIO()
    configure_logging("text", "info", stream=stream)
    log = logging.getLogger("endpointslice_operator.test")
    log.info("hello", extra={"service": "ns/web", "note": "two words"})
    log.debug("hidden at info")
    (line,) = stream.getvalue().splitlines()
    assert line.endswith(
        'INFO    endpointslice_operator.test: hello service=ns/web note="two words"'
    )


def test_kopf_per_object_lines_are_debug_detail_without_its_internals() -> None:
    stream = io.StringIO()
    configure_logging("text", "info", stream=stream)
    kopf_objects = logging.getLogger("kopf.objects")
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False  # Kopf's own Event-posting handler may be attached
    internals = {
        "settings": settings,
        "k8s_skip": False,
        "k8s_ref": {"kind": "Service", "namespace": "demo", "name": "web", "uid": "u"},
    }
    kopf_objects.info("Handler 'index-service' succeeded.", extra=internals)
    assert stream.getvalue() == ""  # per-event: not at info
    kopf_objects.error("Handler 'index-service' failed.", extra=internals)
    (line,) = stream.getvalue().splitlines()
    assert line.endswith("ERROR   kopf.objects: Handler 'index-service' failed. object=demo/web")

    stream = io.StringIO()
    configure_logging("json", "debug", stream=stream)
    kopf_objects.info("Handler 'index-service' succeeded.", extra=internals)
    logging.getLogger("endpointslice_operator.x").info(
        "mixed", extra={"count": 3, "ok": True, "blob": {"a": 1}, "none": None}
    )
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert set(first) == {"time", "level", "logger", "message", "object"}
    assert first["object"] == "demo/web"
    assert {k: second[k] for k in ("count", "ok", "none")} == {"count": 3, "ok": True, "none": None}
    assert "blob" not in second


def test_noisy_libraries_are_held_back_and_reconfiguring_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("text", "debug", stream=first)
    configure_logging("json", "debug", stream=second)
    logging.getLogger("kubernetes_asyncio.rest").debug("request body")
    logging.getLogger("aiohttp.access").info("GET /metrics 200")
    logging.getLogger("kopf.objects").debug("handler details")
    logging.getLogger("kopf.objects").info("kopf info shows")
    logging.getLogger("endpointslice_operator").debug("ours shows")
    assert first.getvalue() == ""
    messages = [json.loads(line)["message"] for line in second.getvalue().splitlines()]
    assert messages == ["kopf info shows", "ours shows"]
    configure_logging("text", "error", stream=second)
    assert logging.getLogger("kopf").level == logging.ERROR


@pytest.mark.parametrize(("fmt", "level"), [("xml", "info"), ("text", "trace")])
def test_invalid_arguments(fmt: str, level: str) -> None:
    with pytest.raises(ValueError):
        configure_logging(fmt, level)
