"""The emulator held to the real kube-apiserver: one request script, both servers, same answers.

Every step's status, Status reason and causes, and facts must agree (see ``conformance.py``).
Steps whose difference is on purpose (a feature newer than the real server's v1.24) are listed
in ``ON_PURPOSE`` with the reason, and are not compared; docs/emulator.md lists them too.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from endpointslice_operator.testing import run_emulator
from tests.realcluster.conformance import (
    Step,
    fields,
    item_names,
    kind_and_name,
    page,
    run_script,
)
from tests.realcluster.conftest import Cluster
from tests.realcluster.kube import Kube

pytestmark = pytest.mark.realcluster

SHAPES = {
    "Kopf": "list with limit/labelSelector; watch with allowWatchBookmarks, timeoutSeconds "
    "(integer), resourceVersion",
    "operator list-watch (kubernetes-asyncio)": "list with limit and continue; watch with "
    "resourceVersion, allowWatchBookmarks, timeoutSeconds",
    "operator readiness and reset probe": "list with limit=1",
    "operator writer": "POST with generateName, PUT with resourceVersion, DELETE with uid "
    "preconditions",
    "operator events": "POST core/v1 Event, PATCH (merge) of its count",
    "operator leader election": "GET, POST, PUT of a Lease with resourceVersion",
    "kubectl": "discovery (/api, /apis, /version), get as Table, label/annotate (merge patch), "
    "patch --type json|merge|strategic, delete, create",
    "error paths": "malformed and out-of-range query parameters, stale resourceVersions on "
    "watch, conflicts, validation failures, terminating namespaces, garbage collection",
}

ON_PURPOSE: dict[str, str] = {}
"""Step name -> why the emulator answers differently on purpose."""

Row = tuple[Any, ...]

IPV6_FORMS = (
    ("ipv6 zero group", "fd00:0::1"),
    ("ipv6 upper case", "FD00:26::9"),
    ("ipv6 written out", "fd00:0000:0000:0000:0000:0000:0000:0001"),
)
LEGACY_FORMS = (("leading zeros", "10.052.0.3"), ("ipv4-mapped", "::ffff:10.52.0.4"))


def _subsets_fact(ip: str) -> str:
    """The ``subsets`` fact of an Endpoints object with one address and port 80."""
    return json.dumps([{"addresses": [{"ip": ip}], "ports": [{"port": 80, "protocol": "TCP"}]}])


OLDER_SERVERS: dict[str, dict[str, tuple[Row, str]]] = {
    "1.24": {
        "slice bad ip": (
            (422, "Invalid", ("FieldValueInvalid", "FieldValueInvalid"), None),
            "v1.24 also checks an address that fails the address-type check in whichever "
            "family it parses (`must be a valid IP address`): two causes; v1.36 reports one",
        ),
        "deploy scale put without namespace": (
            (422, "Invalid", ("FieldValueRequired",), None),
            "v1.24 validates the Scale's own metadata without the URL's namespace "
            "(`metadata.namespace: Required value`); v1.36 takes the namespace from the URL "
            "and answers the stale resourceVersion (409 Conflict)",
        ),
        "params continue with watch": (
            (200, "", (), {"events": ["ADDED", "ADDED", "ADDED"], "error": None}),
            "v1.24 ignores continue on a watch; v1.36 refuses it (continue is for lists)",
        ),
        "params sendInitialEvents on a list": (
            (200, "", (), None),
            "v1.24 ignores sendInitialEvents on a list; v1.36 refuses it",
        ),
        "params sendInitialEvents without bookmarks": (
            (422, "Invalid", ("FieldValueForbidden", "FieldValueForbidden"), None),
            "v1.24 refuses sendInitialEvents on a watch (its WatchList feature is off); v1.36 "
            "serves it",
        ),
        "svc generateName '1web-'": (
            (422, "Invalid", ("FieldValueInvalid", "FieldValueInvalid"), None),
            "v1.24 wants Service names to be DNS-1035 labels (a letter first); v1.36 takes "
            "RFC 1123 labels (a digit first is fine)",
        ),
        **{
            f"pod status {label}": (
                (200, "", (), (f'"{ip}"',)),
                "v1.24 parses pod IPs sloppily and keeps any form; v1.36 refuses a "
                "non-canonical one (leading zeros, IPv4-mapped IPv6)",
            )
            for label, ip in (("leading zeros", "10.052.0.3"), ("ipv4-mapped", "::ffff:10.52.0.4"))
        },
        **{
            f"pod status {label}": (
                (200, "", (), ((json.dumps(ip),), ())),
                "v1.24 keeps an IPv6 pod IP in any form without a warning; v1.36 warns",
            )
            for label, ip in IPV6_FORMS
        },
        **{
            f"endpoints {label}": (
                (201, "", (), ((_subsets_fact(ip),), ())),
                "v1.24 keeps an Endpoints address in any form it parses sloppily, without a "
                "warning; v1.36 warns of IPv6 forms and refuses leading zeros and IPv4-mapped",
            )
            for label, ip in (*IPV6_FORMS, *LEGACY_FORMS)
        },
        **{
            f"svc externalIPs {label}": (
                (201, "", (), ((json.dumps([ip]),), ())),
                "v1.24 keeps externalIPs in any form it parses sloppily, without a warning; "
                "v1.36 warns of IPv6 forms and refuses leading zeros and IPv4-mapped",
            )
            for label, ip in (*IPV6_FORMS, *LEGACY_FORMS)
        },
        **{
            f"slice {label}": (
                (201, "", (), [ip]),
                "v1.24 accepts any form an EndpointSlice address parses in sloppily; v1.36 "
                "refuses non-canonical ones",
            )
            for label, ip in (
                ("ip leading zeros", "10.052.0.3"),
                ("ipv4-mapped in IPv4", "::ffff:10.52.0.4"),
                ("ipv6 not canonical", "fd00:0:0::0001"),
            )
        },
    },
}
"""Known differences of older servers, per ``major.minor``: the emulator models the current
release (v1.36); on an older server these steps must answer exactly the row given here
(checked, so a table entry that no longer holds is reported) instead of the emulator's."""


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}], **spec},
    }


def pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}, **meta},
        "spec": {"nodeName": "node-conf", "containers": [{"name": "c", "image": "x"}]},
    }


def eps(generate: str = "web-", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": generate,
            "labels": {"kubernetes.io/service-name": "web", "conf": "yes"},
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.1.0.1"], "conditions": {"ready": True}}],
    }
    body.update(overrides)
    return body


def slice_lists(body: Any) -> str:
    """Whether ``endpoints`` and ``ports`` are there, and their values."""
    return json.dumps([(key in body, body.get(key)) for key in ("endpoints", "ports")])


HOLD = "test.endpointslice-operator.io/hold"


def terminating_condition(body: Any) -> bool:
    """The namespace controller has looked at it (v1.24 sets these conditions)."""
    conditions = (
        (body.get("status") or {}).get("conditions") or [] if isinstance(body, dict) else []
    )
    return any(c.get("type") == "NamespaceContentRemaining" for c in conditions)


NSP = "/api/v1/namespaces/{ns}"
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
MERGE = "application/merge-patch+json"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
LEASE = {
    "apiVersion": "coordination.k8s.io/v1",
    "kind": "Lease",
    "metadata": {"name": "conf"},
    "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15},
}
EVENT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web.conf"},
    "involvedObject": {"kind": "Service", "namespace": "{ns}", "name": "web"},
    "reason": "Conf",
    "message": "m",
    "type": "Normal",
    "count": 1,
    "source": {"component": "conf"},
}


