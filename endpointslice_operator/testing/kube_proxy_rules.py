"""What kube-proxy (iptables mode) programs for a Service port, read from ``iptables-save``.

kube-proxy names its rules by ``<namespace>/<service>:<port name>`` in ``--comment`` matches:

* ``nat`` table: ``-A KUBE-SERVICES ... --comment "ns/svc:http cluster IP" ... -j KUBE-SVC-X``,
  then ``-A KUBE-SVC-X ... -j KUBE-SEP-Y`` per endpoint, and ``-A KUBE-SEP-Y ... -j DNAT
  --to-destination IP:PORT``: the endpoints that connections to the ClusterIP are sent to;
* ``filter`` table: ``-A KUBE-SERVICES ... --comment "ns/svc:http has no endpoints" ... -j
  REJECT`` when the Service has no usable endpoint: connections to it are refused.

:func:`programmed` turns one dump into :data:`REJECTED` (a REJECT rule), :data:`ABSENT` (no rule
at all: kube-proxy ignores the Service, or has not seen it yet), or the sorted endpoint IPs. It is
pure (a string in, a value out), so it is tested on captured dumps without root.

``python -m endpointslice_operator.testing.kube_proxy_rules KEY...``, run inside a node's network
namespace, polls ``iptables-save`` in a loop and prints one JSON line per change of a key's
rules, stamped with ``time.monotonic()`` (see :meth:`.dataplane.Topology.watch_rules`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Final

__all__ = ["ABSENT", "REJECTED", "Programmed", "programmed", "service_key"]

REJECTED: Final = "rejected"
"""A REJECT rule: the Service exists for kube-proxy and has no endpoint to send to."""
ABSENT: Final = "absent"
"""No rule names the Service port (ignored by kube-proxy, or not synced yet)."""

Programmed = tuple[str, ...] | str
"""The endpoint IPs (sorted, possibly repeated for several ports) or REJECTED / ABSENT."""


def service_key(namespace: str, name: str, port_name: str = "") -> str:
    """kube-proxy's name of a Service port in its rule comments."""
    return f"{namespace}/{name}:{port_name}" if port_name else f"{namespace}/{name}"


def _comment(key: str, suffix: str) -> str:
    # iptables-save quotes comments with spaces; tolerate both forms.
    return r'--comment "?' + re.escape(f"{key} {suffix}") + r'"?\s'


def programmed(dump: str, key: str) -> Programmed:
    """What connections to the ClusterIP of Service port ``key`` are sent to, per ``dump``."""
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


def _watch(keys: list[str]) -> None:
    """Poll ``iptables-save`` (in the current network namespace) as fast as it answers and
    print a JSON line ``{"t": <monotonic s>, "key", "rules"}`` whenever a key's rules change."""
    last: dict[str, Programmed | None] = dict.fromkeys(keys)
    while True:
        dump = subprocess.run(
            ["iptables-save"], capture_output=True, text=True, check=True, timeout=30
        ).stdout
        now = time.monotonic()
        for key in keys:
            rules = programmed(dump, key)
            if rules != last[key]:
                last[key] = rules
                line = {"t": now, "key": key, "rules": rules}
                sys.stdout.write(json.dumps(line) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":  # pragma: no cover - run inside a node namespace by dataplane.py
    _watch(sys.argv[1:])
