from __future__ import annotations

from typing import Any

import pytest

from scripts.render_manifests import render_objects
from tests.ship.values import VALUE_SETS

_CACHE: dict[str, list[dict[str, Any]]] = {}


def rendered(name: str) -> list[dict[str, Any]]:
    """The chart rendered with ``VALUE_SETS[name]`` (rendered once per session)."""
    if name not in _CACHE:
        _CACHE[name] = render_objects(VALUE_SETS[name], name="eso", namespace="operators")
    return _CACHE[name]


@pytest.fixture(params=sorted(VALUE_SETS))
def value_set(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def objects(value_set: str) -> list[dict[str, Any]]:
    return rendered(value_set)
