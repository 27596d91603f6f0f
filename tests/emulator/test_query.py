"""Integer query parameters are parsed as the real kube-apiserver parses them (Go ParseInt).

Recorded from kube-apiserver v1.24: ``timeoutSeconds=300.0`` on a watch is refused with
``400 BadRequest`` and the message ``strconv.ParseInt: parsing "300.0": invalid syntax``; Kopf
once sent exactly that, and the emulator accepted it.
"""

from __future__ import annotations

import pytest

from tests.emulator.conftest import SLICES, Client

PODS = "/api/v1/namespaces/default/pods"


@pytest.mark.parametrize(
    ("params", "bad"),
    [
        ({"watch": "true", "timeoutSeconds": "300.0"}, "300.0"),
        ({"watch": "true", "timeoutSeconds": " 1"}, " 1"),
        ({"watch": "true", "timeoutSeconds": "1e3"}, "1e3"),
        ({"limit": "2.0"}, "2.0"),
        ({"limit": "abc"}, "abc"),
    ],
)
async def test_non_integer_values_are_refused_with_the_parsers_message(
    client: Client, params: dict[str, str], bad: str
) -> None:
    status, body = await client.get(SLICES, **params)
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert body["message"] == f'strconv.ParseInt: parsing "{bad}": invalid syntax'


async def test_out_of_range_integers_are_refused(client: Client) -> None:
    status, body = await client.get(SLICES, limit="9223372036854775808")
    assert status == 400
    assert body["message"].endswith("value out of range")


async def test_signed_and_negative_integers_parse(client: Client) -> None:
    # The real server lists everything for a negative limit.
    status, body = await client.get(SLICES, limit="-5")
    assert status == 200
    assert "continue" not in body["metadata"]
    status, _ = await client.get(SLICES, limit="+1")
    assert status == 200


async def test_fractional_grace_period_on_delete_is_refused(client: Client) -> None:
    status, body = await client.delete(f"{PODS}/missing", gracePeriodSeconds="1.5")
    assert status == 400
    assert body["message"] == 'strconv.ParseInt: parsing "1.5": invalid syntax'
