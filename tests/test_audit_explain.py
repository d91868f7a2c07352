"""`kvreport audit --explain` (runner/audit/explain.py): the steps an audit would run, and why; nothing stored."""
from __future__ import annotations

import json

from conftest import cli_in_process


def _log(path):
    rec = {"session_id": "s", "timestamp": "2025-06-02T10:00:00Z",
           "request": {"messages": [{"role": "system", "content": "hi"}]},
           "response": {"model": "gpt-4o", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}}
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return path


def _line(out: str, step: str) -> str:
    (found,) = [line for line in out.splitlines() if f" {step} " in line or line.endswith(f" {step}")]
    return found


def test_explain_answers_what_the_options_decide_and_stores_nothing(tmp_path):
    log, db = _log(tmp_path / "a.jsonl"), tmp_path / "a.duckdb"
    r = cli_in_process("audit", log, "--db", db, "--explain")
    assert r.returncode == 0, r.stderr
    assert not db.exists()
    assert f"read {log} (openai: reader envelope-openai):" in r.stdout
    assert _line(r.stdout, "ingest/since_until.sql").startswith("  - ")
    assert "--since / --until given: no" in _line(r.stdout, "ingest/since_until.sql")
    assert _line(r.stdout, "metrics/unpriced.sql").startswith("  + ")  # no --model: KV is not priced
    assert _line(r.stdout, "bloat/pairs.sql").startswith("  ? ")      # the data decides

    r = cli_in_process("audit", log, "--db", db, "--explain", "--since", "2025-01-01", "--kv-bytes-per-token", "1")
    assert r.returncode == 0, r.stderr
    assert _line(r.stdout, "ingest/since_until.sql").startswith("  + ")
    assert _line(r.stdout, "metrics/unpriced.sql").startswith("  - ")
    assert not db.exists()


def test_explain_names_a_bad_file_in_one_line(tmp_path):
    r = cli_in_process("audit", tmp_path / "missing.jsonl", "--explain")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "missing.jsonl" in r.stderr
