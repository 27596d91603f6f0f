"""The control loops a bare kube-apiserver relies on: garbage collector, namespace lifecycle,
and the kubelet's final deletion of gracefully deleted Pods.

They react to committed events (a synchronous store listener only queues work) and act
asynchronously on the event loop, as kube-controller-manager does: promptly, but never inside
the request that caused them.
"""

from __future__ import annotations

import asyncio

from endpointslice_operator.testing.control_loop import ControlLoop
from endpointslice_operator.testing.resources import ResourceInfo
from endpointslice_operator.testing.store import (
    FOREGROUND_FINALIZER,
    NAMESPACE_FINALIZER,
    ORPHAN_FINALIZER,
    Store,
    format_timestamp,
)
from endpointslice_operator.testing.strategy import has_finalizers
from endpointslice_operator.testing.watch import ADDED, DELETED, Event

WorkItem = tuple[str, ResourceInfo, str, str, str]  # (action, resource, namespace, name, uid)
KUBELET = "kubelet"
NAMESPACE_SETTLE_SECONDS = 0.5
"""A deleted namespace stays Terminating at least this long (on the loop's clock), so a create
right after the DELETE gets kube-apiserver's 403 Forbidden, as it does from v1.36 while
kube-controller-manager's namespace controller has yet to see the deletion, discover the
namespace's kinds and empty it (it is not removed at once, then 404)."""


