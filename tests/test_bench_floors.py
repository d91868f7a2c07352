"""The audit benchmark's floors compute what they are named for (benchmarks/bench_audit.py): the figures floor
finds the audit's calls, sessions, PCER and leakage index, so its time is what those same figures cost at least."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import quiet_audit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_audit  # noqa: E402
import ingest_parts  # noqa: E402


@pytest.mark.parametrize("shape", ["iso", "litellm"])  # litellm: each call ends 0.8 s after it starts
def test_the_figures_floor_finds_the_audits_figures(tmp_path, shape):
    log = tmp_path / "calls.jsonl"
    bench_audit.write_log(log, 2000, shape=shape, per_session=4)
    audit = quiet_audit([log], tmp_path / "audit.duckdb")
    floor = bench_audit.figures_floor_query(log, tmp_path / "floor.duckdb", shape)
    assert (floor["n_calls"], floor["n_sessions"]) == (audit["n_calls"], audit["n_sessions"]) == (2000, 500)
    assert floor["overall_pcer"] == pytest.approx(audit["overall_pcer"], abs=1e-12)
    assert 0 < audit["leakage_index"] < 1
    assert floor["leakage_index"] == pytest.approx(audit["leakage_index"], abs=1e-12)


def test_the_ingest_parts_time_the_fast_readers_step_on_every_line(tmp_path):
    """benchmarks/ingest_parts.py runs the audit's own step (its SQL file, split where it inserts): each part reads
    every line of the log, the staged rows are numbered 1..n (its child checks that), and the design it compares
    (each row written once, its line its rowid + 1) finds the rejects at the same lines."""
    log = tmp_path / "calls.jsonl"
    bench_audit.write_log(log, 500, shape="iso", per_session=4)
    parts = {part: ingest_parts.child(part, str(log), "350MB") for part in ingest_parts.PARTS}
    assert {part: p["rows"] for part, p in parts.items()} == {part: 502 for part in ingest_parts.PARTS}
    assert parts["staged"]["rejects"] == parts["written"]["rejects"] == [501, 502]  # the two broken lines
