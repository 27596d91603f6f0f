"""One script of raw HTTP requests, run against the emulator and against a real kube-apiserver.

Each :class:`Step` is one request; the runner records, per step, the status code, the Status
reason (and its causes' reasons) and a few facts that matter to clients (the kind answered, the
name or generateName prefix, selected fields, what a watch delivered). Values that differ by
nature between two servers (uids, resourceVersions, timestamps, generated name suffixes) are
compared by relation only: a name from ``generateName`` becomes ``<prefix>*``.

The request shapes are those the operator, Kopf, kubernetes-asyncio and kubectl send (recorded
from runs against both servers); ``SHAPES`` in ``test_conformance.py`` names them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp

from tests.realcluster.deadline import Deadline
from tests.realcluster.kube import JSON, Kube

Facts = Callable[[Any], Any]


@dataclass(frozen=True)
class Step:
    name: str
    method: str
    path: str
    body: Any = None
    params: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    accept: str = "application/json"
    facts: Facts | None = None
    watch_seconds: float = 0.0
    """For watches: read the stream this long (or to its end) and report the event types."""
    retry_until: Callable[[int, Any], bool] | None = None
    """Repeat the request (up to 30 s) until this holds: for what controllers do eventually."""
    save_uid: str = ""
    """Keep the answered object's uid under this name; later bodies say ``{uid:<name>}``."""
    save_continue: str = ""
    """Keep a list's ``metadata.continue`` token under this name; later parameters say
    ``{continue:<name>}``."""
    warnings: bool = False
    """Compare the ``Warning:`` headers too (the facts become ``(facts, warnings)``); those
    about a deprecated API or field are left out (the emulator does not send them)."""


@dataclass
class Result:
    status: int
    reason: str
    causes: tuple[str, ...]
    facts: Any

    def row(self) -> tuple[Any, ...]:
        return (self.status, self.reason, self.causes, self.facts)


def _status_parts(body: Any) -> tuple[str, tuple[str, ...]]:
    if isinstance(body, dict) and body.get("kind") == "Status":
        details = body.get("details") or {}
        causes = tuple(sorted(str(c.get("reason", "")) for c in details.get("causes") or []))
        return str(body.get("reason") or ""), causes
    return "", ()


async def _watch(kube: Kube, step: Step, url: str) -> Result:
    types: list[str] = []
    timeout = aiohttp.ClientTimeout(total=step.watch_seconds + 10)
    async with kube.session.get(url, params=step.params, timeout=timeout) as response:
        if response.status != 200:
            body = json.loads(await response.read() or b"null")
            reason, causes = _status_parts(body)
            return Result(response.status, reason, causes, None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + step.watch_seconds
        error: Any = None
        while loop.time() < deadline:
            try:
                line = await asyncio.wait_for(
                    response.content.readline(), max(0.01, deadline - loop.time())
                )
            except TimeoutError:
                break
            if not line:
                break
            if line.strip():
                event = json.loads(line)
                types.append(event["type"])
                if event["type"] == "ERROR":
                    error = (event["object"].get("code"), event["object"].get("reason"))
        return Result(200, "", (), {"events": types, "error": error})


async def run_step(kube: Kube, step: Step, ns: str, saved: dict[str, str] | None = None) -> Result:
    path = step.path.format(ns=ns)
    url = kube.base + path
    if saved:
        step = replace(
            step,
            params={key: _substitute(value, saved) for key, value in step.params.items()},
        )
    if step.watch_seconds:
        return await _watch(kube, step, url)
    deadline = Deadline(30)
    while True:
        data = None if step.body is None else json.dumps(step.body).replace("{ns}", ns)
        for key, uid in (saved or {}).items():
            if not key.startswith("continue:"):
                data = None if data is None else data.replace(f"{{uid:{key}}}", uid)
        headers = {"Accept": step.accept}
        if data is not None:
            headers["Content-Type"] = step.content_type
        async with kube.session.request(
            step.method, url, data=data, params=step.params or None, headers=headers
        ) as response:
            raw = await response.read()
            status = response.status
            warned = tuple(
                text for text in response.headers.getall("Warning", []) if "deprecated" not in text
            )
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        if step.retry_until is None or step.retry_until(status, body) or deadline.expired():
            break
        await asyncio.sleep(0.2)
    reason, causes = _status_parts(body)
    if step.save_uid and saved is not None and isinstance(body, dict):
        saved[step.save_uid] = str((body.get("metadata") or {}).get("uid", ""))
    if step.save_continue and saved is not None and isinstance(body, dict):
        saved[f"continue:{step.save_continue}"] = str(
            (body.get("metadata") or {}).get("continue", "")
        )
    facts = step.facts(body) if step.facts is not None and 200 <= status < 300 else None
    if step.warnings:
        facts = (facts, warned)
    return Result(status, reason, causes, facts)


def _substitute(value: str, saved: dict[str, str]) -> str:
    for key, token in saved.items():
        if key.startswith("continue:"):
            value = value.replace(f"{{{key}}}", token)
    return value


async def run_script(kube: Kube, steps: list[Step], ns: str) -> list[Result]:
    saved: dict[str, str] = {}
    return [await run_step(kube, step, ns, saved) for step in steps]


# -- fact extractors ---------------------------------------------------------------------------


def name_of(obj: JSON) -> str:
    metadata = obj.get("metadata") or {}
    if metadata.get("generateName"):
        return f"{metadata['generateName']}*"
    return str(metadata.get("name", ""))


def kind_and_name(body: Any) -> Any:
    return (body.get("kind"), name_of(body)) if isinstance(body, dict) else body


def item_names(body: Any) -> Any:
    return (body.get("kind"), sorted(name_of(i) for i in body.get("items") or []))


def page(body: Any) -> Any:
    """Items on the page, whether it continues, and whether it counts what remains (the real
    server counts only for lists without a label or field selector)."""
    metadata = body.get("metadata") or {}
    return (
        len(body.get("items") or []),
        bool(metadata.get("continue")),
        "remainingItemCount" in metadata,
    )


def fields(*paths: str) -> Facts:
    def extract(body: Any) -> Any:
        out = []
        for path in paths:
            value: Any = body
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            out.append(value)
        return tuple(json.dumps(v, sort_keys=True) for v in out)

    return extract
