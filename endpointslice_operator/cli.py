"""The ``endpointslice-operator`` command line.

Each sub-command lives in its own module exposing ``main(argv: list[str]) -> int``; this module
only dispatches, importing the chosen module lazily so that ``version`` and ``--help`` stay fast
and the pure reconciler never pulls in the operator's dependencies.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from endpointslice_operator import __version__

# name -> (module implementing ``main(argv) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("endpointslice_operator.commands.run", "run the operator against a cluster"),
    "emulator": (
        "endpointslice_operator.commands.emulator",
        "serve the built-in Kubernetes API emulator on 127.0.0.1",
    ),
    "demo": (
        "endpointslice_operator.commands.demo",
        "run the operator against the built-in emulator and show what it does",
    ),
    "cleanup": (
        "endpointslice_operator.commands.cleanup",
        "delete the EndpointSlices the operator wrote (after uninstalling it)",
    ),
    "migrate": (
        "endpointslice_operator.commands.migrate",
        "move Services from kube-controller-manager to the operator, without a failed request",
    ),
    "endpoints": ("endpointslice_operator.commands.endpoints", "the endpoint view of Services"),
    "plan": (
        "endpointslice_operator.commands.plan",
        "offline: print the EndpointSlice writes for Service/Pod/Node/EndpointSlice YAML files",
    ),
}

USAGE = f"""usage: endpointslice-operator <command> [options]

Keeps discovery.k8s.io/v1 EndpointSlices right for the Services that opt in.

commands:
{chr(10).join(f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items())}
  version    print the version and exit

Run 'endpointslice-operator <command> --help' for a command's options.
"""


VERSION_USAGE = """usage: endpointslice-operator version

Print the version of endpointslice-operator and exit.
"""


def _version(rest: list[str]) -> int:
    if any(arg in {"-h", "--help"} for arg in rest):
        sys.stdout.write(VERSION_USAGE)
        return 0
    if rest:
        sys.stderr.write(
            f"endpointslice-operator version: unexpected argument {rest[0]!r}\n\n{VERSION_USAGE}"
        )
        return 2
    sys.stdout.write(f"endpointslice-operator {__version__}\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        # A bare command is a usage error, as with kubectl-style tools: help on stderr, exit 2.
        sys.stderr.write(USAGE)
        return 2
    if args[0] in {"-h", "--help", "help"}:
        sys.stdout.write(USAGE)
        return 0
    command, rest = args[0], args[1:]
    if command in {"version", "--version"}:
        return _version(rest)
    if command not in COMMANDS:
        sys.stderr.write(f"endpointslice-operator: unknown command {command!r}\n\n{USAGE}")
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    result: int = module.main(rest)
    return result
