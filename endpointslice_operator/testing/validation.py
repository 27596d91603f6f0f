"""Validation as kube-apiserver does it: names, object metadata, and per-kind rules.

Messages and ``Status.details.causes`` follow apimachinery's ``field.Error`` rendering, so an
invalid write fails in tests with the text a real cluster would return.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from endpointslice_operator.testing.errors import Cause
from endpointslice_operator.testing.names import (
    CACHE_SIZE,
    NAME_RULES,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    dns1123_subdomain_messages,
    label_value_errors,
    label_value_messages,
    qualified_name_errors,
    qualified_name_messages,
)

JSON = dict[str, Any]

TOTAL_ANNOTATION_SIZE = 256 * 1024

MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000
MAX_ZONE_HINTS = 8
MAX_NODE_HINTS = 8
MAX_TOPOLOGY_LABELS = 16
ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PROTOCOLS = ("SCTP", "TCP", "UDP")

_IANA_SVC_NAME_RE = re.compile(r"^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


# ---------------------------------------------------------------------------------------------
# field.Error constructors (reason + rendered message)


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    return json.dumps(value) if isinstance(value, bool | int | float) else f"{value}"


def invalid_value(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_quote(value)}: {detail}", path)


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {_quote(value)}", path)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    allowed = ", ".join(json.dumps(s) for s in supported)
    return Cause(
        "FieldValueNotSupported",
        f"Unsupported value: {_quote(value)}: supported values: {allowed}",
        path,
    )


def too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {limit} bytes", path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def immutable(path: str, value: Any) -> Cause:
    return invalid_value(path, value, "field is immutable")


# ---------------------------------------------------------------------------------------------
# Object metadata


def validate_labels(labels: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if labels is None:
        return causes
    if not isinstance(labels, dict):
        return [invalid_value(path, labels, "must be a map of strings")]
    for key, value in labels.items():
        # The cached tuples, asked directly: a valid label (nearly all of them) costs two
        # cache hits, with no list or generator built for it.
        key_errors = qualified_name_messages(key)
        if key_errors:
            causes.extend(invalid_value(path, key, msg) for msg in key_errors)
        if not isinstance(value, str):
            causes.append(invalid_value(f"{path}[{key}]", value, "must be a string"))
            continue
        value_errors = label_value_messages(value)
        if value_errors:
            causes.extend(invalid_value(f"{path}[{key}]", value, msg) for msg in value_errors)
    return causes


def validate_annotations(annotations: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if annotations is None:
        return causes
    if not isinstance(annotations, dict):
        return [invalid_value(path, annotations, "must be a map of strings")]
    total = 0
    for key, value in annotations.items():
        causes.extend(invalid_value(path, key, msg) for msg in qualified_name_errors(key.lower()))
        if not isinstance(value, str):
            causes.append(invalid_value(f"{path}[{key}]", value, "must be a string"))
            continue
        total += len(key) + len(value)
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE))
    return causes


def validate_owner_references(refs: Any, path: str) -> list[Cause]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [invalid_value(path, refs, "must be a list")]
    causes: list[Cause] = []
    controllers = 0
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(invalid_value(path, ref, "must be an object"))
            continue
        api_version = ref.get("apiVersion") or ""
        if not api_version or api_version.endswith("/"):
            causes.append(
                invalid_value(f"{path}.apiVersion", api_version, "version must not be empty")
            )
        if not ref.get("kind"):
            causes.append(
                invalid_value(f"{path}.kind", ref.get("kind", ""), "kind must not be empty")
            )
        if not ref.get("name"):
            causes.append(
                invalid_value(f"{path}.name", ref.get("name", ""), "name must not be empty")
            )
        if not ref.get("uid"):
            causes.append(invalid_value(f"{path}.uid", ref.get("uid", ""), "uid must not be empty"))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        causes.append(
            invalid_value(path, refs, "Only one reference can have Controller set to true")
        )
    return causes


_NO_META: JSON = {}


def validate_object_meta(
    meta: JSON,
    *,
    namespaced: bool,
    name_rule: str,
    old_meta: JSON | None = None,
) -> list[Cause]:
    """ValidateObjectMeta (+ ValidateObjectMetaUpdate when ``old_meta`` is given).

    On an update, a part equal to the stored object's is not checked again: the stored object
    passed these same rules when it was written, so the causes would be none either way (a
    shortcut for the hot path, where most writes leave names, labels and owners alone).
    """
    if old_meta is not None and meta == old_meta:
        return []  # a write that leaves all of it as stored (a status write)
    causes: list[Cause] = []
    old = old_meta if old_meta is not None else _NO_META

    def unchanged(key: str) -> bool:
        return old_meta is not None and meta.get(key) == old.get(key)

    name = meta.get("name") or ""
    if name and unchanged("name"):
        pass
    elif not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        check = NAME_RULES[name_rule]
        causes.extend(invalid_value("metadata.name", name, msg) for msg in check(name))
    generate_name = meta.get("generateName") or ""
    if generate_name and not unchanged("generateName"):
        # Prefixes may end with a dash: apimachinery's maskTrailingDash replaces the last two
        # characters by "a" ("P-" passes as "a"; the generated name is checked on its own).
        masked = (
            generate_name[:-2] + "a"
            if len(generate_name) > 1 and generate_name.endswith("-")
            else generate_name
        )
        check = NAME_RULES[name_rule]
        causes.extend(
            invalid_value("metadata.generateName", generate_name, msg) for msg in check(masked)
        )
    namespace = meta.get("namespace") or ""
    if namespace and unchanged("namespace"):
        pass
    elif namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            causes.extend(
                invalid_value("metadata.namespace", namespace, msg)
                for msg in dns1123_label_errors(namespace)
            )
    elif namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    if not unchanged("labels"):
        causes.extend(validate_labels(meta.get("labels"), "metadata.labels"))
    if not unchanged("annotations"):
        causes.extend(validate_annotations(meta.get("annotations"), "metadata.annotations"))
    if not unchanged("ownerReferences"):
        causes.extend(
            validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences")
        )
    finalizers = meta.get("finalizers") or []
    finalizers_unchanged = unchanged("finalizers")
    for finalizer in () if finalizers_unchanged else finalizers:
        causes.extend(
            invalid_value("metadata.finalizers", finalizer, msg)
            for msg in qualified_name_errors(str(finalizer))
        )
    if not finalizers_unchanged and len(set(finalizers)) != len(finalizers):
        seen: set[str] = set()
        for finalizer in finalizers:
            if finalizer in seen:
                causes.append(duplicate("metadata.finalizers", finalizer))
            seen.add(finalizer)
    if old_meta is not None:
        causes.extend(
            immutable(f"metadata.{key}", meta.get(key))
            for key in ("name", "namespace", "uid", "creationTimestamp")
            if meta.get(key) != old_meta.get(key) and meta.get(key) is not None
        )
        if old_meta.get("deletionTimestamp"):
            new_finalizers = set(finalizers) - set(old_meta.get("finalizers") or [])
            if new_finalizers:
                causes.append(
                    forbidden(
                        "metadata.finalizers",
                        "no new finalizers can be added if the object is being deleted, found new "
                        f"finalizers {sorted(new_finalizers)!r}",
                    )
                )
    return causes


# ---------------------------------------------------------------------------------------------
# EndpointSlices (discovery.k8s.io/v1)


_IPV4_LINK_LOCAL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")


def _is_link_local_multicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's ``net.IP.IsLinkLocalMulticast``: 224.0.0.0/24, or ff02::/16 under any flags nibble
    (``ffX2::``), which is wider than the ``ff02::/10`` the API's message names."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip in _IPV4_LINK_LOCAL_MULTICAST
    packed = ip.packed
    return packed[0] == 0xFF and packed[1] & 0x0F == 0x02


def _non_canonical(address: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """v1.36's strict parsing: an IPv4 text with leading zeros does not parse at all (Python's
    parser agrees), an IPv4-mapped IPv6 address or an IPv6 text in another form than the
    canonical one is refused (v1.24 parsed all of these sloppily and accepted them)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "must not be an IPv4-mapped IPv6 address"
        if ip.compressed != address:
            return f'must be in canonical form ("{ip.compressed}")'
    return None


