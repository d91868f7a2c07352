"""Issue 25 item 16: three realistic one-line bugs the suite used to miss, each pinned by a hand-made result."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from kvreport.runner.core.merge import merge
from conftest import quiet_audit


def _call(i: int, session: str, ts: str, prompt: int = 1000, system: int | None = None) -> dict:
    rec = {"session_id": session, "timestamp": ts,
           "response": {"id": f"c{i}", "object": "chat.completion", "created": 1735689600, "model": "gpt-4o",
                        "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 10,
                                                 "total_tokens": prompt + 10}}}
    if system is not None:
        rec["system_tokens"] = system
    return rec


def _audit(tmp_path: Path, name: str, calls: list[dict]) -> tuple[dict, Path]:
    log = tmp_path / f"{name}.jsonl"
    log.write_text("".join(json.dumps(c) + "\n" for c in calls))
    db = tmp_path / f"{name}.duckdb"
    return quiet_audit([log], db), db


def test_merge_copies_every_table_row_for_row(tmp_path):
    _, src = _audit(tmp_path, "src", [_call(0, "a", "2025-01-01T00:00:00Z"), _call(1, "b", "2025-01-01T00:01:00Z")])
    into = tmp_path / "into.duckdb"
    merge([src], into)
    a, b = duckdb.connect(str(src), read_only=True), duckdb.connect(str(into), read_only=True)
    try:
        tables = [r[0] for r in a.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                          "'main' AND table_type = 'BASE TABLE' AND table_name <> 'kvreport_meta'")
                  .fetchall()]
        assert "token_prices" in tables
        for t in tables:
            n = a.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            assert b.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == n, t
        assert a.execute("SELECT count(*) FROM token_prices").fetchone()[0] > 0
    finally:
        a.close()
        b.close()


def test_a_session_that_never_comes_back_recomputes_nothing(tmp_path):
    """Single-call sessions are evicted by every TTL, but nobody returns to them: 0 tokens recomputed. A session
    that returns after 30 minutes recomputes its context at every TTL shorter than the gap, and only then."""
    lone = [_call(i, f"lone{i}", f"2025-01-01T00:{i:02d}:00Z") for i in range(3)]
    _, db = _audit(tmp_path, "lone", lone)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT ttl_s, recompute_tokens FROM token_ttl_sweep WHERE ttl_s IS NOT NULL").fetchall()
    con.close()
    assert rows and all(r[1] == 0 for r in rows), rows

    back = [_call(0, "s", "2025-01-01T00:00:00Z"), _call(1, "s", "2025-01-01T00:30:00Z")]
    _, db = _audit(tmp_path, "back", back)
    con = duckdb.connect(str(db), read_only=True)
    got = dict(con.execute("SELECT ttl_s, recompute_tokens FROM token_ttl_sweep WHERE ttl_s IS NOT NULL").fetchall())
    con.close()
    returning = {t: n for t, n in got.items() if t < 1800}
    assert returning and len(set(returning.values())) == 1 and next(iter(returning.values())) > 0, got
    assert all(n == 0 for t, n in got.items() if t >= 1800), got


def test_overall_spor_divides_by_the_input_of_calls_that_carry_system_counts(tmp_path):
    # (the first record without system_tokens: with it, it would look like a sessions record too)
    calls = [_call(1, "b", "2025-01-01T00:01:00Z", prompt=900),  # no system count: not in SPOR at all
             _call(0, "a", "2025-01-01T00:00:00Z", prompt=100, system=50)]
    s, _ = _audit(tmp_path, "spor", calls)
    assert abs(s["overall_spor"] - 0.5) < 1e-9, s["overall_spor"]
    assert abs(s["spor_coverage"] - 0.1) < 1e-9
