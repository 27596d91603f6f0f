"""``reconciler/labels.py``: the label and annotation keys on the wire, the labels callback of
a Service, and the trigger-time format (Go's RFC3339Nano)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest

from endpointslice_operator.reconciler import labels


def test_the_keys_are_upstreams() -> None:
    """Label and annotation keys are a contract with kube-proxy, kubectl and upstream's
    controllers: compared with the literal values Kubernetes uses."""
    assert labels.LABEL_SERVICE_NAME == "kubernetes.io/service-name"
    assert labels.LABEL_MANAGED_BY == "endpointslice.kubernetes.io/managed-by"
    assert labels.LABEL_HEADLESS == "service.kubernetes.io/headless"
    assert labels.LABEL_TOPOLOGY_ZONE == "topology.kubernetes.io/zone"
    assert labels.LAST_CHANGE_TRIGGER_TIME == "endpoints.kubernetes.io/last-change-trigger-time"
    assert labels.ANNOTATION_TOPOLOGY_MODE == "service.kubernetes.io/topology-mode"
    assert labels.ANNOTATION_TOPOLOGY_AWARE_HINTS == "service.kubernetes.io/topology-aware-hints"
    assert labels.UPSTREAM_CONTROLLER_NAME == "endpointslice-controller.k8s.io"
    reserved = {
        "kubernetes.io/service-name",
        "endpointslice.kubernetes.io/managed-by",
        "service.kubernetes.io/headless",
    }
    assert reserved == labels.RESERVED_LABEL_KEYS


@pytest.mark.parametrize(
    ("cluster_ip", "is_set"),
    [("10.0.0.1", True), ("None", False), ("", False), (None, False), (7, False)],
)
def test_a_cluster_ip_is_set_unless_empty_none_or_not_a_string(
    cluster_ip: object, is_set: bool
) -> None:
    assert labels.is_service_ip_set({"spec": {"clusterIP": cluster_ip}}) is is_set


def test_the_labels_of_a_service_name_it_and_its_manager() -> None:
    service = {
        "metadata": {"name": "web", "labels": {"app": "web", "kubernetes.io/service-name": "x"}},
        "spec": {"clusterIP": "None"},
    }
    desired, changed = labels.labels_from_service(service)(None, "our-controller")
    assert desired == {
        "app": "web",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "our-controller",
        "service.kubernetes.io/headless": "",
    }
    assert changed is True


@pytest.mark.parametrize("metadata", ["junk", ["web"], None, {"name": 7}, {}])
def test_a_service_without_usable_metadata_gets_an_empty_service_name(metadata: object) -> None:
    """Bad input never crashes: metadata that is not a mapping, or a name that is not a
    string, give the service-name label ``""``."""
    desired, _ = labels.labels_from_service({"metadata": metadata, "spec": {}})(None, "c")
    assert desired["kubernetes.io/service-name"] == ""
    assert desired["service.kubernetes.io/headless"] == ""


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), "2024-01-02T03:04:05Z"),
        (datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), "2024-01-02T03:04:05.12Z"),
        (datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC), "2024-01-02T03:04:05.000001Z"),
        (
            datetime(2024, 1, 2, 5, 4, 5, 500000, tzinfo=timezone(timedelta(hours=2))),
            "2024-01-02T03:04:05.5Z",
        ),
    ],
)
def test_trigger_times_are_rfc3339nano_in_utc_without_trailing_zeros(
    moment: datetime, text: str
) -> None:
    assert labels.format_trigger_time(moment) == text


@pytest.fixture
def local_zone_tokyo() -> Iterator[None]:
    """The process's local time zone set to UTC+9 for one test (then restored)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.usefixtures("local_zone_tokyo")
def test_a_naive_trigger_time_is_utc_whatever_the_local_zone() -> None:
    assert time.localtime(0).tm_hour == 9  # the zone took effect
    moment = datetime(2024, 1, 2, 3, 4, 5)  # naive on purpose
    assert labels.format_trigger_time(moment) == "2024-01-02T03:04:05Z"
