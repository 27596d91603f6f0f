"""The building blocks of every metric family: upstream's subsystem and bucket series, the
``[BETA]``/``[ALPHA]`` help prefixes of ``k8s.io/component-base/metrics``, and
:class:`ExactCounter`, a counter exported under exactly its name (prometheus_client would add
``_total``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = [
    "DEFAULT_BUCKETS",
    "ENDPOINTS_PER_SYNC_BUCKETS",
    "SUBSYSTEM",
    "SYNC_DURATION_BUCKETS",
    "WORKQUEUE_DURATION_BUCKETS",
    "ExactCounter",
    "alpha",
    "beta",
    "exponential_buckets",
]


#: Upstream's metrics subsystem.
SUBSYSTEM = "endpoint_slice_controller"


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``prometheus.ExponentialBuckets``: ``count`` upper bounds ``start * factor**i``."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    return tuple(start * factor**i for i in range(count))


#: ``ExponentialBuckets(2, 2, 15)``: 2, 4, ..., 32768.
ENDPOINTS_PER_SYNC_BUCKETS = exponential_buckets(2, 2, 15)
#: Go's ``prometheus.DefBuckets`` (also prometheus_client's default, without +Inf).
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: ``ExponentialBuckets(0.001, 2, 15)``, as upstream's mirroring controller uses for its sync
#: duration: 1 ms .. 16.384 s.
SYNC_DURATION_BUCKETS = exponential_buckets(0.001, 2, 15)
#: client-go's workqueue latency buckets, ``ExponentialBuckets(10e-9, 10, 10)``: 10 ns .. 1 s.
WORKQUEUE_DURATION_BUCKETS = exponential_buckets(10e-9, 10, 10)


def beta(text: str) -> str:
    return f"[BETA] {text}"


def alpha(text: str) -> str:
    return f"[ALPHA] {text}"


class _CounterChild:
    """One labelled series of an :class:`ExactCounter`."""

    __slots__ = ("_key", "_parent")

    def __init__(self, parent: ExactCounter, key: tuple[str, ...]) -> None:
        self._parent = parent
        self._key = key

    def inc(self, amount: float = 1.0) -> None:
        self._parent._inc(self._key, amount)

    def get(self) -> float:
        return self._parent._values.get(self._key, 0.0)


class ExactCounter(Collector):
    """A monotonic counter exported under exactly ``name``: no ``_total`` added, no ``_created``.

    The interface follows prometheus_client's (``labels(...).inc()``, ``inc()`` when unlabelled)
    so call sites read the same. A series appears in the exposition once it has been touched
    (like a Go ``CounterVec``); an unlabelled counter is always present.
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        if not self.labelnames:
            self._values[()] = 0.0
        registry.register(self)

    def labels(self, *values: str, **kwvalues: str) -> _CounterChild:
        if values and kwvalues:
            raise ValueError("pass label values either positionally or by name, not both")
        if kwvalues:
            if set(kwvalues) != set(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}")
            values = tuple(kwvalues[name] for name in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name}: expected labels {self.labelnames}")
        key = tuple(str(v) for v in values)
        self._values.setdefault(key, 0.0)
        return _CounterChild(self, key)

    def inc(self, amount: float = 1.0) -> None:
        if self.labelnames:
            raise ValueError(f"{self.name} is labelled: use labels(...).inc()")
        self._inc((), amount)

    def get(self, *values: str, **kwvalues: str) -> float:
        """Current value of one series (0 when never touched)."""
        if not values and not kwvalues:
            return self._values.get((), 0.0)
        return self.labels(*values, **kwvalues).get()

    def _inc(self, key: tuple[str, ...], amount: float) -> None:
        if amount < 0:
            raise ValueError("counters can only increase")
        self._values[key] = self._values.get(key, 0.0) + amount

    def describe(self) -> Iterable[Metric]:
        return [Metric(self.name, self.documentation, "counter")]

    def collect(self) -> Iterable[Metric]:
        family = Metric(self.name, self.documentation, "counter")
        for key, value in sorted(self._values.items()):
            family.add_sample(self.name, dict(zip(self.labelnames, key, strict=True)), value)
        return [family]