_SLOPPY_IPV4 = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}").fullmatch


def _leading_zeros(address: str) -> bool:
    """An IPv4 text Go's sloppy parser reads and the strict one refuses (``10.052.0.3``)."""
    return _SLOPPY_IPV4(address) is not None and all(
        int(part) <= 255 for part in address.split(".")
    )


def strict_ip_error(address: str) -> str | None:
    """v1.36's strict parsing of an IP in a pod, an Endpoints address or a Service: what does
    not parse, leading zeros and IPv4-mapped IPv6 are refused; an IPv6 text in another form
    than the canonical one is accepted with a warning (:func:`ip_warnings`)."""
    if "%" in address:
        return "must be a valid IP address"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return (
            "must not have leading 0s" if _leading_zeros(address) else "must be a valid IP address"
        )
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return "must not be an IPv4-mapped IPv6 address"
    return None


@functools.lru_cache(maxsize=CACHE_SIZE)
def pod_ip_error(address: str) -> str | None:
    """Why ``address`` may not be a pod IP (None when it may): v1.36 refuses what does not
    parse strictly (``10.052.0.3``, ``::ffff:10.52.0.4``) and only warns of a non-canonical
    IPv6 text (``fd00:0::1``)."""
    return strict_ip_error(address)


def _ipv6_warning(path: str, address: Any) -> str | None:
    if not isinstance(address, str) or ":" not in address or strict_ip_error(address):
        return None
    canonical = ipaddress.IPv6Address(address).compressed
    if canonical == address:
        return None
    return (
        f'{path}: IPv6 address "{address}" should be in RFC 5952 canonical format ("{canonical}")'
    )


