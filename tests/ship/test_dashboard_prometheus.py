"""The dashboard's queries, run by a real Prometheus that scrapes one operator twice.

Users may scrape the operator with a ServiceMonitor beside a PodMonitor (the chart offers both):
two jobs, the same ``instance``. Each panel query, with ``$job`` set to one of them, must run
without error and count the operator once; the documented leader check must read 1.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from endpointslice_operator.metrics import OperatorMetrics, render_registry
from scripts.render_manifests import DASHBOARD_SOURCE
from tests.ship.exposition import touched_metrics

pytestmark = pytest.mark.timeout(180)

#: The documented "exactly one leader" query (docs/metrics.md) without its comparison.
LEADERS = "sum(max by (instance) (endpointslice_operator_leader))"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _target(metrics: OperatorMetrics) -> ThreadingHTTPServer:
    """An HTTP server answering /metrics with the operator's exposition; each scrape counts
    one more sync, write and queue add, so that rates are not zero."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            metrics.record_sync("success", 0.2)
            metrics.record_change("update")
            metrics.workqueue.observe_add("endpoint_slice")
            metrics.workqueue.observe_queue_duration("endpoint_slice", 0.2)
            metrics.workqueue.observe_work_duration("endpoint_slice", 0.2)
            body = render_registry(metrics.registry)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _query(port: int, expr: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            result: dict[str, Any] = json.load(answer)
    except urllib.error.HTTPError as error:
        result = json.load(error)
    return result


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    binary = shutil.which("prometheus")
    if binary is None:
        message = "prometheus is not installed (Debian package `prometheus`; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    target = _target(touched_metrics())
    work = tmp_path_factory.mktemp("prometheus")
    address = f"127.0.0.1:{target.server_address[1]}"
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [address]}]} for job in ("svc", "pod")
        ],
    }
    (work / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    port = _free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(work / "prometheus.log").open("wb"),
    )
    try:
        deadline = time.monotonic() + 90
        # Both jobs up, and enough scrapes in for a 30 s rate.
        while time.monotonic() < deadline:
            try:
                samples = _query(port, "count_over_time(up[1m])")["data"]["result"]
            except OSError:
                samples = []
            if len(samples) == 2 and all(float(s["value"][1]) >= 6 for s in samples):
                break
            time.sleep(0.5)
        else:
            log = Path(work / "prometheus.log").read_text(errors="replace")[-2000:]
            pytest.fail(f"Prometheus did not scrape both jobs in time:\n{log}")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)
        target.shutdown()


def _exprs(job: str) -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD_SOURCE.read_text(encoding="utf-8"))
    out: list[tuple[str, str]] = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$job", job).replace("$__rate_interval", "30s")
            out.append((panel["title"], expr))
    return out


def test_every_panel_query_runs_and_counts_the_pod_once(prometheus: int) -> None:
    for title, expr in _exprs("svc"):
        answer = _query(prometheus, expr)
        assert answer["status"] == "success", (title, expr, answer.get("error"))
    leader = _query(prometheus, _exprs("svc")[0][1])["data"]["result"]
    assert [float(s["value"][1]) for s in leader] == [1.0]
    # A rate over one job equals the same rate over the other: nothing is summed across jobs.
    syncs = 'sum(rate(endpoint_slice_controller_syncs{job="JOB"}[30s]))'
    (svc,) = _query(prometheus, syncs.replace("JOB", "svc"))["data"]["result"]
    (pod,) = _query(prometheus, syncs.replace("JOB", "pod"))["data"]["result"]
    assert abs(float(svc["value"][1]) - float(pod["value"][1])) < 0.5


def test_the_documented_leader_query_counts_one_leader(prometheus: int) -> None:
    (result,) = _query(prometheus, LEADERS)["data"]["result"]
    assert float(result["value"][1]) == 1.0
    docs = (DASHBOARD_SOURCE.parent.parent / "metrics.md").read_text(encoding="utf-8")
    assert f"`{LEADERS} != 1`" in docs


def test_all_jobs_at_once_is_what_breaks_and_is_not_offered(prometheus: int) -> None:
    # Why the job variable has no "All": over both jobs, the leader join matches two series
    # per instance on each side, and Prometheus refuses it.
    joined = dict(_exprs(".+"))["Desired endpoints"].replace('job=".+"', 'job=~".+"')
    answer = _query(prometheus, joined)
    assert answer["status"] == "error" and "many-to-many" in answer["error"], answer
    dashboard = json.loads(DASHBOARD_SOURCE.read_text(encoding="utf-8"))
    (job,) = [v for v in dashboard["templating"]["list"] if v["name"] == "job"]
    assert job["includeAll"] is False and job["multi"] is False