def list_parameter_steps() -> list[Step]:
    """List and watch parameters that only make sense together, as clients get them wrong."""
    conf = {"labelSelector": "conf=yes"}
    watch = {"watch": "true", "timeoutSeconds": "1"}
    return [
        Step("params page 1", "GET", SLICES, params={"limit": "1", **conf}, facts=page,
             save_continue="p1"),
        Step("params continue same selector", "GET", SLICES,
             params={"limit": "1", **conf, "continue": "{continue:p1}"}, facts=page),
        Step("params continue other label selector", "GET", SLICES,
             params={"limit": "1", "labelSelector": "conf=no", "continue": "{continue:p1}"},
             facts=page),
        Step("params continue other field selector", "GET", SLICES,
             params={"limit": "1", **conf, "fieldSelector": "metadata.name=x",
                     "continue": "{continue:p1}"}, facts=page),
        Step("params continue without limit", "GET", SLICES,
             params={**conf, "continue": "{continue:p1}"}, facts=page),
        Step("params continue with resourceVersion", "GET", SLICES,
             params={"limit": "1", **conf, "continue": "{continue:p1}", "resourceVersion": "0"}),
        Step("params continue with watch", "GET", SLICES,
             params={**watch, "continue": "{continue:p1}"}, watch_seconds=3),
        Step("params rvMatch without resourceVersion", "GET", SLICES,
             params={"resourceVersionMatch": "NotOlderThan"}),
        Step("params rvMatch Exact at 0", "GET", SLICES,
             params={"resourceVersionMatch": "Exact", "resourceVersion": "0"}),
        Step("params rvMatch unknown", "GET", SLICES,
             params={"resourceVersionMatch": "Sometimes", "resourceVersion": "1"}),
        Step("params rvMatch NotOlderThan at 0", "GET", SLICES,
             params={"resourceVersionMatch": "NotOlderThan", "resourceVersion": "0", **conf},
             facts=item_names),
        Step("params rvMatch on a watch", "GET", SLICES,
             params={**watch, **conf, "resourceVersionMatch": "NotOlderThan",
                     "resourceVersion": "0"}, watch_seconds=3),
        Step("params limit on a watch", "GET", SLICES, params={**watch, **conf, "limit": "1"},
             watch_seconds=3),
        Step("params sendInitialEvents on a list", "GET", SLICES,
             params={"sendInitialEvents": "true"}),
        Step("params sendInitialEvents without bookmarks", "GET", SLICES,
             params={**watch, **conf, "sendInitialEvents": "true",
                     "resourceVersionMatch": "NotOlderThan"}, watch_seconds=3),
    ]  # fmt: skip


def _generated(body: dict[str, Any], prefix: str) -> dict[str, Any]:
    metadata = {k: v for k, v in body["metadata"].items() if k != "name"}
    return {**body, "metadata": {**metadata, "generateName": prefix}}


DRY = {"dryRun": "All"}


def generate_name_steps() -> list[Step]:
    """``generateName`` against each kind's own name rules (DNS-1035 label for Services and
    Namespaces, DNS-1123 subdomain for most others), as dry runs."""
    plain_pod = {**pod("x"), "metadata": {}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("svc", f"{NSP}/services", service("x"), "web."),
        ("svc", f"{NSP}/services", service("x"), "1web-"),
        ("svc", f"{NSP}/services", service("x"), "Web-"),
        ("svc", f"{NSP}/services", service("x"), "w" * 62 + "-"),
        ("pod", f"{NSP}/pods", plain_pod, "p."),
        ("pod", f"{NSP}/pods", plain_pod, "P-"),
        ("pod", f"{NSP}/pods", plain_pod, "p" * 300),
        ("lease", LEASES, LEASE, "l."),
        ("slice", SLICES, eps(), "Web-"),
        ("namespace", "/api/v1/namespaces", namespace, "g."),
        ("namespace", "/api/v1/namespaces", namespace, "g-"),
    ]
    return [
        Step(f"{kind} generateName {prefix[:12]!r}", "POST", path, _generated(body, prefix),
             params=DRY, facts=kind_and_name)
        for kind, path, body, prefix in cases
    ]  # fmt: skip


def endpoints_ip_steps() -> list[Step]:
    """core/v1 Endpoints addresses and Service externalIPs in every form (dry runs): v1.36
    keeps an IPv6 text in another form than the canonical one with a ``Warning:`` header and
    refuses leading zeros and IPv4-mapped IPv6."""

    def endpoints(ip: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "forms"},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"port": 80}]}],
        }

    forms = (*IPV6_FORMS, *LEGACY_FORMS)
    return [
        *[
            Step(f"endpoints {label}", "POST", f"{NSP}/endpoints", endpoints(ip), params=DRY,
                 facts=fields("subsets"), warnings=True)
            for label, ip in forms
        ],
        *[
            Step(f"svc externalIPs {label}", "POST", f"{NSP}/services",
                 service("forms", externalIPs=[ip]), params=DRY,
                 facts=fields("spec.externalIPs"), warnings=True)
            for label, ip in forms
        ],
    ]  # fmt: skip


def just_deleted_namespace_steps() -> list[Step]:
    """A namespace deleted while it holds objects (without finalizers): creates are refused
    (403) while it is Terminating, which lasts until the namespace controller has emptied it."""
    base = "/api/v1/namespaces/{ns}-u"
    return [
        Step("ns3 create", "POST", "/api/v1/namespaces",
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{ns}-u"}},
             facts=fields("status.phase")),
        Step("ns3 pod", "POST", f"{base}/pods", pod("p"), facts=kind_and_name),
        Step("ns3 delete", "DELETE", "/api/v1/namespaces/{ns}-u", facts=fields("status.phase")),
        Step("ns3 create right after", "POST", f"{base}/services", service("late")),
    ]  # fmt: skip


