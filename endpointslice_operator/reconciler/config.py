"""Reconciler configuration."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ReconcilerConfig"]

# A Kubernetes label value: at most 63 characters, alphanumerics at both ends, '-', '_' and '.'
# inside. The managed-by value is written as a label, so it must be one (and non-empty).
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class ReconcilerConfig(BaseModel):
    """What the upstream ``NewReconciler`` takes, minus the I/O collaborators.

    ``placeholder`` and ``ownership_enforced`` are the KEP-4770 generic-reconciler options
    (``WithPlaceholder``, ``WithOwnershipEnforced``); both default to upstream's behaviour.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    controller_name: str = Field(description="The managed-by label value of written slices.")
    max_endpoints_per_slice: int = Field(default=100, ge=1, le=1000)
    placeholder: bool = True
    ownership_enforced: bool = True
    topology_hints: bool = True
    prefer_same_traffic_distribution: bool = True

    @field_validator("controller_name")
    @classmethod
    def _label_value(cls, value: str) -> str:
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise ValueError(f"{value!r} is not a valid non-empty label value")
        return value
