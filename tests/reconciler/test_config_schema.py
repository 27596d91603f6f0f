"""``reconciler/config.py``: what the configuration's JSON schema says of its fields."""

from __future__ import annotations

from endpointslice_operator.reconciler import ReconcilerConfig


def test_the_schema_describes_the_controller_name_and_bounds_the_slice_size() -> None:
    properties = ReconcilerConfig.model_json_schema()["properties"]
    assert properties["controller_name"]["description"] == (
        "The managed-by label value of written slices."
    )
    size = properties["max_endpoints_per_slice"]
    assert (size["default"], size["minimum"], size["maximum"]) == (100, 1, 1000)
