from __future__ import annotations

import functools
from typing import Any

import pytest

from scripts.render_manifests import render_objects
from tests.ship.values import VALUE_SETS


@functools.cache
def rendered(name: str) -> list[dict[str, Any]]:
    """The chart rendered with ``VALUE_SETS[name]``, once per session (treat it as read-only)."""
    return render_objects(VALUE_SETS[name], name="eso", namespace="operators")


@pytest.fixture(params=sorted(VALUE_SETS))
def value_set(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def objects(value_set: str) -> list[dict[str, Any]]:
    return rendered(value_set)
