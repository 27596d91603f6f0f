"""``reconciler/endpoints.py``: an endpoint without ``targetRef`` is keyed by its addresses
and hostname alone, and its reference fields read as empty."""

from __future__ import annotations

from endpointslice_operator.reconciler.endpoints import endpoint_from_dict, existing_entry


def test_an_endpoint_without_target_ref_has_empty_reference_fields() -> None:
    raw = {
        "addresses": ["10.0.0.2", "10.0.0.1"],
        "conditions": {"ready": True, "serving": True, "terminating": False},
        "nodeName": "node-1",
    }
    endpoint = endpoint_from_dict(raw)
    assert endpoint.key == (("10.0.0.1", "10.0.0.2"), "", "", "")
    assert endpoint.state == ("node-1", None, True, True, False, None, "", "", "", "", "")
    assert existing_entry(raw) == (endpoint.key, endpoint.state)
    assert "targetRef" not in endpoint.to_dict()
