"""Port of upstream util/trigger_time_tracker_test.go, plus timestamp parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from endpointslice_operator.reconciler.tracking.trigger_time import (
    TriggerTimeTracker,
    parse_time,
    pod_ready_time,
    pod_ready_times,
)

T0 = datetime(2019, 1, 1, tzinfo=UTC)
T1, T2, T3, T4, T5 = (T0 + timedelta(seconds=i) for i in range(1, 6))
NS = "ttNamespace1"
SERVICE = "my-service"


class TriggerTimes:
    """Feeds the tracker the way the controller does: from Service and Pod JSON."""

    def __init__(self) -> None:
        self.tracker = TriggerTimeTracker()

    def compute(self, service: dict[str, object], *pods: dict[str, object]) -> datetime | None:
        metadata = service["metadata"]
        assert isinstance(metadata, dict)
        return self.tracker.compute_trigger_time(
            NS,
            metadata["name"],
            parse_time(metadata.get("creationTimestamp")),
            pod_ready_times(pods),
        )


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def create_service(created: datetime) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"namespace": NS, "name": SERVICE, "creationTimestamp": rfc3339(created)},
    }


def create_pod(name: str, ready_time: datetime) -> dict[str, object]:
    return {
        "metadata": {"namespace": NS, "name": name},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(ready_time)}
            ]
        },
    }


def test_new_service_no_pods() -> None:
    assert TriggerTimes().compute(create_service(T2)) == T2


def test_new_service_existing_pods() -> None:
    tester = TriggerTimes()
    pods = create_pod("pod1", T0), create_pod("pod2", T1), create_pod("pod3", T5)
    # Pods were created before the Service, but the trigger time is its creation time.
    assert tester.compute(create_service(T3), *pods) == T3


def test_pods_added() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    assert tester.compute(service) == T0
    assert tester.compute(service, create_pod("pod1", T2), create_pod("pod2", T1)) == T1


def test_pods_updated() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    pod3 = create_pod("pod3", T3)
    assert tester.compute(service, create_pod("pod1", T1), create_pod("pod2", T2), pod3) == T0
    # pod3 doesn't change.
    assert tester.compute(service, create_pod("pod1", T5), create_pod("pod2", T4), pod3) == T4


def test_pods_updated_no_op() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    pods = create_pod("pod1", T1), create_pod("pod2", T2), create_pod("pod3", T3)
    assert tester.compute(service, *pods) == T0
    # Nothing has changed.
    assert tester.compute(service, *pods) is None


def test_pod_deleted_then_added() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    pod1 = create_pod("pod1", T1)
    assert tester.compute(service, pod1, create_pod("pod2", T2)) == T0
    assert tester.compute(service, pod1) is None
    assert tester.compute(service, pod1, create_pod("pod2", T4)) == T4


def test_service_deleted_then_added() -> None:
    tester = TriggerTimes()
    pods = create_pod("pod1", T1), create_pod("pod2", T2)
    assert tester.compute(create_service(T0), *pods) == T0
    tester.tracker.delete_service(NS, SERVICE)
    assert tester.compute(create_service(T3), *pods) == T3


def test_service_updated_no_pod_change() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    pods = create_pod("pod1", T1), create_pod("pod2", T2)
    assert tester.compute(service, *pods) == T0
    # The Service's ports change: there is no way to date that, so no trigger time.
    service["spec"] = {"selector": {}, "ports": [{"port": 80, "targetPort": 8080}]}
    assert tester.compute(service, *pods) is None


def test_pods_without_ready_condition_are_ignored() -> None:
    tester = TriggerTimes()
    service = create_service(T0)
    assert tester.compute(service) == T0
    not_ready_yet = {"metadata": {"name": "pod1"}, "status": {"conditions": []}}
    assert tester.compute(service, not_ready_yet) is None
    assert tester.compute(service, create_pod("pod1", T3)) == T3


def test_a_pod_without_ready_condition_does_not_hide_the_next_ones() -> None:
    tracker = TriggerTimeTracker()
    assert tracker.compute_trigger_time(NS, SERVICE, T0, {"pod1": T1, "pod2": T1}) == T0
    assert tracker.compute_trigger_time(NS, SERVICE, T0, {"pod1": None, "pod2": T3}) == T3


def test_recreated_service_with_later_creation_time() -> None:
    # A Service deleted and re-created between two syncs (no DeleteService seen).
    tester = TriggerTimes()
    pod = create_pod("pod1", T1)
    assert tester.compute(create_service(T0), pod) == T0
    assert tester.compute(create_service(T4), pod) == T4


def test_service_without_creation_timestamp() -> None:
    tracker = TriggerTimeTracker()
    assert tracker.compute_trigger_time(NS, SERVICE, None, {}) is None
    assert tracker.compute_trigger_time(NS, SERVICE, None, {"pod1": T1}) == T1
    assert len(tracker) == 1
    tracker.delete_service(NS, SERVICE)
    assert len(tracker) == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2019-01-01T00:00:00Z", T0),
        ("2019-01-01T00:00:01z", T1),
        ("2019-01-01T00:00:00.5Z", T0 + timedelta(microseconds=500_000)),
        ("2019-01-01T00:00:00.123456789Z", T0 + timedelta(microseconds=123_456)),
        ("2019-01-01T01:00:00+01:00", T0),
        ("2018-12-31T23:00:00-01:00", T0),
        ("2019-01-01 00:00:00Z", T0),
        ("2018-12-31T23:59:60Z", datetime(2018, 12, 31, 23, 59, 59, tzinfo=UTC)),
        (datetime(2019, 1, 1), T0),
        (datetime(2019, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))), T0),
        (None, None),
        ("", None),
        ("yesterday", None),
        ("2019-01-01", None),
        ("2019-01-01T00:00:00", None),
        ("2019-13-01T00:00:00Z", None),
        ("2019-02-30T00:00:00Z", None),
        ("2019-01-01T25:00:00Z", None),
        ("2019-01-01T00:00:00+24:00", None),
        ("2019-01-01T00:00:00-24:00", None),
        ("2019-01-01T00:00:00+23:60", None),
        ("2019-01-01T00:00:00+99:99", None),
        ("2019-01-01T23:59:00+23:59", datetime(2019, 1, 1, 0, 0, tzinfo=UTC)),
        ("0000-01-01T00:00:00Z", None),
    ],
)
def test_parse_time(value: str | datetime | None, expected: datetime | None) -> None:
    parsed = parse_time(value)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "pod",
    [
        {},
        {"status": None},
        {"status": {"conditions": None}},
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"status": {"conditions": [{"type": "Ready", "lastTransitionTime": 5}]}},
        {"status": {"conditions": ["Ready"]}},
    ],
)
def test_pod_ready_time_tolerates_incomplete_pods(pod: dict[str, object]) -> None:
    assert pod_ready_time(pod) is None


def test_pod_ready_times_skips_nameless_pods() -> None:
    pods: list[dict[str, object]] = [create_pod("pod1", T1), {"metadata": {}}, {"status": {}}]
    assert pod_ready_times(pods) == {"pod1": T1}