def _ip_paths(group: str, plural: str, obj: JSON) -> Iterable[tuple[str, Any]]:
    """(field path, address) of every IP the API server parses strictly in an object."""
    if group:
        return
    if plural == "pods":
        status = obj.get("status") or {}
        for i, entry in enumerate(status.get("podIPs") or []):
            yield f"status.podIPs[{i}].ip", (entry or {}).get("ip")
    elif plural == "endpoints":
        for i, subset in enumerate(obj.get("subsets") or []):
            for key in ("addresses", "notReadyAddresses"):
                for j, address in enumerate((subset or {}).get(key) or []):
                    yield f"subsets[{i}].{key}[{j}].ip", (address or {}).get("ip")
    elif plural == "services":
        spec = obj.get("spec") or {}
        for key in ("clusterIPs", "externalIPs"):
            for i, address in enumerate(spec.get(key) or []):
                if address != "None":
                    yield f"spec.{key}[{i}]", address


def ip_warnings(group: str, plural: str, obj: JSON) -> list[str]:
    """The ``Warning:`` texts v1.36 answers a write of ``obj`` with: one per IPv6 address in a
    non-canonical form (pods, Endpoints, Services; an EndpointSlice refuses them)."""
    found = (_ipv6_warning(path, address) for path, address in _ip_paths(group, plural, obj))
    return [text for text in found if text is not None]


def _strict_ip_causes(group: str, plural: str, obj: JSON) -> list[Cause]:
    causes: list[Cause] = []
    for path, address in _ip_paths(group, plural, obj):
        error = (
            strict_ip_error(address) if isinstance(address, str) else "must be a valid IP address"
        )
        if error is not None:
            causes.append(invalid_value(path, address, error))
    return causes


