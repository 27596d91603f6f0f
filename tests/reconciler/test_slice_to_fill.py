"""``planner._slice_to_fill``: upstream's ``getSliceToFill`` (the cases of its
``TestGetSliceToFill``, ported): which unchanged slice takes the endpoints left over, "closest to
full after taking them"; None when none has the room."""

from __future__ import annotations

import pytest

from endpointslice_operator.reconciler.planner import _slice_to_fill
from endpointslice_operator.reconciler.slices import SliceView


def view(name: str, size: int) -> SliceView:
    """An unchanged slice holding ``size`` endpoints (only their number matters here)."""
    keys = tuple((f"10.0.0.{i}",) for i in range(size))
    return SliceView({}, name, "IPv4", (), None, keys, ())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sizes", "count", "maximum", "expected"),
    [
        pytest.param([], 7, 100, None, id="no slices"),
        pytest.param([95], 5, 100, "s0", id="one slice with exactly the room"),
        pytest.param([96], 5, 100, None, id="one slice without the room"),
        pytest.param([90, 95, 80], 5, 100, "s1", id="the one that ends full"),
        pytest.param([80, 90], 5, 100, "s1", id="the closest to full, not the first"),
        pytest.param([90, 80], 5, 100, "s0", id="the closest to full, first"),
        pytest.param([70, 99, 50], 10, 100, "s0", id="the fullest has no room: the next"),
        pytest.param([99, 98, 97], 10, 100, None, id="none has the room"),
        pytest.param([50, 50], 10, 100, "s0", id="a tie: the first"),
        pytest.param([95, 90, 94], 5, 100, "s0", id="a full fit ends the search"),
        pytest.param([94, 95], 5, 100, "s1", id="one short of full does not end it"),
        pytest.param([1, 2, 3], 1, 5, "s2", id="small slices"),
        pytest.param([0], 0, 100, None, id="nothing to take, an empty slice: never"),
        pytest.param([100], 0, 100, "s0", id="nothing to take, a full slice: it stays full"),
    ],
)
def test_slice_to_fill(sizes: list[int], count: int, maximum: int, expected: str | None) -> None:
    unchanged = [view(f"s{i}", size) for i, size in enumerate(sizes)]
    chosen = _slice_to_fill(unchanged, count, maximum)
    assert (chosen.name if chosen is not None else None) == expected
