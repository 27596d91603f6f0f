"""``PodRecord`` fields of pods that declare nothing or report junk (empty strings, empty
port tuples, invalid addresses kept among the addresses as given), a pod being deleted,
and the objects a record shares: with the previous record of the pod, between its pod IP
and its first address, between pods with the same labels in another order, the bound of the
sharing tables, and the record cache reading a pod again at a new resourceVersion."""

from __future__ import annotations

from typing import Any

from endpointslice_operator.reconciler.records import PodRecordCache, _shared, pod_record


def _pod(spec: dict[str, Any], pod_ips: list[Any]) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "p", "uid": "u-1", "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": "Running", "podIPs": pod_ips},
    }


def test_containers_without_ports_give_empty_port_tuples() -> None:
    spec = {
        "containers": [{"name": "c"}, {"name": "d", "ports": []}],
        "initContainers": [{"name": "s", "restartPolicy": "Always"}],
    }
    record = pod_record(_pod(spec, [{"ip": "10.0.0.1"}]))
    assert record.container_ports == () and type(record.container_ports) is tuple
    assert record.sidecar_ports == () and type(record.sidecar_ports) is tuple
    without = pod_record(_pod({}, [{"ip": "10.0.0.1"}]))
    assert without.container_ports == () and type(without.container_ports) is tuple


def test_a_port_without_name_or_protocol_is_unnamed_tcp() -> None:
    spec = {"containers": [{"name": "c", "ports": [{"containerPort": 8080}]}]}
    assert pod_record(_pod(spec, [])).container_ports == (("", "TCP", 8080),)


def test_an_invalid_address_stays_among_the_addresses_as_given() -> None:
    record = pod_record(_pod({}, [{"ip": "junk"}, {"ip": "10.0.0.1"}]))
    assert record.pod_ips == ("junk", "10.0.0.1")
    assert (record.ipv4, record.ipv6) == (("10.0.0.1",), ())
    assert record.errors == ("invalid pod IP 'junk'",)
    # The same addresses again: the invalid one is reported again, not lent unnoticed.
    again = pod_record(_pod({}, [{"ip": "junk"}, {"ip": "10.0.0.1"}]), record)
    assert again.errors == record.errors and again.pod_ips == record.pod_ips


def test_fields_that_are_not_strings_read_as_empty_strings() -> None:
    body = {
        "metadata": {"namespace": 1, "name": 2, "uid": 3, "resourceVersion": 4},
        "spec": {"nodeName": 5, "hostname": 6, "subdomain": 7},
        "status": {"phase": 8, "podIP": 9},
    }
    record = pod_record(body)
    assert (record.namespace, record.name, record.uid, record.resource_version) == (
        "",
        "",
        "",
        "",
    )
    assert (record.phase, record.pod_ip) == ("", "")
    assert (record.node_name, record.hostname, record.subdomain) == ("", "", "")
    assert record.terminating is False


def test_a_pod_with_a_deletion_timestamp_is_terminating() -> None:
    body = _pod({}, [{"ip": "10.0.0.1"}])
    body["metadata"]["deletionTimestamp"] = "2026-11-28T12:00:00Z"
    assert pod_record(body).terminating is True


def _fresh(text: str) -> str:
    """An equal string that is another object (as each decoded JSON value is)."""
    return "".join(list(text))


def test_a_new_version_of_a_pod_keeps_the_previous_records_name_and_uid_objects() -> None:
    previous = pod_record(_pod({}, [{"ip": "10.0.0.1"}]))
    body = _pod({}, [{"ip": "10.0.0.1"}])
    body["metadata"].update(name=_fresh("p"), uid=_fresh("u-1"), resourceVersion="2")
    assert body["metadata"]["name"] is not previous.name
    record = pod_record(body, previous)
    assert record.name is previous.name and record.uid is previous.uid
    assert record.resource_version == "2"


def test_the_pod_ip_is_the_first_address_object() -> None:
    body = _pod({}, [{"ip": _fresh("10.0.0.7")}])
    body["status"]["podIP"] = _fresh("10.0.0.7")
    record = pod_record(body)
    assert record.pod_ip is record.pod_ips[0]


def test_pods_with_the_same_labels_in_another_order_share_one_label_map() -> None:
    sorted_first = _pod({}, [])
    sorted_first["metadata"]["labels"] = {"shapes-a": "1", "shapes-b": "2"}
    reversed_next = _pod({}, [])
    reversed_next["metadata"]["labels"] = {"shapes-b": "2", "shapes-a": "1"}
    first = pod_record(sorted_first)
    assert pod_record(reversed_next).labels is first.labels


def test_a_sharing_table_is_emptied_when_it_reaches_its_bound() -> None:
    table: dict[str, str] = {}
    one, two, three = _fresh("one"), _fresh("two"), _fresh("three")
    assert _shared(table, one, 2) is one
    assert _shared(table, _fresh("one"), 2) is one
    assert _shared(table, two, 2) is two
    assert _shared(table, three, 2) is three  # at the bound: emptied, then this one held
    assert table == {"three": "three"}


def test_the_record_cache_reads_a_pod_again_at_a_new_resource_version() -> None:
    cache = PodRecordCache()
    body = _pod({}, [{"ip": "10.0.0.1"}])
    first = cache.record(body)
    assert cache.record(body) is first
    # Changed in place (callers must not) with a new resourceVersion: read again.
    body["status"]["phase"] = "Succeeded"
    body["metadata"]["resourceVersion"] = "2"
    again = cache.record(body)
    assert (again.phase, again.resource_version) == ("Succeeded", "2")


def test_the_record_cache_evicts_the_pod_read_least_recently() -> None:
    cache = PodRecordCache(max_pods=2)
    a, b, c = (_pod({}, [{"ip": f"10.0.0.{i}"}]) for i in range(1, 4))
    for i, body in enumerate((a, b, c), start=1):
        body["metadata"]["uid"] = f"u-{i}"
    cache.record(a)
    cache.record(b)
    a["metadata"]["resourceVersion"] = "2"
    newer_a = cache.record(a)  # a read again: now the most recent
    cache.record(c)  # over the bound: b, the least recent, goes
    assert len(cache) == 2
    assert cache.record(a) is newer_a
