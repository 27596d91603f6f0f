"""The result of planning one Service: the writes to apply and what to report about them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["PlanEvent"]


@dataclass(frozen=True, slots=True)
class PlanEvent:
    """A Kubernetes Event the caller should record on the Service.

    Mirrors what upstream's reconciler emits through its event recorder.
    """

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
