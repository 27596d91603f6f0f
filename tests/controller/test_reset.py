"""resourceVersion bookkeeping behind the reset detection (controller/reset.py)."""

from __future__ import annotations

from endpointslice_operator.controller.reset import (
    Watermark,
    is_too_large_resource_version,
    parse_version,
)

# As kube-apiserver v1.24 answers a list at a resourceVersion it has not reached.
TOO_LARGE = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "message": "Timeout: Too large resource version: 99999999, current: 738",
    "reason": "Timeout",
    "details": {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    },
    "code": 504,
}


def test_only_decimal_versions_count() -> None:
    assert parse_version("123") == 123
    assert parse_version("") is None
    assert parse_version("12a") is None
    assert parse_version("-1") is None
    assert parse_version(None) is None


def test_the_watermark_keeps_the_highest_version() -> None:
    mark = Watermark()
    for version in ("5", "9", "7", "opaque", None):
        mark.observe(version)
    assert mark.value == 9


def test_a_server_behind_the_watermark_was_reset() -> None:
    mark = Watermark()
    mark.observe("500")
    assert mark.is_behind("12")
    assert not mark.is_behind("500")
    assert not mark.is_behind("900")
    assert not mark.is_behind("not-a-number")
    # Compared with the mark as read before the request, not as it is after it.
    assert mark.is_behind("400", 450)
    assert not mark.is_behind("400", 300)


def test_too_large_resource_version_is_recognised_by_cause_or_message() -> None:
    assert is_too_large_resource_version(TOO_LARGE)
    assert is_too_large_resource_version({"message": TOO_LARGE["message"], "code": 504})
    assert not is_too_large_resource_version({"reason": "Expired", "code": 410})
    assert not is_too_large_resource_version({"reason": "Timeout", "code": 504})