def validate_endpoints(obj: JSON, old: JSON | None) -> list[Cause]:
    """core/v1 Endpoints: the addresses' strict parsing (v1.36)."""
    if old is not None and obj.get("subsets") == old.get("subsets"):
        return []
    return _strict_ip_causes("", "endpoints", obj)


@functools.lru_cache(maxsize=CACHE_SIZE)
def ip_address_error(address: str, version: int) -> str | None:
    """Why ``address`` is not a valid, non-special IPv4/IPv6 address (None when it is).

    IsValidIPv4Address/IsValidIPv6Address (strict and canonical, as v1.36) plus
    ValidateNonSpecialIP, as for EndpointSlices.
    """
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = (
            ipaddress.IPv4Address(address) if version == 4 else ipaddress.IPv6Address(address)
        )
    except ValueError:
        if version == 4 and _leading_zeros(address):
            return "must not have leading 0s"
        return f"must be a valid IPv{version} address"
    if "%" in address:
        return "must be a valid IPv6 address"
    non_canonical = _non_canonical(address, ip)
    if non_canonical is not None:
        return non_canonical
    if ip.is_unspecified:
        return "may not be unspecified (0.0.0.0, ::)"
    if ip.is_loopback:
        return "may not be in the loopback range (127.0.0.0/8, ::1/128)"
    if ip.is_link_local:
        return "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
    if _is_link_local_multicast(ip):
        return "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
    return None


def _ip_errors(path: str, address: str, version: int) -> list[Cause]:
    """The address-type check; only an address that passes it is checked for special ranges
    (v1.36's EndpointSlice validation: one cause per address, where v1.24 also checked the
    address in whichever family it parsed and reported two)."""
    error = ip_address_error(address, version)
    return [] if error is None else [invalid_value(path, address, error)]


def _fqdn_errors(path: str, address: str) -> list[Cause]:
    value = address[:-1] if address.endswith(".") else address
    if not value:
        return [required(path)]
    causes = [invalid_value(path, address, msg) for msg in dns1123_subdomain_errors(value)]
    if "." not in value:
        causes.append(
            invalid_value(
                path, address, "should be a domain with at least two segments separated by dots"
            )
        )
    return causes


