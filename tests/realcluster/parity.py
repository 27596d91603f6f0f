"""Twin Services on the same pods, one written by kube-controller-manager, one by the operator.

``Twins(kube, ns, name)`` creates Service ``<name>-kcm`` with ``spec.selector`` (kube-controller-
manager's EndpointSlice controller writes its slices; it is not opted in) and ``<name>-eso``,
selectorless and opted in with the same selector in the annotation (the operator writes its
slices). Every pod change then reaches both, and :meth:`Twins.differences` compares what they
publish: per pod name the addresses, ready / serving / terminating, nodeName, zone and hostname;
the topology hints (``forZones`` and ``forNodes``); the packing (multiset of slice sizes); the
ports and address type of each slice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.realcluster import objects as o
from tests.realcluster.kube import JSON, KCM, OURS, Kube, eventually


def hints_view(slices: list[JSON]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]] | None]:
    """pod name -> (forZones names, forNodes names), or None without hints."""
    view: dict[str, tuple[tuple[str, ...], tuple[str, ...]] | None] = {}
    for item in slices:
        for endpoint in item.get("endpoints") or []:
            name = (endpoint.get("targetRef") or {}).get("name", "")
            hints = endpoint.get("hints")
            view[name] = (
                None
                if hints is None
                else (
                    tuple(sorted(h["name"] for h in hints.get("forZones") or [])),
                    tuple(sorted(h["name"] for h in hints.get("forNodes") or [])),
                )
            )
    return view


def slice_shape(slices: list[JSON]) -> dict[str, Any]:
    return {
        "endpoints": o.endpoint_view(slices),
        "hints": hints_view(slices),
        "sizes": sorted(Counter(len(s.get("endpoints") or []) for s in slices).items()),
        "ports": sorted(
            (
                s["addressType"],
                tuple(
                    sorted(
                        (p.get("name", ""), p.get("port"), p.get("protocol"))
                        for p in s["ports"] or []
                    )
                ),
            )
            for s in slices
            if s.get("endpoints")
        ),
    }


def diff(kcm: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    out = []
    for pod in sorted(set(kcm["endpoints"]) | set(ours["endpoints"])):
        a, b = kcm["endpoints"].get(pod), ours["endpoints"].get(pod)
        if a != b:
            out.append(f"endpoint {pod}: kcm={a} ours={b}")
    for pod in sorted(set(kcm["hints"]) | set(ours["hints"])):
        a, b = kcm["hints"].get(pod), ours["hints"].get(pod)
        if a != b:
            out.append(f"hints of {pod}: kcm={a} ours={b}")
    for key in ("sizes", "ports"):
        if kcm[key] != ours[key]:
            out.append(f"{key}: kcm={kcm[key]} ours={ours[key]}")
    return out


class Twins:
    def __init__(self, kube: Kube, ns: str, name: str, selector: dict[str, str]) -> None:
        self.kube, self.ns, self.name, self.selector = kube, ns, name, selector

    @property
    def kcm(self) -> str:
        return f"{self.name}-kcm"

    @property
    def ours(self) -> str:
        return f"{self.name}-eso"

    async def create(self, **spec: Any) -> None:
        if spec.get("clusterIP") == "None":
            # kube-apiserver defaults a headless Service *without* a selector to
            # RequireDualStack (IPv4 and IPv6) and one with a selector to SingleStack; the
            # reconciler then keeps an IPv6 placeholder slice for the selectorless twin, as
            # upstream's would. Same families on both, so that they differ only in who writes.
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("ipFamilies", ["IPv4"])
        text = ",".join(f"{k}={v}" for k, v in sorted(self.selector.items()))
        await o.service(self.kube, self.ns, self.kcm, selector=self.selector, opt_in=False, **spec)
        await o.service(self.kube, self.ns, self.ours, annotations={o.SELECTOR: text}, **spec)

    async def patch_spec(self, spec: JSON, selector: dict[str, str] | None = None) -> None:
        """The same spec change on both (``selector``: a new selector for both)."""
        kcm_spec = dict(spec)
        annotations: JSON = {}
        if selector is not None:
            self.selector = selector
            kcm_spec["selector"] = selector
            annotations[o.SELECTOR] = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        base = f"/api/v1/namespaces/{self.ns}/services"
        await self.kube.patch(f"{base}/{self.kcm}", {"spec": kcm_spec})
        body: JSON = {"spec": spec}
        if annotations:
            body["metadata"] = {"annotations": annotations}
        await self.kube.patch(f"{base}/{self.ours}", body)

    async def shapes(self) -> tuple[dict[str, Any], dict[str, Any]]:
        kcm = slice_shape(await self.kube.slices(self.ns, self.kcm, manager=KCM))
        ours = slice_shape(await self.kube.slices(self.ns, self.ours, manager=OURS))
        return kcm, ours

    async def agree(
        self,
        expect_pods: set[str] | None = None,
        timeout: float = 60,
        *,
        ready: tuple[str, bool] | None = None,
        expect: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """Wait until both publish the same (and, if given, exactly ``expect_pods``, and pod
        ``ready[0]`` with readiness ``ready[1]``, and whatever ``expect`` asserts of
        kube-controller-manager's shape: agreeing on the state *before* a change is not
        agreeing on the change, and on a loaded machine the first check often comes before
        either controller has seen it)."""

        async def same() -> bool:
            kcm, ours = await self.shapes()
            if expect is not None:
                expect(kcm)
            if expect_pods is not None:
                assert set(kcm["endpoints"]) == expect_pods, sorted(kcm["endpoints"])
            if ready is not None:
                pod, state = ready
                assert kcm["endpoints"][pod][1] is state, ("kcm", pod)
                assert ours["endpoints"][pod][1] is state, ("ours", pod)
            problems = diff(kcm, ours)
            assert not problems, "\n".join(problems)
            return True

        await eventually(same, timeout=timeout)


async def endpoints_of(kube: Kube, ns: str, name: str) -> JSON | None:
    """The Endpoints object ``ns/name``, or None while there is none."""
    status, body = await kube.status_of("GET", f"/api/v1/namespaces/{ns}/endpoints/{name}")
    if status == 404:
        return None
    assert status == 200, (status, body)
    return dict(body)
