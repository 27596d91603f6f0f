"""Deterministic fault injection: errors, conflicts, latency, dropped and expired watches."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from endpointslice_operator.testing.errors import ApiError, conflict

DEFAULT_FAULT_VERBS = frozenset({"create", "update", "patch", "delete"})
DEFAULT_FAULT_RESOURCES = frozenset({"endpointslices"})
FAIL_CODES = (500, 503, 429)
WILDCARD = "*"

# Keys of Emulator.faults_injected
INTERNAL_ERROR = "internal_error"  # 500
SERVICE_UNAVAILABLE = "service_unavailable"  # 503
TOO_MANY_REQUESTS = "too_many_requests"  # 429
CONFLICT = "conflict"  # 409
LATENCY = "latency"
WATCH_DROP = "watch_drop"
GONE = "gone"  # 410 on watch resume

_FAIL_KINDS = {500: INTERNAL_ERROR, 503: SERVICE_UNAVAILABLE, 429: TOO_MANY_REQUESTS}
_FAIL_MESSAGES = {
    500: "Internal error occurred: injected fault",
    503: "the server is currently unable to handle the request (injected fault)",
    429: "Too many requests, please try again later (injected fault)",
}


@dataclass
class FaultConfig:
    """What to inject; every field can be changed while the emulator runs.

    Rates are probabilities per targeted request. ``latency`` (seconds) delays targeted
    requests. ``fault_verbs`` and ``fault_resources`` select the targeted requests (verbs as in
    the request log; resources by plural or ``plural.group``; ``"*"`` matches everything).
    ``watch_drop_seconds`` cuts every watch stream that long after it started (the connection
    is aborted, as a load balancer would), and ``gone_rate`` answers a watch that resumes from a
    resourceVersion with a 410 ``Expired`` ERROR event. Failures use the status codes in
    ``fail_codes`` uniformly, with ``Retry-After: retry_after_seconds`` on 429 and 503.
    """

    fail_rate: float = 0.0
    conflict_rate: float = 0.0
    latency: float = 0.0
    fault_verbs: set[str] = field(default_factory=lambda: set(DEFAULT_FAULT_VERBS))
    fault_resources: set[str] = field(default_factory=lambda: set(DEFAULT_FAULT_RESOURCES))
    watch_drop_seconds: float = 0.0
    gone_rate: float = 0.0
    fail_codes: tuple[int, ...] = FAIL_CODES
    retry_after_seconds: int = 1

    def targets(self, verb: str, plural: str, group: str) -> bool:
        verbs_match = verb == WILDCARD or WILDCARD in self.fault_verbs or verb in self.fault_verbs
        qualified = f"{plural}.{group}" if group else plural
        resources_match = (
            WILDCARD in self.fault_resources
            or plural in self.fault_resources
            or qualified in self.fault_resources
        )
        return verbs_match and resources_match


class FaultInjector:
    """Draws from one seeded generator, always the same number of draws per targeted request,
    so a given seed and request sequence always inject the same faults."""

    def __init__(self, config: FaultConfig, seed: int = 0) -> None:
        self.config = config
        self._rng = random.Random(seed)
        self.injected: Counter[str] = Counter()

    def latency_for(self, verb: str, plural: str, group: str) -> float:
        if self.config.latency > 0 and self.config.targets(verb, plural, group):
            self.injected[LATENCY] += 1
            return self.config.latency
        return 0.0

    def failure_for(self, verb: str, plural: str, group: str, name: str) -> ApiError | None:
        config = self.config
        if not config.targets(verb, plural, group):
            return None
        fail_draw, conflict_draw, code_draw = (self._rng.random() for _ in range(3))
        if fail_draw < config.fail_rate and config.fail_codes:
            code = config.fail_codes[int(code_draw * len(config.fail_codes))]
            self.injected[_FAIL_KINDS.get(code, str(code))] += 1
            headers = {}
            if code in (429, 503):
                headers["Retry-After"] = str(config.retry_after_seconds)
            details = {"retryAfterSeconds": config.retry_after_seconds} if headers else None
            return ApiError(
                code, _FAIL_MESSAGES.get(code, "injected fault"), details=details, headers=headers
            )
        if conflict_draw < config.conflict_rate and verb in ("update", "patch", "delete"):
            self.injected[CONFLICT] += 1
            return conflict(plural, group, name)
        return None

    def gone_on_resume(self, plural: str, group: str) -> bool:
        """Whether a watch resuming from a resourceVersion gets a 410 (resource-targeted)."""
        if self.config.gone_rate <= 0 or not self.config.targets(WILDCARD, plural, group):
            return False
        if self._rng.random() < self.config.gone_rate:
            self.injected[GONE] += 1
            return True
        return False

    def record_watch_drop(self) -> None:
        self.injected[WATCH_DROP] += 1
