"""What kube-proxy programs for a Service port, read from its rules in either proxy mode.

kube-proxy names a Service port ``<namespace>/<service>:<port name>`` (:func:`service_key`).

**iptables mode**, read from ``iptables-save``: rules carry the name in ``--comment`` matches:

* ``nat`` table: ``-A KUBE-SERVICES ... --comment "ns/svc:http cluster IP" ... -j KUBE-SVC-X``,
  then ``-A KUBE-SVC-X ... -j KUBE-SEP-Y`` per endpoint, and ``-A KUBE-SEP-Y ... -j DNAT
  --to-destination IP:PORT``: the endpoints that connections to the ClusterIP are sent to;
* ``filter`` table: ``-A KUBE-SERVICES ... --comment "ns/svc:http has no endpoints" ... -j
  REJECT`` when the Service has no usable endpoint: connections to it are refused.

**nftables mode**, read from ``nft -j list ruleset`` (tables ``ip kube-proxy`` and ``ip6
kube-proxy``): the name is in chain names and element comments:

* map ``service-ips``: ``<ClusterIP> . tcp . 80 : goto service-<hash>-ns/svc/tcp/http``, and
  that chain DNATs to the endpoints (kube-proxy v1.36: one rule, ``dnat ip to numgen random mod
  N map { 0 : IP . PORT, ... }``; older ones, and session affinity, jump to one
  ``endpoint-<hash>-...`` chain per endpoint, each with its own ``dnat``, which is followed too);
* map ``no-endpoint-services``: ``<ClusterIP> . tcp . 80 comment "ns/svc:http" : goto
  reject-chain`` when the Service has no usable endpoint.

  Only chains the ``service-ips`` map reaches count: kube-proxy flushes the chain of a Service
  port that is gone and deletes it on a later sync.

:func:`programmed` turns one dump into :data:`REJECTED` (connections refused), :data:`ABSENT` (no
rule at all: kube-proxy ignores the Service, or has not seen it yet), or the sorted endpoint IPs,
the same value for the same state in either mode (but for session affinity, where the iptables
reading lists each endpoint once per rule that jumps to it, the nftables one once). It is pure (a
string in, a value out), so it is tested on captured dumps without root.

``python -m endpointslice_operator.testing.kube_proxy_rules [--mode nftables] KEY...``, run inside
a node's network namespace, polls the rules (:func:`dump_command`) in a loop and prints one JSON
line per change of a key's rules, stamped with ``time.monotonic()`` (see
:meth:`.dataplane.Topology.watch_rules`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any, Final, Literal, cast

__all__ = [
    "ABSENT",
    "PROXY_MODES",
    "REJECTED",
    "Programmed",
    "ProxyMode",
    "dump_command",
    "programmed",
    "service_key",
]

REJECTED: Final = "rejected"
"""A REJECT rule: the Service exists for kube-proxy and has no endpoint to send to."""
ABSENT: Final = "absent"
"""No rule names the Service port (ignored by kube-proxy, or not synced yet)."""

Programmed = tuple[str, ...] | str
"""The endpoint IPs (sorted, possibly repeated for several ports) or REJECTED / ABSENT."""

ProxyMode = Literal["iptables", "nftables"]
"""kube-proxy's ``--proxy-mode`` on Linux, of those this module reads."""
PROXY_MODES: Final[tuple[ProxyMode, ...]] = ("iptables", "nftables")

_NFT_TABLE = "kube-proxy"
# service-<8 characters of hash>-<namespace>/<name>/<protocol>/<port name>
_NFT_SERVICE_CHAIN = re.compile(r"^service-[A-Z0-9]+-(?P<svc>[^/]+/[^/]+)/[a-z]+/(?P<port>.*)$")


def service_key(namespace: str, name: str, port_name: str = "") -> str:
    """kube-proxy's name of a Service port in its rule comments."""
    return f"{namespace}/{name}:{port_name}" if port_name else f"{namespace}/{name}"


def dump_command(mode: ProxyMode) -> list[str]:
    """The command that prints the rules :func:`programmed` reads, for ``mode``."""
    return ["iptables-save"] if mode == "iptables" else ["nft", "-j", "list", "ruleset"]


def programmed(dump: str, key: str, mode: ProxyMode = "iptables") -> Programmed:
    """What connections to the ClusterIP of Service port ``key`` are sent to, per ``dump`` (the
    output of :func:`dump_command` for ``mode``)."""
    if mode == "nftables":
        return _nft_programmed(dump, key)
    return _iptables_programmed(dump, key)


# -- iptables ------------------------------------------------------------------------------------


def _comment(key: str, suffix: str) -> str:
    # iptables-save quotes comments with spaces; tolerate both forms.
    return r'--comment "?' + re.escape(f"{key} {suffix}") + r'"?\s'