class Controllers(ControlLoop[WorkItem]):
    """Garbage collection, namespace deletion and graceful pod deletion for one store."""

    name = "controllers"

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self._terminating_since: dict[str, float] = {}
        store.add_listener(self._on_event)

    # -----------------------------------------------------------------------------------------
    # Event intake (synchronous, inside the store's commit)

    def _enqueue(self, action: str, info: ResourceInfo, namespace: str, name: str) -> None:
        self.enqueue((action, info, namespace, name, ""))

    def _on_event(self, event: Event) -> None:
        info, obj = event.info, event.obj
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", "") or "", meta["name"]
        uid = meta.get("uid", "")
        kubelet = (KUBELET, info, namespace, name, uid)
        if event.type == DELETED:
            self.cancel(kubelet)
            for dep_info, dep_ns, dep_name in self.store.dependents_of(uid):
                self._enqueue("collect", dep_info, dep_ns, dep_name)
            for ref in meta.get("ownerReferences") or []:
                located = self.store.locate(ref.get("uid", ""))
                if located is not None:
                    self._enqueue("owner", *located)
            if info.namespaced:
                self._enqueue("namespace", self.store.registry.lookup("namespaces"), "", namespace)
            return
        if meta.get("ownerReferences") and (
            event.type == ADDED
            or (event.old or {}).get("metadata", {}).get("ownerReferences")
            != meta["ownerReferences"]
        ):
            self._enqueue("collect", info, namespace, name)
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if FOREGROUND_FINALIZER in finalizers or ORPHAN_FINALIZER in finalizers:
                self._enqueue("owner", info, namespace, name)
            if info.key == "namespaces":
                self._enqueue("namespace", info, "", name)
            grace = meta.get("deletionGracePeriodSeconds") or 0
            old_meta = (event.old or {}).get("metadata") or {}
            if grace > 0 and grace != old_meta.get("deletionGracePeriodSeconds"):
                # A new or shortened grace period (other writes leave the countdown alone):
                # the kubelet deletes the pod for good when it is over.
                self.after(grace, kubelet)

    # -----------------------------------------------------------------------------------------
    # Work

    def sync(self, key: WorkItem) -> None:
        action, info, namespace, name, uid = key
        if action == "collect":
            self._collect(info, namespace, name)
        elif action == "owner":
            self._process_owner(info, namespace, name)
        elif action == KUBELET:
            # Fails with a conflict when the pod changed meanwhile (e.g. a finalizer was added).
            self.store.finish_graceful_deletion(info, namespace, name, uid)
        else:
            self._process_namespace(name)

    def _collect(self, info: ResourceInfo, namespace: str, name: str) -> None:
        """attemptToDeleteItem: delete a dependent whose owners are all gone, or drop the
        references to the missing owners when some owner still exists."""
        stored = self.store.get(info, namespace, name)
        if stored is None:
            return
        refs = stored["metadata"].get("ownerReferences") or []
        if not refs:
            return
        dangling = [ref for ref in refs if not self.store.owner_exists(ref.get("uid", ""))]
        if not dangling:
            return
        if len(dangling) == len(refs):
            if not stored["metadata"].get("deletionTimestamp"):
                self.store.api_delete(info, namespace, name, propagation_policy="Background")
            return
        stored["metadata"]["ownerReferences"] = [r for r in refs if r not in dangling]
        self.store.api_update(info, namespace, name, stored, privileged=True)

    def _process_owner(self, info: ResourceInfo, namespace: str, name: str) -> None:
        """Foreground deletion waits for dependents; orphaning strips their references."""
        owner = self.store.get(info, namespace, name)
        if owner is None or not owner["metadata"].get("deletionTimestamp"):
            return
        uid = owner["metadata"]["uid"]
        finalizers = owner["metadata"].get("finalizers") or []
        dependents = self.store.dependents_of(uid)
        if ORPHAN_FINALIZER in finalizers:
            for dep_info, dep_ns, dep_name in dependents:
                dependent = self.store.get(dep_info, dep_ns, dep_name)
                if dependent is None:
                    continue
                refs = dependent["metadata"].get("ownerReferences") or []
                dependent["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                if not dependent["metadata"]["ownerReferences"]:
                    del dependent["metadata"]["ownerReferences"]
                self.store.api_update(dep_info, dep_ns, dep_name, dependent, privileged=True)
            self.store.remove_finalizer(info, namespace, name, ORPHAN_FINALIZER)
        elif FOREGROUND_FINALIZER in finalizers:
            for dep_info, dep_ns, dep_name in dependents:
                dependent = self.store.get(dep_info, dep_ns, dep_name)
                if dependent is not None and not dependent["metadata"].get("deletionTimestamp"):
                    self.store.api_delete(
                        dep_info, dep_ns, dep_name, propagation_policy="Background"
                    )
            if not self.store.dependents_of(uid):
                self.store.remove_finalizer(info, namespace, name, FOREGROUND_FINALIZER)

    def _report_remaining(
        self,
        namespaces: ResourceInfo,
        name: str,
        remaining: dict[str, int],
        finalizers: dict[str, int],
    ) -> None:
        """The status conditions kube-controller-manager's namespace controller (v1.24) sets on
        a namespace it cannot finish yet, with its reasons and messages."""
        now = format_timestamp(self.store.clock())

        def condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
            return {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
            }

        content = ", ".join(
            f"{plural} has {n} resource instances" for plural, n in remaining.items()
        )
        held = ", ".join(f"{f} in {n} resource instances" for f, n in finalizers.items())
        conditions = [
            condition(
                "NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            condition(
                "NamespaceDeletionContentFailure", "False", "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            condition(
                "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                f"Some resources are remaining: {content}",
            ),
        ]  # fmt: skip
        if finalizers:
            conditions.append(
                condition(
                    "NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                    f"Some content in the namespace has finalizers remaining: {held}",
                )
            )  # fmt: skip
        namespace = self.store.get(namespaces, "", name)
        if namespace is None:
            return
        old = [
            (c.get("type"), c.get("message")) for c in namespace["status"].get("conditions") or []
        ]
        if old == [(c["type"], c["message"]) for c in conditions]:
            return
        namespace["status"]["conditions"] = conditions
        self.store.api_update(namespaces, "", name, namespace, subresource="status")

    def _process_namespace(self, name: str) -> None:
        """The namespace controller: empty a terminating namespace, then finalize it."""
        namespaces = self.store.registry.lookup("namespaces")
        namespace = self.store.get(namespaces, "", name)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        remaining: dict[str, int] = {}
        finalizers: dict[str, int] = {}
        for info in self.store.registry.resources:
            if not info.namespaced or info.storage:  # views share their storage's objects
                continue
            for (_, obj_name), stored in list(self.store.iter_stored(info, name)):
                remaining[info.plural] = remaining.get(info.plural, 0) + 1
                for finalizer in stored.obj["metadata"].get("finalizers") or ():
                    finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
                if not stored.obj["metadata"].get("deletionTimestamp"):
                    self.store.api_delete(info, name, obj_name, propagation_policy="Background")
        if remaining:
            self._report_remaining(namespaces, name, remaining, finalizers)
            return
        now = asyncio.get_running_loop().time()
        since = self._terminating_since.setdefault(name, now)
        if now - since < NAMESPACE_SETTLE_SECONDS:
            self.after(
                since + NAMESPACE_SETTLE_SECONDS - now, ("namespace", namespaces, "", name, "")
            )
            return
        self._terminating_since.pop(name, None)
        spec_finalizers = (namespace.get("spec") or {}).get("finalizers") or []
        if NAMESPACE_FINALIZER in spec_finalizers:
            namespace["spec"]["finalizers"] = [
                f for f in spec_finalizers if f != NAMESPACE_FINALIZER
            ]
            self.store.api_update(namespaces, "", name, namespace, subresource="finalize")
            namespace = self.store.get(namespaces, "", name)
        if namespace is not None and not has_finalizers(namespaces, namespace):
            self.store.api_delete(namespaces, "", name)
