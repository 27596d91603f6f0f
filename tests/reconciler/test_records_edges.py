"""PodRecord on the edges: entries skipped before others, junk types, the Ready condition,
what a previous record may lend, the record cache and pods without a uid."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from endpointslice_operator.reconciler.records import PodRecordCache, pod_record


def pod(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {
            "namespace": "ns",
            "name": "p",
            "uid": "u-1",
            "resourceVersion": "7",
            "labels": {"app": "a"},
        },
        "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80}]}]},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    for key, value in overrides.items():
        body[key] = {**body[key], **value}
    return body


def test_identity_fields_are_read_as_given() -> None:
    record = pod_record(pod())
    assert (record.namespace, record.name, record.uid, record.resource_version) == (
        "ns",
        "p",
        "u-1",
        "7",
    )
    assert (record.phase, record.pod_ip) == ("Running", "10.0.0.1")


def test_pod_ip_is_kept_as_given_even_when_pod_ips_disagree() -> None:
    record = pod_record(pod(status={"podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}))
    assert (record.pod_ip, record.pod_ips) == ("10.0.0.9", ("10.0.0.1",))


def test_labels_that_are_not_a_mapping_read_as_none() -> None:
    record = pod_record(pod(metadata={"labels": ["app", "a"]}))
    assert dict(record.labels) == {}
    viewed = pod_record(pod(metadata={"labels": MappingProxyType({"app": "a"})}))
    assert dict(viewed.labels) == {"app": "a"}


def test_container_ports_skipped_do_not_stop_the_ones_after_them() -> None:
    record = pod_record(
        pod(
            spec={
                "containers": [
                    "junk",
                    {"name": "no-ports"},
                    {
                        "name": "c",
                        "ports": [
                            "junk",
                            {"name": "bool", "containerPort": True},
                            {"name": "text", "containerPort": "81"},
                            {"name": "http", "containerPort": 80},
                        ],
                    },
                ],
                "initContainers": [
                    {"name": "init", "ports": [{"name": "i", "containerPort": 82}]},
                    {
                        "name": "side",
                        "restartPolicy": "Always",
                        "ports": [{"name": "s", "containerPort": 83}],
                    },
                ],
            }
        )
    )
    assert record.container_ports == (("http", "TCP", 80),)
    assert record.sidecar_ports == (("s", "TCP", 83),)
    assert record.errors == (
        "container 'c': bad containerPort True",
        "container 'c': bad containerPort '81'",
    )


def test_a_bad_pod_ips_entry_does_not_stop_the_ones_after_it() -> None:
    record = pod_record(pod(status={"podIPs": ["junk", {"ip": 7}, {"ip": "10.0.0.1"}]}))
    assert record.pod_ips == ("10.0.0.1",)
    assert len(record.errors) == 2


def test_readiness_comes_from_the_first_ready_condition_only() -> None:
    assert pod_record(pod(status={"conditions": []})).ready is False
    assert pod_record(pod(status={"conditions": ["junk", {"type": "Other"}]})).ready is False
    twice = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-02T00:00:00Z"},
    ]
    record = pod_record(pod(status={"conditions": twice}))
    assert (record.ready, record.ready_transition) == (True, "2026-01-01T00:00:00Z")


def test_a_previous_record_lends_only_what_is_equal() -> None:
    # A caller may pass the record of another pod (fixtures reusing a uid): nothing of it
    # but equal values may come into the new record.
    other = pod_record(pod(metadata={"name": "q", "uid": "u-2"}))
    record = pod_record(pod(), other)
    assert (record.name, record.uid) == ("p", "u-1")


def test_pods_without_a_uid_are_not_cached() -> None:
    cache = PodRecordCache()
    first = pod(metadata={"uid": ""})
    assert cache.record(first).name == "p"
    assert cache.record(pod(metadata={"uid": None})).name == "p"
    assert len(cache) == 0
    cache.record(pod())
    assert len(cache) == 1


def test_labels_with_an_unhashable_value_are_read_without_it() -> None:
    record = pod_record(pod(metadata={"labels": {"app": "a", "bad": ["x"]}}))
    assert dict(record.labels) == {"app": "a"}