def terminating_namespace_steps() -> list[Step]:
    """What a namespace being deleted still accepts: creates of each kind (refused), a dry
    run, updates (accepted)."""
    base = "/api/v1/namespaces/{ns}-t"
    event = {**EVENT, "involvedObject": {**EVENT["involvedObject"], "namespace": "{ns}-t"}}
    return [
        Step("ns2 create pod inside", "POST", f"{base}/pods", pod("late")),
        Step("ns2 create slice inside", "POST",
             "/apis/discovery.k8s.io/v1/namespaces/{ns}-t/endpointslices", eps()),
        Step("ns2 create lease inside", "POST",
             "/apis/coordination.k8s.io/v1/namespaces/{ns}-t/leases", LEASE),
        Step("ns2 create event inside", "POST", f"{base}/events", event, facts=kind_and_name),
        Step("ns2 create dry run inside", "POST", f"{base}/services", service("late"),
             params=DRY),
        Step("ns2 update inside", "PATCH", f"{base}/pods/held",
             {"metadata": {"labels": {"late": "yes"}}}, content_type=MERGE,
             facts=fields("metadata.labels")),
    ]  # fmt: skip


def owned_pair(prefix: str) -> list[Step]:
    """A Service and an EndpointSlice owned by it (controller reference, as the operator's)."""
    owned = eps()
    owned["metadata"] = {
        "name": f"{prefix}-owned",
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "name": f"{prefix}-owner",
                "uid": f"{{uid:{prefix}}}",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    return [
        Step(f"{prefix} owner create", "POST", f"{NSP}/services", service(f"{prefix}-owner"),
             save_uid=prefix, facts=kind_and_name),
        Step(f"{prefix} dependent create", "POST", SLICES, owned, facts=kind_and_name),
    ]  # fmt: skip


def steps() -> list[Step]:
    s: list[Step] = [
        # discovery, as kubectl and kubernetes-asyncio ask it
        Step("api", "GET", "/api", facts=fields("kind", "versions")),
        Step("apis", "GET", "/apis", facts=fields("kind")),
        Step("version", "GET", "/version", facts=lambda b: sorted(b) >= ["gitVersion"]),
        Step("core v1", "GET", "/api/v1", facts=fields("kind", "groupVersion")),
        Step("discovery v1", "GET", "/apis/discovery.k8s.io/v1", facts=fields("groupVersion")),
        Step("unknown group", "GET", "/apis/nope.example/v1"),
        # services: create, conflicts, validation, patches
        Step("svc create", "POST", f"{NSP}/services", service("web"), facts=kind_and_name),
        Step("svc exists", "POST", f"{NSP}/services", service("web")),
        Step("svc get", "GET", f"{NSP}/services/web", facts=fields("spec.ports")),
        Step("svc missing", "GET", f"{NSP}/services/nope"),
        Step("svc bad name", "POST", f"{NSP}/services", service("Web_1")),
        Step("svc no ports", "POST", f"{NSP}/services", {**service("np"), "spec": {}}),
        Step(
            "svc put stale",
            "PUT",
            f"{NSP}/services/web",
            {**service("web"), "metadata": {"name": "web", "resourceVersion": "1"}},
        ),
        Step(
            "svc merge patch",
            "PATCH",
            f"{NSP}/services/web",
            {"metadata": {"labels": {"tier": "front"}}},
            content_type=MERGE,
            facts=fields("metadata.labels"),
        ),
        Step(
            "svc json patch",
            "PATCH",
            f"{NSP}/services/web",
            [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}],
            content_type="application/json-patch+json",
            facts=fields("metadata.annotations"),
        ),
        Step(
            "svc strategic patch",
            "PATCH",
            f"{NSP}/services/web",
            {"spec": {"ports": [{"name": "metrics", "port": 9100}]}},
            content_type="application/strategic-merge-patch+json",
            facts=lambda b: sorted(p["name"] for p in b["spec"]["ports"]),
        ),
        Step("svc patch bad type", "PATCH", f"{NSP}/services/web", {}, content_type="text/plain"),
        Step(
            "svc json patch bad",
            "PATCH",
            f"{NSP}/services/web",
            [{"op": "replace", "path": "/nope/x", "value": 1}],
            content_type="application/json-patch+json",
        ),
        Step("svc list as table", "GET", f"{NSP}/services", accept=TABLE, facts=fields("kind")),
        # pods: create, status, selectors
        Step("pod create", "POST", f"{NSP}/pods", pod("p0"), facts=fields("status.phase")),
        Step(
            "pod status",
            "PATCH",
            f"{NSP}/pods/p0/status",
            {"status": {"phase": "Running", "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}]}},
            content_type=MERGE,
            facts=fields("status.podIP"),
        ),
        # pod IPs a v1.24 server accepted and later ones refuse (non-canonical forms); dry
        # runs, so that what follows sees the same state on both versions
        *[
            Step(
                f"pod status {label}",
                "PATCH",
                f"{NSP}/pods/p0/status",
                {"status": {"podIP": ip, "podIPs": [{"ip": ip}]}},
                params={"dryRun": "All"},
                content_type=MERGE,
                facts=fields("status.podIP"),
            )
            for label, ip in (("leading zeros", "10.052.0.3"), ("ipv4-mapped", "::ffff:10.52.0.4"))
        ],
        # IPv6 forms v1.36 keeps in a pod with a warning (an EndpointSlice refuses them)
        *[
            Step(
                f"pod status {label}",
                "PATCH",
                f"{NSP}/pods/p0/status",
                {"status": {"podIP": ip, "podIPs": [{"ip": ip}]}},
                params=DRY,
                content_type=MERGE,
                facts=fields("status.podIP"),
                warnings=True,
            )
            for label, ip in IPV6_FORMS
        ],
        Step(
            "pods by label",
            "GET",
            f"{NSP}/pods",
            params={"labelSelector": "app=web"},
            facts=item_names,
        ),
        Step(
            "pods set-based",
            "GET",
            f"{NSP}/pods",
            params={"labelSelector": "app in (web),!canary"},
            facts=item_names,
        ),
        Step("pods bad label selector", "GET", f"{NSP}/pods", params={"labelSelector": "a=(b"}),
        Step(
            "pods by node",
            "GET",
            f"{NSP}/pods",
            params={"fieldSelector": "spec.nodeName=node-conf"},
            facts=item_names,
        ),
        Step("pods bad field", "GET", f"{NSP}/pods", params={"fieldSelector": "spec.nope=x"}),
        Step(
            "pods limit=1",
            "GET",
            "/api/v1/pods",
            params={"limit": "1"},
            facts=lambda b: len(b["items"]) <= 1,
        ),
        # query parameters as kube-apiserver parses them
        Step("limit fractional", "GET", f"{NSP}/pods", params={"limit": "2.0"}),
        Step("limit too large", "GET", f"{NSP}/pods", params={"limit": "9223372036854775808"}),
        Step("limit negative", "GET", f"{NSP}/pods", params={"limit": "-5"}, facts=page),
        Step(
            "watch timeout fractional",
            "GET",
            f"{NSP}/pods",
            params={"watch": "true", "timeoutSeconds": "300.0"},
        ),
        Step("list bad continue", "GET", SLICES, params={"limit": "1", "continue": "garbage!"}),
        # endpointslices: what the operator writes, and what the API refuses
        Step("slice create", "POST", SLICES, eps(), facts=kind_and_name),
        Step("slice create 2", "POST", SLICES, eps(), facts=kind_and_name),
        Step("slice create 3", "POST", SLICES, eps(), facts=kind_and_name),
        Step("slices page unfiltered", "GET", SLICES, params={"limit": "1"}, facts=page),
        *list_parameter_steps(),
        Step("slice generateName dash", "POST", SLICES, eps("web--"), facts=kind_and_name),
        Step("slice generateName dot", "POST", SLICES, eps("web."), facts=kind_and_name),
        Step("slice bad addressType", "POST", SLICES, eps(addressType="IPv5")),
        Step(
            "slice bad ip",
            "POST",
            SLICES,
            eps(endpoints=[{"addresses": ["10.1.0.300"], "conditions": {}}]),
        ),
        *[
            Step(
                f"slice {label}",
                "POST",
                SLICES,
                eps(addressType=family, endpoints=[{"addresses": [ip], "conditions": {}}]),
                params={"dryRun": "All"},
                facts=lambda b: (b.get("endpoints") or [{}])[0].get("addresses"),
            )
            for label, family, ip in (
                ("ip leading zeros", "IPv4", "10.052.0.3"),
                ("ipv4-mapped in IPv4", "IPv4", "::ffff:10.52.0.4"),
                ("ipv4-mapped in IPv6", "IPv6", "::ffff:10.52.0.4"),
                ("ipv6 not canonical", "IPv6", "fd00:0:0::0001"),
            )
        ],
        Step(
            "slice no addresses",
            "POST",
            SLICES,
            eps(endpoints=[{"addresses": [], "conditions": {}}]),
        ),
        Step(
            "slice too many endpoints",
            "POST",
            SLICES,
            eps(endpoints=[{"addresses": [f"10.2.{i // 250}.{i % 250 + 1}"]} for i in range(1001)]),
        ),
        Step(
            "slice bad port name",
            "POST",
            SLICES,
            eps(ports=[{"name": "HTTP_", "port": 80, "protocol": "TCP"}]),
        ),
        Step(
            "slice bad protocol",
            "POST",
            SLICES,
            eps(ports=[{"name": "x", "port": 80, "protocol": "ICMP"}]),
        ),
        Step(
            "slices page 1",
            "GET",
            SLICES,
            params={"limit": "2", "labelSelector": "conf=yes"},
            facts=page,
        ),
        Step(
            "slices all",
            "GET",
            SLICES,
            params={"labelSelector": "conf=yes"},
            facts=lambda b: len(b["items"]),
        ),
        Step(
            "slice fixed name",
            "POST",
            SLICES,
            {**eps(), "metadata": {"name": "fixed", "labels": {"conf": "yes"}}},
            facts=kind_and_name,
        ),
        Step(
            "slice delete wrong uid",
            "DELETE",
            f"{SLICES}/fixed",
            {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "nope"}},
        ),
        Step(
            "slice delete wrong rv",
            "DELETE",
            f"{SLICES}/fixed",
            {
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": "1"},
            },
        ),
        Step("slice delete", "DELETE", f"{SLICES}/fixed", facts=fields("kind")),
        Step("slice delete again", "DELETE", f"{SLICES}/fixed"),
        # Empty or missing endpoints and ports come back as null (not [] and not absent)
        Step(
            "slice empty lists create",
            "POST",
            SLICES,
            {**eps(ports=[], endpoints=[]), "metadata": {"name": "empty-lists"}},
            facts=slice_lists,
        ),
        Step(
            "slice empty ports put",
            "PUT",
            f"{SLICES}/empty-lists",
            {**eps(ports=[]), "metadata": {"name": "empty-lists"}},
            facts=slice_lists,
        ),
        Step(
            "slice without lists create",
            "POST",
            SLICES,
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": "no-lists"},
                "addressType": "IPv4",
            },
            facts=slice_lists,
        ),
        Step("slice without lists get", "GET", f"{SLICES}/no-lists", facts=slice_lists),
        Step(
            "slice put missing rv",
            "PUT",
            f"{SLICES}/missing",
            {**eps(), "metadata": {"name": "missing"}},
        ),
        # watches
        Step(
            "watch from now",
            "GET",
            SLICES,
            params={
                "watch": "true",
                "resourceVersion": "0",
                "timeoutSeconds": "1",
                "labelSelector": "conf=yes",
            },
            watch_seconds=3,
        ),
        Step(
            "watch from 1",
            "GET",
            SLICES,
            params={"watch": "true", "resourceVersion": "1", "timeoutSeconds": "1"},
            watch_seconds=3,
        ),
        Step(
            "watch bad rv",
            "GET",
            SLICES,
            params={"watch": "true", "resourceVersion": "abc", "timeoutSeconds": "1"},
        ),
        # events, as the operator's recorder posts and aggregates them
        Step("event create", "POST", f"{NSP}/events", EVENT, facts=fields("reason", "count")),
        Step(
            "event generateName dot",
            "POST",
            f"{NSP}/events",
            _generated(EVENT, "web."),
            params=DRY,
            facts=kind_and_name,
        ),
        *endpoints_ip_steps(),
        Step(
            "event patch",
            "PATCH",
            f"{NSP}/events/web.conf",
            {"count": 2},
            content_type=MERGE,
            facts=fields("count"),
        ),
        # leases, as leader election uses them
        Step("lease get missing", "GET", f"{LEASES}/conf"),
        Step("lease create", "POST", LEASES, LEASE, facts=fields("spec.holderIdentity")),
        Step("lease create again", "POST", LEASES, LEASE),
        Step(
            "lease put stale",
            "PUT",
            f"{LEASES}/conf",
            {**LEASE, "metadata": {"name": "conf", "resourceVersion": "1"}},
        ),
        Step(
            "lease put no rv", "PUT", f"{LEASES}/conf", LEASE, facts=fields("spec.holderIdentity")
        ),
        Step(
            "watch future rv",
            "GET",
            SLICES,
            params={"watch": "true", "resourceVersion": "99999999", "timeoutSeconds": "1"},
            watch_seconds=3,
        ),
        # garbage collection of owned objects: background (the default) and orphan
        *owned_pair("gc"),
        Step("gc owner delete", "DELETE", f"{NSP}/services/gc-owner", facts=fields("kind")),
        Step(
            "gc dependent gone",
            "GET",
            f"{SLICES}/gc-owned",
            retry_until=lambda code, body: code == 404,
        ),
        *owned_pair("orphan"),
        Step(
            "orphan owner delete",
            "DELETE",
            f"{NSP}/services/orphan-owner",
            {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan"},
        ),
        Step(
            "orphan dependent kept",
            "GET",
            f"{SLICES}/orphan-owned",
            retry_until=lambda code, body: not (body.get("metadata") or {}).get("ownerReferences"),
            facts=fields("metadata.ownerReferences", "metadata.finalizers"),
        ),
        *generate_name_steps(),
        Step("svc delete", "DELETE", f"{NSP}/services/web", facts=fields("kind")),
        Step("svc deleted", "GET", f"{NSP}/services/web"),
        # a namespace being deleted: Terminating while something holds it, creates refused
        Step(
            "ns2 create",
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{ns}-t"}},
            facts=fields("status.phase"),
        ),
        Step(
            "ns2 held pod",
            "POST",
            "/api/v1/namespaces/{ns}-t/pods",
            pod("held", finalizers=[HOLD]),
            facts=kind_and_name,
        ),
        Step("ns2 delete", "DELETE", "/api/v1/namespaces/{ns}-t", facts=fields("status.phase")),
        Step(
            "ns2 terminating",
            "GET",
            "/api/v1/namespaces/{ns}-t",
            retry_until=lambda code, body: terminating_condition(body),
            facts=lambda b: (b["status"]["phase"], terminating_condition(b)),
        ),
        Step("ns2 create inside", "POST", "/api/v1/namespaces/{ns}-t/services", service("late")),
        *just_deleted_namespace_steps(),
        *terminating_namespace_steps(),
        Step(
            "ns2 pod terminating",
            "GET",
            "/api/v1/namespaces/{ns}-t/pods/held",
            retry_until=lambda code, body: bool(
                (body.get("metadata") or {}).get("deletionTimestamp")
            ),
            facts=lambda b: bool(b["metadata"].get("deletionTimestamp")),
        ),
        Step(
            "ns2 release",
            "PATCH",
            "/api/v1/namespaces/{ns}-t/pods/held",
            {"metadata": {"finalizers": None}},
            content_type=MERGE,
        ),
        # No kubelet confirms the graceful deletion on the real server: force it.
        Step(
            "ns2 force pod",
            "DELETE",
            "/api/v1/namespaces/{ns}-t/pods/held",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
        ),
        Step(
            "ns2 gone",
            "GET",
            "/api/v1/namespaces/{ns}-t",
            retry_until=lambda code, body: code == 404,
        ),
        *workload_steps(),
    ]
    return s


def _deployment(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]},
            },
        },
    }


