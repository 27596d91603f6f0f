"""Kubernetes ``Status`` errors, raised inside the emulator and rendered as JSON bodies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

REASONS: dict[int, str] = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

CONFLICT_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


@dataclass(frozen=True)
class Cause:
    """One entry of ``Status.details.causes``: a field-level reason, as in field.Error."""

    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueDuplicate, ...
    message: str
    field: str = ""

    def to_json(self) -> JSON:
        body: JSON = {"reason": self.reason, "message": self.message}
        if self.field:
            body["field"] = self.field
        return body


@dataclass
class ApiError(Exception):
    """An API failure that the HTTP layer renders as a ``Status`` with the given code."""

    code: int
    message: str
    reason: str = ""
    details: JSON | None = None
    causes: list[Cause] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    omit_reason: bool = False
    """Send no ``reason`` (the real server's answer to some internal errors has none)."""

    def __post_init__(self) -> None:
        super().__init__(self.message)
        if not self.reason and not self.omit_reason:
            self.reason = REASONS.get(self.code, "Unknown")

    def status(self) -> JSON:
        """The ``Status`` object as kube-apiserver would send it."""
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        }
        if not self.omit_reason:
            body["reason"] = self.reason
        details = dict(self.details or {})
        if self.causes:
            details["causes"] = [cause.to_json() for cause in self.causes]
        if details:
            body["details"] = details
        return body


def _details(kind: str, name: str, group: str) -> JSON:
    details: JSON = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(404, f'{qualified} "{name}" not found', details=_details(resource, name, group))


def already_exists(resource: str, group: str, name: str) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        f'{qualified} "{name}" already exists',
        reason="AlreadyExists",
        details=_details(resource, name, group),
    )


def conflict(resource: str, group: str, name: str, message: str = CONFLICT_MESSAGE) -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {qualified} "{name}": {message}',
        reason="Conflict",
        details=_details(resource, name, group),
    )


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 ``Invalid``: the message joins the causes like field.ErrorList.ToAggregate()."""
    qualified = f"{kind}.{group}" if group else kind
    rendered = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    summary = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return ApiError(
        422,
        f'{qualified} "{name}" is invalid: {summary}',
        details=_details(kind, name, group),
        causes=causes,
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def expired(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")
