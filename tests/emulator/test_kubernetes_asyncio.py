"""kubernetes-asyncio as a client: typed calls, ApiException bodies, leases, watch streams."""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException

from endpointslice_operator.testing import Emulator


@pytest.fixture
async def api(emu: Emulator) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(emu.kubeconfig_path), client_configuration=configuration
    )
    async with client.ApiClient(configuration) as api_client:
        yield api_client


def reason_of(error: ApiException) -> str:
    body = json.loads(error.body or b"{}")
    return str(body["reason"])


def lease(holder: str) -> client.V1Lease:
    return client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=15),
    )


async def test_leader_election_style_lease_updates(api: client.ApiClient) -> None:
    leases = client.CoordinationV1Api(api)
    created = await leases.create_namespaced_lease("default", lease("a"))
    with pytest.raises(ApiException) as caught:
        await leases.create_namespaced_lease("default", lease("b"))
    assert caught.value.status == 409
    assert reason_of(caught.value) == "AlreadyExists"
    created.spec.holder_identity = "b"
    created.spec.renew_time = datetime.datetime.now(datetime.UTC)
    renewed = await leases.replace_namespaced_lease("leader", "default", created)
    assert renewed.spec.holder_identity == "b"
    created.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as caught:
        await leases.replace_namespaced_lease("leader", "default", created)
    assert caught.value.status == 409
    assert reason_of(caught.value) == "Conflict"


async def test_slices_and_delete_preconditions(api: client.ApiClient) -> None:
    discovery = client.DiscoveryV1Api(api)
    body = client.V1EndpointSlice(
        metadata=client.V1ObjectMeta(
            generate_name="web-", labels={"kubernetes.io/service-name": "web"}
        ),
        address_type="IPv4",
        endpoints=[
            client.V1Endpoint(
                addresses=["10.0.0.1"], conditions=client.V1EndpointConditions(ready=True)
            )
        ],
        ports=[client.DiscoveryV1EndpointPort(name="http", port=80, protocol="TCP")],
    )
    created = await discovery.create_namespaced_endpoint_slice("default", body)
    listed = await discovery.list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=web"
    )
    assert [s.metadata.name for s in listed.items] == [created.metadata.name]
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-it"))
    with pytest.raises(ApiException) as caught:
        await discovery.delete_namespaced_endpoint_slice(
            created.metadata.name, "default", body=wrong
        )
    assert caught.value.status == 409
    right = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=created.metadata.uid),
        propagation_policy="Background",
    )
    status = await discovery.delete_namespaced_endpoint_slice(
        created.metadata.name, "default", body=right
    )
    assert status.status == "Success"


async def test_watch_stream(emu: Emulator, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    emu.store.create(
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}}}
    )
    seen = []
    async with watch.Watch().stream(core.list_node, timeout_seconds=1) as stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 1:
                emu.store.patch("nodes", None, "n1", {"metadata": {"labels": {"zone": "b"}}})
            if len(seen) == 2:
                break
    assert seen == [("ADDED", "n1"), ("MODIFIED", "n1")]


async def test_core_and_events_v1_events(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    regarding = client.V1ObjectReference(kind="Service", name="web", namespace="default")
    event = await core.create_namespaced_event(
        "default",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name="web-"),
            involved_object=regarding,
            reason="Synced",
            message="ok",
            type="Normal",
        ),
    )
    assert event.metadata.name.startswith("web-")
    events = client.EventsV1Api(api)
    incomplete = {  # no eventTime, reportingController, ...: the model would refuse to build it
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "bare"},
        "regarding": {"kind": "Service", "name": "web", "namespace": "default"},
    }
    with pytest.raises(ApiException) as caught:
        await events.create_namespaced_event("default", cast(Any, incomplete))
    assert caught.value.status == 422
    assert reason_of(caught.value) == "Invalid"