def _validate_hints(hints: JSON, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for field, limit, check in (
        ("forZones", MAX_ZONE_HINTS, label_value_errors),
        ("forNodes", MAX_NODE_HINTS, dns1123_subdomain_errors),
    ):
        entries = hints.get(field) or []
        if len(entries) > limit:
            causes.append(too_many(f"{path}.{field}", len(entries), limit))
            continue
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            name = (entry or {}).get("name", "")
            entry_path = f"{path}.{field}[{i}].name"
            if name in seen:
                causes.append(duplicate(entry_path, name))
            seen.add(name)
            causes.extend(invalid_value(entry_path, name, msg) for msg in check(name))
    return causes


def _validate_endpoints(
    endpoints: Any, address_type: str, stored: list[Any] | None = None
) -> list[Cause]:
    """``stored``: the stored slice's endpoints when its addressType is the same; an endpoint
    equal to the stored one at its index passed these rules already and is skipped."""
    if endpoints is None:
        return []
    if not isinstance(endpoints, list):
        return [invalid_value("endpoints", endpoints, "must be a list")]
    if len(endpoints) > MAX_ENDPOINTS:
        return [too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    causes: list[Cause] = []
    version = 4 if address_type == "IPv4" else 6 if address_type == "IPv6" else 0
    # Paths are spelled only for what has an error: a valid endpoint (nearly all of them)
    # costs a few cached lookups and no string formatting.
    kept = len(stored) if stored is not None else 0
    for i, endpoint in enumerate(endpoints):
        if i < kept and endpoint == stored[i]:  # type: ignore[index]
            continue
        addresses = endpoint.get("addresses") or []
        if not addresses:
            causes.append(required(f"endpoints[{i}].addresses", "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            causes.append(too_many(f"endpoints[{i}].addresses", len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            if version:
                if type(address) is not str or ip_address_error(address, version) is not None:
                    causes.extend(_ip_errors(f"endpoints[{i}].addresses[{j}]", address, version))
            elif address_type == "FQDN":
                causes.extend(_fqdn_errors(f"endpoints[{i}].addresses[{j}]", address))
        node_name = endpoint.get("nodeName")
        if node_name is not None and (
            type(node_name) is not str or dns1123_subdomain_messages(node_name)
        ):
            causes.extend(
                invalid_value(f"endpoints[{i}].nodeName", node_name, msg)
                for msg in dns1123_subdomain_errors(node_name)
            )
        topology = endpoint.get("deprecatedTopology")
        if topology:
            base = f"endpoints[{i}]"
            if len(topology) > MAX_TOPOLOGY_LABELS:
                causes.append(
                    too_many(f"{base}.deprecatedTopology", len(topology), MAX_TOPOLOGY_LABELS)
                )
            causes.extend(validate_labels(topology, f"{base}.deprecatedTopology"))
        hostname = endpoint.get("hostname")
        if hostname is not None:
            causes.extend(
                invalid_value(f"endpoints[{i}].hostname", hostname, msg)
                for msg in dns1123_label_errors(hostname)
            )
        if endpoint.get("hints") is not None:
            causes.extend(_validate_hints(endpoint["hints"], f"endpoints[{i}].hints"))
    return causes


def _validate_slice_ports(ports: Any) -> list[Cause]:
    if ports is None:
        return []
    if not isinstance(ports, list):
        return [invalid_value("ports", ports, "must be a list")]
    if len(ports) > MAX_PORTS:
        return [too_many("ports", len(ports), MAX_PORTS)]
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        base = f"ports[{i}]"
        name = port.get("name") or ""
        if name:
            causes.extend(
                invalid_value(f"{base}.name", name, msg) for msg in dns1123_label_errors(name)
            )
        if name in names:
            causes.append(duplicate(f"{base}.name", name))
        names.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            causes.append(required(f"{base}.protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(not_supported(f"{base}.protocol", protocol, PROTOCOLS))
        app_protocol = port.get("appProtocol")
        if app_protocol is not None:
            causes.extend(
                invalid_value(f"{base}.appProtocol", app_protocol, msg)
                for msg in qualified_name_errors(app_protocol)
            )
    return causes


def validate_endpoint_slice(obj: JSON, old: JSON | None) -> list[Cause]:
    """ValidateEndpointSliceCreate / ValidateEndpointSliceUpdate (metadata checked apart)."""
    causes: list[Cause] = []
    address_type = obj.get("addressType") or ""
    if not address_type:
        causes.append(required("addressType"))
    elif address_type not in ADDRESS_TYPES and not (old is not None and address_type == "IP"):
        causes.append(not_supported("addressType", address_type, ADDRESS_TYPES))
    same_type = old is not None and address_type == old.get("addressType")
    stored = old.get("endpoints") if old is not None and same_type else None
    causes.extend(
        _validate_endpoints(
            obj.get("endpoints"), address_type, stored if isinstance(stored, list) else None
        )
    )
    ports = obj.get("ports")
    if old is None or ports != old.get("ports"):  # stored ports passed these rules already
        causes.extend(_validate_slice_ports(ports))
    if old is not None and address_type != old.get("addressType"):
        causes.append(immutable("addressType", address_type))
    return causes


# ---------------------------------------------------------------------------------------------
# Other kinds: the rules that a controller's writes are likely to trip over


def _port_number_errors(path: str, value: Any) -> list[Cause]:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        return [invalid_value(path, value, "must be between 1 and 65535, inclusive")]
    return []


def _pod_ip_causes(obj: JSON, old: JSON | None) -> list[Cause]:
    """``status.podIPs`` (or ``status.podIP`` without them) as v1.36 checks them; unchanged
    values are not checked again (v1.36 ratchets: a pod written before keeps its IPs)."""
    status = obj.get("status") or {}
    old_status = (old or {}).get("status") or {}
    pod_ips = status.get("podIPs")
    if pod_ips:
        if pod_ips == old_status.get("podIPs"):
            return []
        entries = [(f"status.podIPs[{i}].ip", (e or {}).get("ip")) for i, e in enumerate(pod_ips)]
    elif status.get("podIP") and status.get("podIP") != old_status.get("podIP"):
        entries = [("status.podIP", status["podIP"])]
    else:
        return []
    causes: list[Cause] = []
    for path, ip in entries:
        error = pod_ip_error(ip) if isinstance(ip, str) else "must be a valid IP address"
        if error is not None:
            causes.append(invalid_value(path, ip, error))
    return causes


def validate_pod(obj: JSON, old: JSON | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = _pod_ip_causes(obj, old)
    if old is not None and spec == (old.get("spec") or {}):
        # An update that leaves the spec alone (a status or label write): the stored spec
        # passed these rules, and the update-only rules compare against an equal spec.
        return causes
    containers = spec.get("containers") or []
    if not containers:
        causes.append(required("spec.containers"))
    names: set[str] = set()
    for i, container in enumerate(containers):
        base = f"spec.containers[{i}]"
        name = container.get("name") or ""
        if not name:
            causes.append(required(f"{base}.name"))
        else:
            causes.extend(
                invalid_value(f"{base}.name", name, m) for m in dns1123_label_errors(name)
            )
            if name in names:
                causes.append(duplicate(f"{base}.name", name))
            names.add(name)
        if not container.get("image") and old is None:
            causes.append(required(f"{base}.image"))
        for j, port in enumerate(container.get("ports") or []):
            causes.extend(
                _port_number_errors(f"{base}.ports[{j}].containerPort", port.get("containerPort"))
            )
    if (
        old is not None
        and spec.get("nodeName") != (old.get("spec") or {}).get("nodeName")
        and (old.get("spec") or {}).get("nodeName")
    ):
        causes.append(
            forbidden(
                "spec",
                "pod updates may not change fields other than `spec.containers[*].image`, "
                "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, "
                "`spec.tolerations` (only additions to existing tolerations), "
                "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                "previously negative)",
            )
        )
    return causes


SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def validate_service(obj: JSON, old: JSON | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    service_type = spec.get("type", "ClusterIP")
    if service_type not in SERVICE_TYPES:
        causes.append(not_supported("spec.type", service_type, SERVICE_TYPES))
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    if not ports and service_type != "ExternalName" and not headless:
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        base = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(required(f"{base}.name"))
        elif name:
            causes.extend(
                invalid_value(f"{base}.name", name, m) for m in dns1123_label_errors(name)
            )
        if name in names:
            causes.append(duplicate(f"{base}.name", name))
        names.add(name)
        causes.extend(_port_number_errors(f"{base}.port", port.get("port")))
        protocol = port.get("protocol", "TCP")
        if protocol not in PROTOCOLS:
            causes.append(not_supported(f"{base}.protocol", protocol, PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, int) and not isinstance(target, bool):
            causes.extend(_port_number_errors(f"{base}.targetPort", target))
        elif isinstance(target, str) and not _IANA_SVC_NAME_RE.match(target):
            detail = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
            causes.append(invalid_value(f"{base}.targetPort", target, detail))
    causes.extend(validate_labels(spec.get("selector"), "spec.selector"))
    causes.extend(_validate_ip_families(spec))
    if old is None or (old.get("spec") or {}).get("externalIPs") != spec.get("externalIPs"):
        causes.extend(
            _strict_ip_causes("", "services", {"spec": {"externalIPs": spec.get("externalIPs")}})
        )
    if old is not None:
        old_spec = old.get("spec") or {}
        old_ip = old_spec.get("clusterIP")
        if (
            old_ip
            and spec.get("clusterIP")
            and spec.get("clusterIP") != old_ip
            and service_type != "ExternalName"
        ):
            causes.append(immutable("spec.clusterIP", spec.get("clusterIP")))
    return causes


IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")


def _validate_ip_families(spec: JSON) -> list[Cause]:
    causes: list[Cause] = []
    families = spec.get("ipFamilies") or []
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            causes.append(not_supported(f"spec.ipFamilies[{i}]", family, ("IPv4", "IPv6")))
        elif family in seen:
            causes.append(duplicate(f"spec.ipFamilies[{i}]", family))
        seen.add(family)
    if len(families) > 2:
        causes.append(invalid_value("spec.ipFamilies", families, "may specify no more than 2"))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        causes.append(not_supported("spec.ipFamilyPolicy", policy, IP_FAMILY_POLICIES))
    elif policy == "SingleStack" and len(families) > 1:
        causes.append(
            invalid_value(
                "spec.ipFamilyPolicy",
                policy,
                "must be RequireDualStack or PreferDualStack when multiple 'ipFamilies' are "
                "specified",
            )
        )
    return causes


def validate_lease(obj: JSON, old: JSON | None) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not isinstance(duration, int) or duration <= 0):
        causes.append(
            invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
        causes.append(
            invalid_value(
                "spec.leaseTransitions", transitions, "must be greater than or equal to 0"
            )
        )
    return causes


_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_workload(obj: JSON, old: JSON | None) -> list[Cause]:
    """apps/v1 Deployment and ReplicaSet: the rules a client meets in practice (a selector that
    matches the template's labels and cannot change, a non-negative replica count)."""
    from endpointslice_operator.testing.selectors import selector_from_match_labels

    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        causes.append(
            invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
        )
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        causes.append(required("spec.selector"))
        return causes
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        operator = (expression or {}).get("operator")
        if operator not in _SELECTOR_OPERATORS:
            causes.append(
                not_supported(
                    f"spec.selector.matchExpressions[{index}].operator",
                    operator,
                    _SELECTOR_OPERATORS,
                )
            )
    if causes:
        return causes
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector_from_match_labels(selector).matches(labels):
        causes.append(
            invalid_value(
                "spec.template.metadata.labels",
                labels,
                "`selector` does not match template `labels`",
            )
        )
    if old is not None and (old.get("spec") or {}).get("selector") != selector:
        causes.append(invalid_value("spec.selector", selector, "field is immutable"))
    if not ((spec.get("template") or {}).get("spec") or {}).get("containers"):
        causes.append(required("spec.template.spec.containers"))
    return causes


def validate_core_event(obj: JSON, old: JSON | None) -> list[Cause]:
    involved = obj.get("involvedObject") or {}
    namespace = (obj.get("metadata") or {}).get("namespace")
    involved_ns = involved.get("namespace")
    if involved_ns and involved_ns != namespace:
        return [
            invalid_value("involvedObject.namespace", involved_ns, "does not match event.namespace")
        ]
    return []


def validate_events_v1_event(obj: JSON, old: JSON | None) -> list[Cause]:
    causes: list[Cause] = []
    required_fields = ("eventTime", "reportingController", "reportingInstance", "action", "reason")
    causes.extend(required(field) for field in required_fields if not obj.get(field))
    event_type = obj.get("type")
    if event_type not in ("Normal", "Warning"):
        causes.append(not_supported("type", event_type or "", ("Normal", "Warning")))
    return causes


KIND_VALIDATORS: dict[tuple[str, str], Callable[[JSON, JSON | None], list[Cause]]] = {
    ("discovery.k8s.io", "endpointslices"): validate_endpoint_slice,
    ("", "pods"): validate_pod,
    ("", "services"): validate_service,
    ("", "endpoints"): validate_endpoints,
    ("coordination.k8s.io", "leases"): validate_lease,
    ("", "events"): validate_core_event,
    ("events.k8s.io", "events"): validate_events_v1_event,
    ("apps", "deployments"): validate_workload,
    ("apps", "replicasets"): validate_workload,
}