def _rollout(body: Any) -> Any:
    status = body.get("status") or {}
    conditions = sorted((c["type"], c["status"]) for c in status.get("conditions") or [])
    return (
        status.get("replicas"),
        status.get("updatedReplicas"),
        status.get("unavailableReplicas"),
        status.get("observedGeneration") == body["metadata"]["generation"],
        conditions,
    )


def _replica_sets(body: Any) -> Any:
    return [
        (
            item["metadata"]["name"].startswith("d-"),
            [r["kind"] for r in item["metadata"].get("ownerReferences") or []],
            item["spec"]["replicas"],
            item["spec"]["template"]["metadata"]["labels"].get("app"),
            "pod-template-hash" in item["spec"]["selector"]["matchLabels"],
        )
        for item in body.get("items") or []
    ]


def _stale_scale_put(name: str, deployments: str, metadata: dict[str, str]) -> Step:
    """A PUT of Deployment d's Scale carrying resourceVersion "1" (and ``metadata``)."""
    return Step(
        name,
        "PUT",
        deployments + "/d/scale",
        {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "d", "resourceVersion": "1", **metadata},
            "spec": {"replicas": 1},
        },
    )


def workload_steps() -> list[Step]:
    """Deployments as kubectl apply / scale / rollout drive them (no kubelet: pods stay
    Pending on both servers)."""
    deployments = "/apis/apps/v1/namespaces/{ns}/deployments"
    return [
        Step(
            "deploy create",
            "POST",
            deployments,
            _deployment({"app": "d"}),
            facts=fields(
                "kind",
                "spec.replicas",
                "spec.strategy",
                "spec.revisionHistoryLimit",
                "spec.progressDeadlineSeconds",
                "spec.template.spec.restartPolicy",
                "spec.template.spec.terminationGracePeriodSeconds",
            ),
        ),
        Step("deploy selector mismatch", "POST", deployments, _deployment({"app": "other"})),
        Step(
            "deploy scale get",
            "GET",
            deployments + "/d/scale",
            facts=fields("kind", "apiVersion", "spec.replicas", "status.selector"),
        ),
        Step(
            "deploy scale patch",
            "PATCH",
            deployments + "/d/scale",
            {"spec": {"replicas": 3}},
            content_type=MERGE,
            facts=fields("kind", "spec.replicas"),
        ),
        _stale_scale_put("deploy scale put without namespace", deployments, {}),
        _stale_scale_put("deploy scale stale put", deployments, {"namespace": "{ns}"}),
        Step(
            "deploy replicasets",
            "GET",
            "/apis/apps/v1/namespaces/{ns}/replicasets",
            facts=_replica_sets,
            retry_until=lambda code, body: (
                code == 200 and [i["spec"]["replicas"] for i in body.get("items") or []] == [3]
            ),
        ),
        Step(
            "deploy status",
            "GET",
            deployments + "/d",
            facts=_rollout,
            retry_until=lambda code, body: (
                code == 200
                and (body.get("status") or {}).get("replicas") == 3
                and (body.get("status") or {}).get("observedGeneration")
                == body["metadata"]["generation"]
            ),
        ),
        Step(
            "deploy pods",
            "GET",
            "/api/v1/namespaces/{ns}/pods",
            params={"labelSelector": "app=d"},
            facts=lambda body: sorted(
                (
                    i["metadata"]["generateName"].startswith("d-"),
                    i["metadata"]["ownerReferences"][0]["kind"],
                    (i.get("status") or {}).get("phase"),
                )
                for i in body["items"]
            ),
            retry_until=lambda code, body: code == 200 and len(body.get("items") or []) == 3,
        ),
    ]


