"""A fork server of pytest runs, for ``scripts/mutate.py``: the start-up of a test run
(interpreter, pytest, its plugins, the third-party libraries the tests import) paid once per
package copy instead of once per mutant.

Started by ``scripts/mutate.py`` as ``python scripts/pytest_forks.py`` in the repository, with
the package copy first on ``PYTHONPATH``. It imports nothing of ``endpointslice_operator``,
``tests`` or ``scripts``. Each request is one JSON line on its standard input, answered by one
JSON line on its standard output:

* ``{"preload": [ARGS]}``: a child collects ``ARGS`` (``pytest --collect-only``) and tells which
  modules that imported; the server imports those that are neither the project's nor the
  package copy's (pytest, its plugins, kopf, aiohttp, pydantic, hypothesis...), so that every
  later child has them already. Nothing it imports may start a thread (a fork copies only the
  forking thread): the server refuses to go on if one did.
* ``{"args": [ARGS], "timeout": SECONDS or null, "cover": PATH or null}``: a child (a fork of
  the server, in a process group of its own) runs ``pytest.main(ARGS)`` and imports the
  package afresh from the copy, as written at that moment (the mutant). After ``timeout``
  seconds the child's group is killed (a mutant that hangs fails). With ``cover``, the child
  runs under coverage.py, each test in a context of its own (its node id; import and
  collection in the context ``""``), and the answer tells which tests executed each line of
  the file ``cover`` and how long each took: ``{"passed", "seconds", "output", "tests",
  "durations", "lines"}``; without, it tells the first test that failed (``"failed"``).

The server has no event loop and no thread when it forks; each child ends with ``os._exit``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import IO, Any, NoReturn

import pytest

_PROJECT = {"endpointslice_operator", "tests", "conftest", "scripts", "__main__"}
"""Top-level names never imported by the server: each child imports them itself."""


class _Watch:
    """A pytest plugin: the first test that failed; with coverage, each test's context (its
    node id, set-up and tear-down included) and how long it took."""

    def __init__(self, cov: Any = None) -> None:
        self.cov = cov
        self.order: list[str] = []
        self.seconds: dict[str, float] = {}
        self.failed: str | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Iterator[None]:
        self.order.append(item.nodeid)
        if self.cov is not None:
            self.cov.switch_context(item.nodeid)
        started = time.monotonic()
        try:
            return (yield)
        finally:
            self.seconds[item.nodeid] = time.monotonic() - started
            if self.cov is not None:
                self.cov.switch_context("")

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed and self.failed is None:
            self.failed = report.nodeid


def _run_child(request: dict[str, Any], result_path: str, output_path: str) -> NoReturn:
    """In the forked child: run pytest as asked, write the result, never return."""
    os.setpgid(0, 0)
    output = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(output, 1)
    os.dup2(output, 2)
    code = 99
    try:
        result: dict[str, Any] = {}
        if "preload" in request:
            code = int(pytest.main(["--collect-only", "-q", *request["preload"]]))
            result["modules"] = list(sys.modules)
        elif request.get("cover"):
            import coverage

            cov = coverage.Coverage(data_file=None, include=[request["cover"]])
            plugin = _Watch(cov)
            cov.start()
            try:
                code = int(pytest.main(request["args"], plugins=[plugin]))
            finally:
                cov.stop()
            data = cov.get_data()
            measured = [f for f in data.measured_files() if Path(f) == Path(request["cover"])]
            lines = data.contexts_by_lineno(measured[0]) if measured else {}
            result["tests"] = plugin.order
            result["durations"] = plugin.seconds
            result["lines"] = {str(line): sorted(set(c)) for line, c in lines.items()}
        else:
            plugin = _Watch()
            code = int(pytest.main(request["args"], plugins=[plugin]))
            result["failed"] = plugin.failed
        Path(result_path).write_text(json.dumps(result), encoding="utf-8")
    except BaseException:  # told in the output, and the run fails
        traceback.print_exc()
        code = 98
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float | None) -> int | None:
    """The child's exit status, or None after killing its group when ``timeout`` passed."""
    descriptor = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([descriptor], [], [], timeout)
    finally:
        os.close(descriptor)
    if not ready:
        os.killpg(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _fork(request: dict[str, Any], directory: str) -> dict[str, Any]:
    result_path = os.path.join(directory, "result.json")
    output_path = os.path.join(directory, "output.txt")
    if os.path.exists(result_path):
        os.unlink(result_path)
    if threading.active_count() != 1:
        raise SystemExit(f"pytest_forks: threads before a fork: {threading.enumerate()}")
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _run_child(request, result_path, output_path)
    code = _wait(pid, request.get("timeout"))
    seconds = time.monotonic() - started
    try:
        with open(output_path, "rb") as output:
            output.seek(max(0, os.path.getsize(output_path) - 3000))
            tail = output.read().decode(errors="replace")
    except OSError:
        tail = ""
    answer: dict[str, Any] = {"passed": code == 0, "seconds": seconds, "output": tail}
    if code is None:
        answer["output"] = f"{tail}\n(killed after {request.get('timeout')} s)"
    if code is not None and os.path.exists(result_path):
        answer.update(json.loads(Path(result_path).read_text(encoding="utf-8")))
    return answer


def _preload(names: list[str], copy_root: str) -> None:
    """Import ``names`` except the project's and pytest's plugins (which pytest imports
    itself, to rewrite their asserts)."""
    plugins = {e.value.partition(".")[0] for e in entry_points(group="pytest11")}
    for name in names:
        top = name.partition(".")[0]
        if top in _PROJECT or top in plugins or name in sys.modules:
            continue
        try:
            __import__(name)
        except Exception:  # a module only importable in context
            continue
        module = sys.modules.get(name)
        origin = getattr(module, "__file__", None) or ""
        if origin.startswith(copy_root):
            raise SystemExit(f"pytest_forks: {name} came from the package copy ({origin})")


def _serve(answers: IO[str]) -> None:
    copy_root = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    with tempfile.TemporaryDirectory(prefix="pytest-forks-") as directory:
        for line in sys.stdin:
            request = json.loads(line)
            answer = _fork(request, directory)
            if "preload" in request:
                _preload(answer.pop("modules", []), copy_root)
                if threading.active_count() != 1:
                    raise SystemExit(f"pytest_forks: preloading started {threading.enumerate()}")
                loaded = [m for m in sys.modules if m.partition(".")[0] in _PROJECT]
                if loaded != ["__main__"]:
                    raise SystemExit(f"pytest_forks: project modules preloaded: {loaded}")
            answers.write(json.dumps(answer) + "\n")
            answers.flush()


def main() -> None:
    # As the `pytest` script: neither the repository nor this folder first on sys.path (the
    # package copy, first on PYTHONPATH, must be the package the tests import).
    here = str(Path(__file__).resolve().parent)
    if sys.path and sys.path[0] in ("", here, os.getcwd()):
        del sys.path[0]
    # Answers on a descriptor of their own: whatever a preloaded module prints goes to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    _serve(answers)


if __name__ == "__main__":
    main()
