"""Simulated nodes: the emulator as scheduler and kubelet of ``N`` Ready Nodes in zones.

With ``Emulator(nodes=N)`` (``endpointslice-operator emulator --nodes N``) the emulator creates
``node-1`` ... ``node-N``, spread round-robin over ``zone-a``, ``zone-b`` and ``zone-c``, and
then, like a scheduler and a kubelet would:

* binds every pending pod without ``spec.nodeName`` to the simulated node with the fewest pods;
* ``start_delay`` seconds after a pod lands on a simulated node, gives it an IP from the node's
  pod CIDR (``10.244.<n>.0/24``), and marks it Running with its containers started and ready;
* keeps the pod's ``Ready`` condition true only while every readiness gate's condition is true
  (``spec.readinessGates``: some other controller sets those), re-checking when they change;
* leaves deletion to the API's grace period: a deleted pod is Terminating for its
  ``terminationGracePeriodSeconds`` and then removed (see :mod:`.gc`).

Readiness probes are not run (a started container counts as ready), and pods bound to nodes the
simulator did not create keep whatever status they were given.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from endpointslice_operator.testing.control_loop import ControlLoop
from endpointslice_operator.testing.errors import ApiError
from endpointslice_operator.testing.store import Store, format_timestamp
from endpointslice_operator.testing.watch import DELETED, Event

JSON = dict[str, Any]
Key = tuple[str, str, str]  # (action, namespace, name)

ZONES = ("zone-a", "zone-b", "zone-c")
REGION = "region-1"
KUBELET_VERSION = "v1.36.2-emulator"
DEFAULT_START_DELAY = 1.0
SCHEDULE, START, READINESS = "schedule", "start", "readiness"


def node_name(index: int) -> str:
    return f"node-{index}"


def simulated_node(index: int, zones: tuple[str, ...] = ZONES) -> JSON:
    """Node ``node-<index>`` (1-based): Ready, in ``zones[(index-1) % len(zones)]``."""
    name = node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zones[(index - 1) % len(zones)],
                "topology.kubernetes.io/region": REGION,
            },
        },
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "addresses": [
                {"type": "InternalIP", "address": f"172.18.0.{index + 1}"},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status (simulated by the emulator)",
                }
            ],
            "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "operatingSystem": "linux"},
        },
    }


def _condition(kind: str, ready: bool, now: str, reason: str = "") -> JSON:
    condition: JSON = {"type": kind, "status": "True" if ready else "False"}
    if reason:
        condition["reason"] = reason
    condition["lastProbeTime"] = None
    condition["lastTransitionTime"] = now
    return condition


class SimulatedNodes(ControlLoop[Key]):
    """Scheduler and kubelet for the nodes it created (see the module docstring)."""

    name = "simulated-nodes"

    def __init__(
        self,
        store: Store,
        count: int,
        *,
        start_delay: float = DEFAULT_START_DELAY,
        zones: tuple[str, ...] = ZONES,
    ) -> None:
        super().__init__()
        if count < 0:
            raise ValueError(f"the number of nodes must not be negative, got {count}")
        self.store = store
        self.start_delay = start_delay
        self.nodes: dict[str, ipaddress.IPv4Network] = {}
        self._host_ips: dict[str, str] = {}
        self._next_ip: dict[str, int] = {}
        self._free_ips: dict[str, list[str]] = {}
        self._ips: dict[str, tuple[str, str]] = {}  # pod uid -> (node, ip)
        self._started: set[str] = set()  # uids with a start pending or done
        for index in range(1, count + 1):
            node = simulated_node(index, zones)
            name = node["metadata"]["name"]
            if store.get("nodes", None, name) is None:
                store.create(node)
            self.nodes[name] = ipaddress.IPv4Network(node["spec"]["podCIDR"])
            self._host_ips[name] = node["status"]["addresses"][0]["address"]
            self._next_ip[name] = 2
            self._free_ips[name] = []
        store.add_listener(self._on_event)

    async def start(self) -> None:
        await super().start()
        for pod in self.store.list("pods"):  # pods created or loaded before the start
            self._consider(pod)

    # -- event intake ------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        if event.info.key != "pods":
            return
        if event.type == DELETED:
            self._forget(event.obj)
            return
        self._consider(event.obj, event.old)

    def _consider(self, pod: JSON, old: JSON | None = None) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        key = (meta.get("namespace", ""), meta["name"])
        if meta.get("deletionTimestamp"):
            return
        node = spec.get("nodeName")
        if not node:
            if self.nodes:
                self.enqueue((SCHEDULE, *key))
            return
        if node not in self.nodes:
            return
        phase = (pod.get("status") or {}).get("phase")
        if phase in (None, "Pending") and meta["uid"] not in self._started:
            self._started.add(meta["uid"])
            self.after(self.start_delay, (START, *key))
        elif (
            phase == "Running"
            and old is not None
            and _gates(pod)
            and (old.get("status") or {}).get("conditions") != pod["status"].get("conditions")
        ):
            self.enqueue((READINESS, *key))

    def _forget(self, pod: JSON) -> None:
        meta = pod["metadata"]
        self.cancel((START, meta.get("namespace", ""), meta["name"]))
        self._started.discard(meta["uid"])
        placed = self._ips.pop(meta["uid"], None)
        if placed is not None:
            node, ip = placed
            self._free_ips[node].append(ip)

    # -- work --------------------------------------------------------------------------------

    def sync(self, key: Key) -> None:
        action, namespace, name = key
        pod = self.store.get("pods", namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        if action == SCHEDULE:
            self._schedule(pod)
        elif action == START:
            self._start(pod)
        else:
            self._refresh_readiness(pod)

    def _schedule(self, pod: JSON) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            return
        load = dict.fromkeys(self.nodes, 0)
        for other in self.store.list("pods"):
            node = (other.get("spec") or {}).get("nodeName")
            if node in load:
                load[node] += 1
        chosen = min(load, key=lambda n: (load[n], n))
        pod["spec"]["nodeName"] = chosen
        now = format_timestamp(self.store.clock())
        status = pod.setdefault("status", {})
        status["conditions"] = [_condition("PodScheduled", True, now)]
        self.store.update(pod)

    def _allocate_ip(self, node: str) -> str:
        if self._free_ips[node]:
            return self._free_ips[node].pop(0)
        network = self.nodes[node]
        offset = self._next_ip[node]
        if offset >= network.num_addresses - 1:
            raise ApiError(500, f"the pod CIDR {network} of {node} is exhausted")
        self._next_ip[node] = offset + 1
        return str(network.network_address + offset)

    def _start(self, pod: JSON) -> None:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        status = pod.get("status") or {}
        if status.get("phase") not in (None, "Pending"):
            return
        node = spec["nodeName"]
        ip = self._allocate_ip(node)
        self._ips[meta["uid"]] = (node, ip)
        host_ip = self._host_ips[node]
        now = format_timestamp(self.store.clock())
        containers = [
            {
                "name": c.get("name", ""),
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": f"emulator://{meta['uid']}-{c.get('name', '')}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in spec.get("containers") or []
        ]
        ready = _gates_pass(pod)
        pod["status"] = {
            "phase": "Running",
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "qosClass": "BestEffort",
            "conditions": [
                _condition("PodReadyToStartContainers", True, now),
                _condition("Initialized", True, now),
                _condition("Ready", ready, now, "" if ready else "ReadinessGatesNotReady"),
                _condition("ContainersReady", True, now),
                _condition("PodScheduled", True, now),
                *[c for c in status.get("conditions") or [] if c.get("type") in _gates(pod)],
            ],
            "containerStatuses": containers,
        }
        self.store.update(pod, subresource="status")

    def _refresh_readiness(self, pod: JSON) -> None:
        conditions = (pod.get("status") or {}).get("conditions") or []
        ready = _gates_pass(pod)
        for condition in conditions:
            if condition.get("type") == "Ready" and (condition.get("status") == "True") != ready:
                now = format_timestamp(self.store.clock())
                condition.update(
                    _condition("Ready", ready, now, "" if ready else "ReadinessGatesNotReady")
                )
                if ready:
                    condition.pop("reason", None)
                self.store.update(pod, subresource="status")
                return


def _gates(pod: JSON) -> set[str]:
    return {
        gate.get("conditionType", "")
        for gate in (pod.get("spec") or {}).get("readinessGates") or []
    }


def _gates_pass(pod: JSON) -> bool:
    """Every readiness gate's condition is present and true (containers count as ready)."""
    status = {
        c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []
    }
    return all(status.get(gate) == "True" for gate in _gates(pod))
