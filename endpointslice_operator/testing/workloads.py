"""Minimal Deployment and ReplicaSet controllers, so that ``kubectl apply`` of an application,
``kubectl scale`` and ``kubectl rollout restart`` behave against the emulator as in a cluster.

What is modelled (after kube-controller-manager's ``deployment`` and ``replicaset``
controllers): one ReplicaSet per pod template, named ``<deployment>-<pod-template-hash>`` and
carrying that hash as a label; RollingUpdate with ``maxSurge``/``maxUnavailable`` (integers or
percentages), scaling old ReplicaSets down only as far as available pods allow; Recreate; pods
created from the template with a controller ownerReference and deleted (gracefully) when there
are too many, unready ones first; the status fields ``kubectl get``, ``kubectl rollout status``
and ``kubectl scale`` read. Not modelled: ``minReadySeconds`` (ready counts as available),
proportional scaling of several ReplicaSets in the middle of a rollout (the newest absorbs the
change), revision history cleanup, pausing and rollbacks.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from typing import Any

from endpointslice_operator.testing.control_loop import ControlLoop
from endpointslice_operator.testing.selectors import selector_from_match_labels
from endpointslice_operator.testing.store import Store, format_timestamp
from endpointslice_operator.testing.watch import DELETED, Event

JSON = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)

HASH_LABEL = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString: no vowels, no 0/1/3


def template_hash(template: JSON) -> str:
    """A stable, label-safe hash of a pod template (``pod-template-hash``)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SAFE_ALPHABET[byte % len(_SAFE_ALPHABET)] for byte in digest[:10])


def controller_of(obj: JSON, kind: str) -> JSON | None:
    """The ownerReference with ``controller: true`` of the given kind, if any."""
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == kind:
            return ref  # type: ignore[no-any-return]
    return None


def controlled(store: Store, owner: JSON, plural: str) -> list[JSON]:
    """The objects of ``plural`` in the owner's namespace whose controller is ``owner``."""
    uid = owner["metadata"]["uid"]
    namespace = owner["metadata"]["namespace"]
    found = []
    for info, ns, name in store.dependents_of(uid):
        if info.plural != plural or ns != namespace:
            continue
        obj = store.get(info, ns, name)
        if obj is not None and (controller_of(obj, owner["kind"]) or {}).get("uid") == uid:
            found.append(obj)
    return found


def _owner_reference(owner: JSON) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _scaled_value(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if isinstance(value, str) and value.endswith("%"):
        scaled = float(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value or 0)


def is_pod_active(pod: JSON) -> bool:
    """Counted by a ReplicaSet: not being deleted and not finished."""
    phase = (pod.get("status") or {}).get("phase")
    return not pod["metadata"].get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


def is_pod_ready(pod: JSON) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> JSON:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }


def _keep_transition_times(new: list[JSON], old: list[JSON]) -> list[JSON]:
    before = {c.get("type"): c for c in old}
    for condition in new:
        previous = before.get(condition["type"])
        if previous is not None and previous.get("status") == condition["status"]:
            condition["lastTransitionTime"] = previous.get("lastTransitionTime")
            if previous.get("reason") == condition["reason"]:
                condition["lastUpdateTime"] = previous.get("lastUpdateTime")
    return new


