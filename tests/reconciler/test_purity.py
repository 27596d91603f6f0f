"""The reconciler is a pure library: importing it pulls in no I/O client or framework module.

The check runs in a fresh interpreter and lists ``sys.modules``. The standard ``socket`` and
``urllib.parse`` modules are loaded by pydantic itself (through ``email.utils`` and
``importlib.metadata``), so the test forbids what actually talks to the network or drives an
event loop: asyncio, Kopf, the Kubernetes client, aiohttp, HTTP clients and TLS. The
import-linter contract in pyproject.toml additionally forbids direct imports of ``socket``.
"""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "asyncio",
    "kopf",
    "kubernetes_asyncio",
    "aiohttp",
    "requests",
    "ssl",
    "http",
    "urllib.request",
    "urllib3",
    "prometheus_client",
    "subprocess",
)


def test_importing_the_reconciler_imports_no_io_modules() -> None:
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import endpointslice_operator.reconciler\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(result.stdout)
    offending = [m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert offending == []
    # Nothing else of the package either: the reconciler stands alone.
    ours = {m for m in loaded if m.startswith("endpointslice_operator.")}
    assert ours, "the import did not happen"
    assert all(m.startswith("endpointslice_operator.reconciler") for m in ours), ours
