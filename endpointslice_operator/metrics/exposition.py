"""The Prometheus text format as upstream's Go client writes it (:func:`render_registry`):
counters under exactly the name given (no ``_total`` added), no ``*_created`` series, Go's
number formatting."""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

__all__ = ["CONTENT_TYPE", "render_registry"]


#: Content type of the Prometheus text exposition format produced by :func:`render_registry`.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _escape_label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _format_value(value: float) -> str:
    """A sample value as Go's text encoder writes it (``strconv.FormatFloat(v, 'g', -1, 64)``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    number = Decimal(repr(float(value))).normalize()
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    point = len(digits) + exponent - 1  # decimal exponent of the leading digit
    if -4 <= point < 6:
        return format(number, "f")
    mantissa = "".join(str(d) for d in digits)
    if len(mantissa) > 1:
        mantissa = f"{mantissa[0]}.{mantissa[1:]}"
    sign = "-" if number < 0 else ""
    return f"{sign}{mantissa}e{'+' if point >= 0 else '-'}{abs(point):02d}"


def _label_value(key: str, value: str) -> str:
    # prometheus_client writes bucket bounds Python-style ("2.0"); Go writes them like values.
    if key == "le":
        return _format_value(float(value))
    return str(value)


def _sample_lines(family: Metric) -> Iterator[str]:
    created = f"{family.name}_created"
    for sample in family.samples:
        if sample.name == created:
            continue
        if sample.labels:
            labels = ",".join(
                f'{key}="{_escape_label_value(_label_value(key, val))}"'
                for key, val in sample.labels.items()
            )
            yield f"{sample.name}{{{labels}}} {_format_value(sample.value)}\n"
        else:
            yield f"{sample.name} {_format_value(sample.value)}\n"


def render_registry(registry: CollectorRegistry) -> bytes:
    """Prometheus text format (0.0.4) as the Go client writes it.

    Like Go's ``Gather``: families sorted by name, families without any series left out, names
    verbatim (counters are :class:`ExactCounter` collectors), no ``_created`` series, bucket
    bounds and values formatted as Go formats floats.
    """
    out: list[str] = []
    for family in sorted(registry.collect(), key=lambda f: f.name):
        lines = list(_sample_lines(family))
        if not lines:
            continue
        kind = "untyped" if family.type == "unknown" else family.type
        out.append(f"# HELP {family.name} {_escape_help(family.documentation)}\n")
        out.append(f"# TYPE {family.name} {kind}\n")
        out.extend(lines)
    return "".join(out).encode("utf-8")
