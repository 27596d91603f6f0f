"""The reconciler's public face (``__all__``) is what docs/reconciler.md documents."""

from __future__ import annotations

import re
from pathlib import Path

import endpointslice_operator.reconciler as reconciler

DOC = (Path(__file__).parents[2] / "docs" / "reconciler.md").read_text()
_TOKEN = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)[^`]*`")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LEAD = re.compile(r"^- ((?:`[^`]+`(?:\s*(?:/|,|and)\s*)?)+)")


def _api_section() -> str:
    return DOC.split("\n## API\n", 1)[1].split("\n### ", 1)[0]


def _bullet_leads() -> set[str]:
    """The names each bullet of the API section opens with (``- `Name` / `name(...)`: ...``)."""
    names: set[str] = set()
    for line in _api_section().splitlines():
        lead = _LEAD.match(line)
        if lead:
            names.update(_TOKEN.findall(lead.group(1)))
    return names


def _example_imports() -> set[str]:
    names: set[str] = set()
    for found in re.findall(r"from endpointslice_operator\.reconciler import ([\w, ]+)", DOC):
        names.update(name.strip() for name in found.split(","))
    return names


def test_every_documented_name_is_exported() -> None:
    documented = _bullet_leads() | _example_imports()
    assert documented - set(reconciler.__all__) == set()


def test_every_exported_name_is_documented() -> None:
    prose = re.sub(r"```.*?```", "", DOC, flags=re.S)
    mentioned = {name for span in re.findall(r"`([^`]+)`", prose) for name in _NAME.findall(span)}
    assert set(reconciler.__all__) - mentioned == set()


def test_the_trackers_are_part_of_the_face() -> None:
    for name in ("EndpointSliceTracker", "TriggerTimeTracker", "MetricsCache"):
        assert name in reconciler.__all__
        assert getattr(reconciler, name).__name__ == name
