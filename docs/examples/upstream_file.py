"""Keep an nginx ``upstream`` block in a file in step with one Service's endpoints.

An example consumer of the endpoint view (docs/view.md): it watches one service port with
``gather=True`` (one record per service port with all its addresses) and rewrites the file,
atomically, each time the set of endpoints changes, then runs ``--on-change`` (for example
``nginx -s reload``). Run it beside nginx::

    python docs/examples/upstream_file.py --namespace shop --service web --port http \\
        --output /etc/nginx/conf.d/web-upstream.conf --on-change 'nginx -s reload'

The file it writes::

    # web.shop, service port http: 2 endpoints
    upstream web {
        server 10.1.0.1:8080;
        server 10.1.0.2:8080;
    }

nginx refuses an ``upstream`` without servers, so while the Service has no ready endpoint the
block holds one ``down`` placeholder. ``--policy serving`` follows kube-proxy's fallback to
terminating endpoints; ``--once`` writes the file once and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from endpointslice_operator.view import (
    POLICIES,
    EndpointGroup,
    ServicePortKey,
    open_api_client,
    watch_endpoints,
)

PLACEHOLDER = "server 127.0.0.1:1 down;  # no endpoints"


def render(upstream: str, source: str, group: EndpointGroup | None) -> str:
    """The file's text for the service port's endpoints (``group`` None: none)."""
    endpoints = group.endpoints if group is not None else ()
    lines = [f"# {source}: {len(endpoints)} endpoints", f"upstream {upstream} {{"]
    for endpoint in endpoints:
        host = f"[{endpoint.address}]" if ":" in endpoint.address else endpoint.address
        lines.append(f"    server {host}:{endpoint.target_port};")
    if not endpoints:
        lines.append(f"    {PLACEHOLDER}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_atomically(path: Path, text: str) -> bool:
    """Replace ``path`` with ``text`` unless it holds it already; whether it changed."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
    return True


async def follow(args: argparse.Namespace) -> int:
    output = Path(args.output)
    upstream = args.upstream or args.service
    shown: dict[ServicePortKey, EndpointGroup] = {}
    synced = False

    def update() -> None:
        ports = [key for key in shown if args.port in (key.port_name, str(key.port))]
        group = shown[ports[0]] if ports else None
        source = f"{args.service}.{args.namespace}, service port {args.port}"
        if write_atomically(output, render(upstream, source, group)):
            count = len(group.endpoints) if group is not None else 0
            print(f"wrote {output} ({count} endpoints)", flush=True)
            if args.on_change:
                subprocess.run(shlex.split(args.on_change), check=False)

    async with await open_api_client(args.kubeconfig) as api:
        async for change in watch_endpoints(
            api,
            namespace=args.namespace,
            services=[f"{args.namespace}/{args.service}"],
            policy=args.policy,
            gather=True,
        ):
            if change.type == "synced":
                synced = True
            elif isinstance(change.key, ServicePortKey):
                if change.type == "removed":
                    shown.pop(change.key, None)
                elif isinstance(change.endpoint, EndpointGroup):
                    shown[change.key] = change.endpoint
            if synced:
                update()
                if args.once:
                    return 0
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="default: in-cluster, else ~/.kube/config")
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--service", required=True)
    parser.add_argument("--port", required=True, help="the service port's name or number")
    parser.add_argument("--output", required=True, help="the file to keep up to date")
    parser.add_argument("--upstream", help="the upstream's name (default: the Service's)")
    parser.add_argument("--policy", choices=POLICIES, default="ready")
    parser.add_argument("--on-change", metavar="COMMAND", help="run after each rewrite")
    parser.add_argument("--once", action="store_true", help="write once, then exit")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(follow(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