def _iptables_programmed(dump: str, key: str) -> Programmed:
    if re.search(_comment(key, "has no endpoints") + r".*-j REJECT", dump):
        return REJECTED
    match = re.search(
        r"^-A KUBE-SERVICES .*" + _comment(key, "cluster IP") + r".*-j (KUBE-SVC-\w+)\s*$",
        dump,
        re.M,
    )
    if match is None:
        return ABSENT
    chain = match.group(1)
    ips = []
    for sep in re.findall(rf"^-A {chain} .*-j (KUBE-SEP-\w+)\s*$", dump, re.M):
        target = re.search(
            rf"^-A {sep} .*-j DNAT .*--to-destination ([0-9a-fA-F.:\[\]]+):\d+\s*$", dump, re.M
        )
        if target is not None:
            ips.append(target.group(1).strip("[]"))
    return tuple(sorted(ips))


# -- nftables ------------------------------------------------------------------------------------


def _nft_objects(dump: str) -> list[dict[str, Any]]:
    """The ``nftables`` array of ``nft -j`` output, kube-proxy's tables only."""
    objects = cast(list[dict[str, Any]], json.loads(dump).get("nftables") or [])
    return [
        obj
        for obj in objects
        for body in obj.values()
        if isinstance(body, dict) and body.get("table") == _NFT_TABLE
    ]


def _key_of_chain(chain: str) -> str | None:
    match = _NFT_SERVICE_CHAIN.match(chain)
    if match is None:
        return None
    return f"{match['svc']}:{match['port']}" if match["port"] else match["svc"]


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object nested in ``node`` (``node`` itself first)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _dnat_ips(dnat: dict[str, Any]) -> list[str]:
    """The destination addresses of one ``dnat`` statement: ``addr`` a literal address, or a
    map (``numgen ... map { 0 : IP . PORT, ... }``) whose values are ``[IP, PORT]`` concats."""
    addr = dnat.get("addr")
    if isinstance(addr, str):
        return [addr]
    ips = []
    for node in _walk(addr):
        concat = node.get("concat")
        if isinstance(concat, list) and concat and isinstance(concat[0], str):
            ips.append(concat[0])
    return ips


def _nft_programmed(dump: str, key: str) -> Programmed:
    objects = _nft_objects(dump)
    rules: dict[tuple[str, str], list[dict[str, Any]]] = {}
    entry_chains: list[tuple[str, str]] = []
    for obj in objects:
        if "rule" in obj:
            rule = obj["rule"]
            rules.setdefault((rule["family"], rule["chain"]), []).append(rule)
        elif "map" in obj:
            nft_map = obj["map"]
            for element in nft_map.get("elem") or []:
                if not (
                    isinstance(element, list) and len(element) == 2 and isinstance(element[1], dict)
                ):
                    continue  # a set's element, or a map that holds no verdicts
                value, verdict = element
                comment = value.get("elem", {}).get("comment") if isinstance(value, dict) else None
                target = (verdict.get("goto") or verdict.get("jump") or {}).get("target")
                name = nft_map["name"]
                if name == "no-endpoint-services" and comment == key and target == "reject-chain":
                    return REJECTED
                if (
                    name == "service-ips"
                    and isinstance(target, str)
                    and _key_of_chain(target) == key
                ):
                    entry_chains.append((nft_map["family"], target))
    if not entry_chains:
        return ABSENT
    ips: list[str] = []
    seen: set[tuple[str, str]] = set()
    pending = list(dict.fromkeys(entry_chains))
    while pending:
        chain = pending.pop()
        if chain in seen:
            continue
        seen.add(chain)
        family = chain[0]
        for rule in rules.get(chain, []):
            for node in _walk(rule.get("expr")):
                if "dnat" in node and isinstance(node["dnat"], dict):
                    ips.extend(_dnat_ips(node["dnat"]))
                for jump in ("goto", "jump"):
                    target = (node.get(jump) or {}).get("target") if jump in node else None
                    if isinstance(target, str) and target.startswith("endpoint-"):
                        pending.append((family, target))
    return tuple(sorted(ips))


# -- watching ------------------------------------------------------------------------------------


def _watch(keys: list[str], mode: ProxyMode) -> None:
    """Poll the rules (in the current network namespace) as fast as they are printed and print
    a JSON line ``{"t": <monotonic s>, "key", "rules"}`` whenever a key's rules change."""
    last: dict[str, Programmed | None] = dict.fromkeys(keys)
    command = dump_command(mode)
    while True:
        done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=30)
        dump = done.stdout
        now = time.monotonic()
        for key in keys:
            rules = programmed(dump, key, mode)
            if rules != last[key]:
                last[key] = rules
                line = {"t": now, "key": key, "rules": rules}
                sys.stdout.write(json.dumps(line) + "\n")
                sys.stdout.flush()


def _main(argv: list[str]) -> None:
    mode: ProxyMode = "iptables"
    if argv[:1] == ["--mode"]:
        if argv[1] not in PROXY_MODES:
            raise SystemExit(f"--mode: one of {', '.join(PROXY_MODES)}")
        mode, argv = argv[1], argv[2:]
    _watch(argv, mode)


if __name__ == "__main__":  # pragma: no cover - run inside a node namespace by dataplane.py
    _main(sys.argv[1:])
