"""The README's ``make dataplane-demo``, run as written (tests/readme_commands.py)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.readme_commands import ROOT, RUN_BY, all_commands, readme

pytestmark = pytest.mark.dataplane
COMMAND = "make dataplane-demo"


def test_the_dataplane_demo_follows_a_rollout() -> None:
    assert COMMAND in all_commands(readme()) and COMMAND in RUN_BY
    done = subprocess.run(
        ["bash", "-e", "-c", COMMAND],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "UNEXPECTED" not in out
    rollout = re.search(r"during the rollout: (\d+) requests, (\d+) failed", out)
    assert rollout is not None, out[-3000:]
    assert int(rollout.group(1)) > 0 and rollout.group(2) == "0"
    # Each step is shown: a new pod not routed, then routed; an old one terminating, then gone.
    for step in ("web-v2-3 started, not ready yet", "web-v2-3 ready: routed",
                 "web-v1-3 deleted: Terminating", "web-v1-3 gone"):  # fmt: skip
        assert step in out, step
    assert "[serving, terminating]" in out
    last = [line for line in out.splitlines() if "x30:" in line][-1]
    assert re.findall(r"(web-v\d-\d) x", last) == ["web-v2-1", "web-v2-2", "web-v2-3"], last
    assert "deleted the network namespaces" in out