class _StoreLoop(ControlLoop[Key]):
    """A control loop fed by the store's committed events (see :meth:`_on_event`)."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        store.add_listener(self._on_event)

    def _on_event(self, event: Event) -> None:
        raise NotImplementedError


class ReplicaSetController(_StoreLoop):
    """Keeps ``spec.replicas`` active pods per ReplicaSet and reports them in its status."""

    name = "replicaset-controller"

    def _on_event(self, event: Event) -> None:
        meta = event.obj["metadata"]
        namespace = meta.get("namespace", "")
        if event.info.key == "replicasets.apps":
            self.enqueue((namespace, meta["name"]))
        elif event.info.key == "pods":
            ref = controller_of(event.obj, "ReplicaSet")
            if ref is not None:
                self.enqueue((namespace, ref["name"]))

    def sync(self, key: Key) -> None:
        namespace, name = key
        rs = self.store.get("replicasets", namespace, name)
        if rs is None or rs["metadata"].get("deletionTimestamp"):
            return
        spec = rs.get("spec") or {}
        selector = selector_from_match_labels(spec.get("selector"))
        active = [p for p in controlled(self.store, rs, "pods") if is_pod_active(p)]
        wanted = int(spec.get("replicas", 1))
        if len(active) < wanted:
            active.extend(self._create_pod(rs) for _ in range(wanted - len(active)))
        elif len(active) > wanted:
            # Delete the least useful first: unscheduled, then not ready, then the newest.
            def rank(pod: JSON) -> tuple[bool, bool, str]:
                scheduled = bool((pod.get("spec") or {}).get("nodeName"))
                created = str(pod["metadata"].get("creationTimestamp", ""))
                inverted = "".join(chr(0x10FFFF - ord(c)) for c in created)
                return (scheduled, is_pod_ready(pod), inverted)

            for pod in sorted(active, key=rank)[: len(active) - wanted]:
                self.store.delete(
                    "pods", namespace, pod["metadata"]["name"], grace_period_seconds=None
                )
                active.remove(pod)
        ready = sum(1 for p in active if is_pod_ready(p))
        status = {
            "replicas": len(active),
            "fullyLabeledReplicas": sum(
                1 for p in active if selector.matches(p["metadata"].get("labels"))
            ),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        if not ready:
            del status["readyReplicas"], status["availableReplicas"]
        if rs.get("status") != status:
            rs["status"] = status
            self.store.update(rs, subresource="status")

    def _create_pod(self, rs: JSON) -> JSON:
        template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        pod_meta: JSON = {
            "generateName": f"{rs['metadata']['name']}-",
            "namespace": rs["metadata"]["namespace"],
            "labels": meta.get("labels") or {},
            "ownerReferences": [_owner_reference(rs)],
        }
        if meta.get("annotations"):
            pod_meta["annotations"] = meta["annotations"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": pod_meta,
            "spec": template.get("spec") or {},
            "status": {"phase": "Pending"},  # what the API server's create would give it
        }
        return self.store.create(pod)


class DeploymentController(_StoreLoop):
    """Rolls a Deployment's pods out through ReplicaSets and reports progress in its status."""

    name = "deployment-controller"

    def _on_event(self, event: Event) -> None:
        meta = event.obj["metadata"]
        namespace = meta.get("namespace", "")
        if event.info.key == "deployments.apps" and event.type != DELETED:
            self.enqueue((namespace, meta["name"]))
        elif event.info.key == "replicasets.apps":
            ref = controller_of(event.obj, "Deployment")
            if ref is not None:
                self.enqueue((namespace, ref["name"]))

    def sync(self, key: Key) -> None:
        namespace, name = key
        deployment = self.store.get("deployments", namespace, name)
        if deployment is None or deployment["metadata"].get("deletionTimestamp"):
            return
        spec = deployment.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        template_hash_ = template_hash(spec.get("template") or {})
        owned = sorted(
            controlled(self.store, deployment, "replicasets"),
            key=lambda r: str(r["metadata"].get("creationTimestamp", "")),
        )
        new = next(
            (r for r in owned if r["metadata"].get("labels", {}).get(HASH_LABEL) == template_hash_),
            None,
        )
        old = [r for r in owned if r is not new]
        if new is None:
            new = self._create_replica_set(deployment, template_hash_, owned)
        strategy = spec.get("strategy") or {}
        if strategy.get("type") == "Recreate":
            self._recreate(replicas, new, old)
        else:
            self._roll(replicas, strategy.get("rollingUpdate") or {}, new, old)
        self._report(deployment, replicas, strategy, new, old)

    def _create_replica_set(self, deployment: JSON, hash_: str, owned: list[JSON]) -> JSON:
        spec = deployment.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = hash_
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = hash_
        revisions = [
            int(r["metadata"].get("annotations", {}).get(REVISION_ANNOTATION, 0)) for r in owned
        ]
        return self.store.create(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{deployment['metadata']['name']}-{hash_}",
                    "namespace": deployment["metadata"]["namespace"],
                    "labels": template["metadata"]["labels"],
                    "annotations": {REVISION_ANNOTATION: str(max(revisions, default=0) + 1)},
                    "ownerReferences": [_owner_reference(deployment)],
                },
                "spec": {"replicas": 0, "selector": selector, "template": template},
            }
        )

    def _scale(self, rs: JSON, replicas: int) -> None:
        if (rs.get("spec") or {}).get("replicas") != replicas:
            rs["spec"]["replicas"] = replicas
            updated = self.store.update(rs)
            rs.clear()
            rs.update(updated)

    def _recreate(self, replicas: int, new: JSON, old: list[JSON]) -> None:
        for rs in old:
            self._scale(rs, 0)
        if all(int((rs.get("status") or {}).get("replicas", 0)) == 0 for rs in old):
            self._scale(new, replicas)

    def _roll(self, replicas: int, rolling: JSON, new: JSON, old: list[JSON]) -> None:
        surge = _scaled_value(rolling.get("maxSurge", "25%"), replicas, round_up=True)
        unavailable = _scaled_value(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1

        def spec_of(rs: JSON) -> int:
            return int((rs.get("spec") or {}).get("replicas", 0))

        def available_of(rs: JSON) -> int:
            return int((rs.get("status") or {}).get("availableReplicas", 0))

        # Scale the new ReplicaSet up as far as the surge allows (or straight down).
        if spec_of(new) > replicas:
            self._scale(new, replicas)
        else:
            room = replicas + surge - sum(spec_of(r) for r in (new, *old))
            if room > 0:
                self._scale(new, min(replicas, spec_of(new) + room))
        # Scale old ReplicaSets down as far as availability allows: unhealthy pods first.
        min_available = replicas - unavailable
        new_unavailable = spec_of(new) - available_of(new)
        budget = sum(spec_of(r) for r in (new, *old)) - min_available - new_unavailable
        for rs in old:
            if budget <= 0:
                break
            unhealthy = min(spec_of(rs) - available_of(rs), budget)
            if unhealthy > 0:
                self._scale(rs, spec_of(rs) - unhealthy)
                budget -= unhealthy
        excess = sum(available_of(r) for r in (new, *old)) - min_available
        for rs in old:
            if excess <= 0:
                break
            down = min(spec_of(rs), excess)
            if down > 0:
                self._scale(rs, spec_of(rs) - down)
                excess -= down

    def _report(
        self, deployment: JSON, replicas: int, strategy: JSON, new: JSON, old: list[JSON]
    ) -> None:
        everything = (new, *old)

        def total(field: str) -> int:
            return sum(int((rs.get("status") or {}).get(field, 0)) for rs in everything)

        available = total("availableReplicas")
        current = total("replicas")
        unavailable_allowed = 0
        if strategy.get("type") != "Recreate":
            rolling = strategy.get("rollingUpdate") or {}
            unavailable_allowed = _scaled_value(
                rolling.get("maxUnavailable", "25%"), replicas, round_up=False
            )
        updated = int((new.get("status") or {}).get("replicas", 0))
        complete = (
            updated == replicas
            and current == replicas
            and available == replicas
            and all(int((rs.get("spec") or {}).get("replicas", 0)) == 0 for rs in old)
        )
        now = format_timestamp(self.store.clock())
        new_name = new["metadata"]["name"]
        conditions = [
            _condition(
                "Available",
                "True" if available >= replicas - unavailable_allowed else "False",
                "MinimumReplicasAvailable"
                if available >= replicas - unavailable_allowed
                else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if available >= replicas - unavailable_allowed
                else "Deployment does not have minimum availability.",
                now,
            ),
            _condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
                f'ReplicaSet "{new_name}" has successfully progressed.'
                if complete
                else f'ReplicaSet "{new_name}" is progressing.',
                now,
            ),
        ]
        previous = deployment.get("status") or {}
        status: JSON = {
            "observedGeneration": deployment["metadata"].get("generation", 1),
            "replicas": current,
            "updatedReplicas": updated,
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, replicas - available),
            "conditions": _keep_transition_times(conditions, previous.get("conditions") or []),
        }
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
            if not status[field]:
                del status[field]
        if not status["unavailableReplicas"]:
            del status["unavailableReplicas"]
        if previous != status:
            deployment["status"] = status
            self.store.update(deployment, subresource="status")