async def run_against(kube: Kube, ns: str) -> list[Any]:
    await kube.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    try:
        results = await run_script(kube, steps(), ns)
    finally:
        await kube.delete(f"/api/v1/namespaces/{ns}")
    return [r.row() for r in results]


async def server_minor(kube: Kube) -> str:
    """The real server's ``major.minor`` (``1.24`` for ``v1.24.0-alpha.2``)."""
    version = await kube.get("/version")
    return f"{version['major']}.{str(version['minor']).rstrip('+')}"


def compare(script: list[Step], real: list[Any], model: list[Any], minor: str) -> list[str]:
    """The mismatches, as lines: a step differs when the real server's row is not the
    emulator's, or, for a step the table names for this server version, not the table's."""
    known = OLDER_SERVERS.get(minor, {})
    mismatches = []
    for step, a, b in zip(script, real, model, strict=True):
        if step.name in ON_PURPOSE:
            continue
        if step.name in known:
            expected = known[step.name][0]
            if tuple(a) != expected:
                mismatches.append(f"{step.name}: real={a} table for v{minor}={expected}")
        elif a != b:
            mismatches.append(f"{step.name}: real={a} emulator={b}")
    return mismatches


async def test_the_emulator_answers_the_script_as_the_real_server_does(
    cluster: Cluster, kube: Kube
) -> None:
    ns = f"conf-{secrets.token_hex(3)}"
    minor = await server_minor(kube)
    real = await run_against(kube, ns)
    async with run_emulator(seed=3) as emu, await Kube.load(emu.kubeconfig_path) as local:
        model = await run_against(local, ns)
    script = steps()
    assert len(script) >= 60
    mismatches = compare(script, real, model, minor)
    assert not mismatches, f"{len(mismatches)} of {len(script)} differ:\n" + "\n".join(mismatches)
