"""Addresses that do not answer: `--ray HOST:PORT` with nothing listening and an s3:// endpoint that accepts a
connection and never replies give up within seconds, naming the address, never hanging for minutes; and a
local Ray is started with nothing that reaches out (no dashboard, no usage report)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from kvreport.runner.audit import distributed
from kvreport.runner.audit.distributed import RayAuditError, check_reachable
from conftest import cli_process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def silent_server():
    """127.0.0.1:PORT that accepts every connection and never sends a byte."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held, stop = [], threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def test_a_ray_address_nothing_listens_on_is_refused_at_once_naming_it():
    address = f"127.0.0.1:{_free_port()}"
    started = time.monotonic()
    for given in (address, f"ray://{address}"):
        with pytest.raises(RayAuditError, match=rf"--ray {given}: no Ray cluster there"):
            check_reachable(given)
    assert time.monotonic() - started < 5


def test_a_ray_address_that_accepts_passes_the_check(silent_server):
    check_reachable(f"127.0.0.1:{silent_server}")  # Ray itself then speaks to it


@pytest.mark.slow
def test_audit_with_a_dead_ray_address_gives_up_within_seconds(tmp_path):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_free_port()}"
    log = os.path.join(os.path.dirname(__file__), "fixtures", "audit", "openai.jsonl")
    r = cli_process("audit", log, "--db", tmp_path / "a.duckdb", "--ray", address, timeout=90)
    assert r.returncode == 1 and f"--ray {address}: no Ray cluster there" in r.stderr.strip().splitlines()[-1], r.stderr
    assert not (tmp_path / "a.duckdb").exists()


def test_a_local_ray_starts_without_dashboard_or_usage_report(monkeypatch, tmp_path):
    seen = {}

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            seen.update(kwargs, usage_stats=os.environ.get("RAY_USAGE_STATS_ENABLED"))

        @staticmethod
        def shutdown():
            pass

    monkeypatch.setattr(distributed, "import_ray", lambda: FakeRay)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")
    with distributed.Cluster(None, workers=1, scratch=tmp_path):
        pass
    assert seen["include_dashboard"] is False and seen["usage_stats"] == "0", seen


@pytest.mark.slow
def test_an_s3_endpoint_that_never_answers_gives_up_within_seconds_naming_it(silent_server, tmp_path):
    pytest.importorskip("s3fs")
    endpoint = f"http://127.0.0.1:{silent_server}"
    env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               AWS_DEFAULT_REGION="us-east-1")
    started = time.monotonic()
    # a child process: without the time limits it would hang for minutes, and the timeout fails the test
    r = subprocess.run([sys.executable, "-c", "from kvreport.runner.audit.remote import expand; "
                        "expand('s3://traffic/logs/a.jsonl')"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode != 0 and "s3://traffic/logs/a.jsonl: cannot list" in r.stderr, r.stderr[-2000:]
    assert endpoint in r.stderr and time.monotonic() - started < 45
