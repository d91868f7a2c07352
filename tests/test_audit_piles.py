"""Real log piles (issue 12): folders, globs, .gz and .zst, many files at once, --since/--until, progress."""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from conftest import audit_result, quiet_audit, run_cli
from kvreport.runner.commands.output import Output

FIX = Path(__file__).parent / "fixtures" / "audit"




def _zst(data: bytes) -> bytes:
    import zstandard  # in the [test] extra: a missing one fails, so the .zst path is never silently untested

    return zstandard.ZstdCompressor().compress(data)


def _results(db: Path) -> tuple[list, list, dict]:
    """Calls and rejects with the file name instead of its path, and the audit's figures."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        calls = con.execute("SELECT regexp_extract(source, '[^/]+$') AS f, line, session_id, start_time, input_tokens, "
                            "cached_input_tokens, output_tokens FROM token_calls ORDER BY ALL").fetchall()
        rej = con.execute("SELECT regexp_extract(source, '[^/]+$'), line, reason FROM token_rejects ORDER BY ALL").fetchall()
        cur = con.execute("SELECT n_calls, n_sessions, n_rejects, n_skipped_lines, overall_pcer, leakage_index FROM audits")
        summary = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    finally:
        con.close()
    return calls, rej, summary


def _no_file(rows: list) -> list:
    return [r[1:] for r in rows]


@pytest.mark.slow
def test_gz_and_zst_give_the_same_audit_as_the_plain_file(tmp_path):
    raw = (FIX / "openai.jsonl").read_bytes()
    (tmp_path / "log.jsonl.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "log.jsonl.zst").write_bytes(_zst(raw))
    (tmp_path / "oddly-named.log").write_bytes(_zst(raw))  # told by its bytes, not its name
    out = {}
    for name in ("log.jsonl.gz", "log.jsonl.zst", "oddly-named.log"):
        quiet_audit([tmp_path / name], db=tmp_path / f"{name}.duckdb")
        out[name] = _results(tmp_path / f"{name}.duckdb")
    quiet_audit([FIX / "openai.jsonl"], db=tmp_path / "plain.duckdb")
    plain = _results(tmp_path / "plain.duckdb")
    assert plain[2]["n_rejects"] == 6 and plain[1][0][1] == 3  # bad lines keep their numbers
    for calls, rej, summary in out.values():
        assert summary == plain[2]
        assert _no_file(calls) == _no_file(plain[0]) and _no_file(rej) == _no_file(plain[1])


@pytest.mark.slow
def test_compressed_sessions_csv_and_messy_lines(tmp_path):
    """The readers that are not DuckDB's (CSV records, the normalised copy of a file with stray bytes)
    decompress too."""
    csv_text = (FIX / "sessions.csv").read_bytes()
    (tmp_path / "s.csv.gz").write_bytes(gzip.compress(csv_text))
    good, rest = (FIX / "openai.jsonl").read_bytes().split(b"\n", 1)
    messy = good + b'\r\n{"session_id": "\xff"}\nstray\rcr\n' + rest  # mixed endings, a bad byte, a lone CR
    (tmp_path / "messy.jsonl.zst").write_bytes(_zst(messy))
    (tmp_path / "messy.jsonl").write_bytes(messy)
    for a, b in (("s.csv.gz", FIX / "sessions.csv"), ("messy.jsonl.zst", tmp_path / "messy.jsonl")):
        quiet_audit([tmp_path / a], db=tmp_path / f"{a}.duckdb")
        quiet_audit([b], db=tmp_path / f"{a}-plain.duckdb")
        x, y = _results(tmp_path / f"{a}.duckdb"), _results(tmp_path / f"{a}-plain.duckdb")
        assert _no_file(x[0]) == _no_file(y[0]) and _no_file(x[1]) == _no_file(y[1]) and x[2] == y[2]


@pytest.mark.slow
def test_folders_and_quoted_globs_read_every_file_and_name_it(tmp_path):
    logs = tmp_path / "logs"
    (logs / "2026-11").mkdir(parents=True)
    lines = (FIX / "openai.jsonl").read_text().splitlines(keepends=True)
    (logs / "2026-11" / "a.jsonl").write_text("".join(lines[:5]))
    (logs / "2026-11" / "b.jsonl.gz").write_bytes(gzip.compress("".join(lines[5:]).encode()))
    (logs / ".hidden.jsonl").write_text("not even json\n")  # hidden files are not logs
    s = quiet_audit([logs], db=tmp_path / "dir.duckdb")
    calls, rej, _ = _results(tmp_path / "dir.duckdb")
    assert s["n_calls"] == 3 and s["n_rejects"] == 6
    assert {r[0] for r in rej} == {"a.jsonl", "b.jsonl.gz"} and ("a.jsonl", 3, "malformed JSON") in rej
    assert ("b.jsonl.gz", 1, "usage.prompt_tokens is not an integer (got 12.5)") in rej  # line 6 of the whole
    s2 = quiet_audit([str(logs / "2026-11" / "*.jsonl*")], db=tmp_path / "glob.duckdb")
    assert s2["n_calls"] == 3 and _results(tmp_path / "glob.duckdb")[1] == rej


def test_a_pile_with_one_bad_file_fails_before_anything_is_written(tmp_path, capsys):
    pile = tmp_path / "pile"
    pile.mkdir()
    shutil.copy(FIX / "openai.jsonl", pile / "1.jsonl")
    (pile / "2.txt").write_text("hello world\n")
    db = tmp_path / "k.duckdb"
    assert run_cli("audit", pile, "--db", db) == 2
    err = capsys.readouterr().err
    assert "2.txt" in err and "Traceback" not in err and not db.exists()
    (pile / "2.txt").unlink()
    (pile / "3.jsonl.gz").write_bytes(gzip.compress((FIX / "openai.jsonl").read_bytes())[:-30])  # cut short
    assert run_cli("audit", pile, "--db", db) == 2
    err = capsys.readouterr().err
    assert "3.jsonl.gz" in err and "Traceback" not in err and not db.exists()
    assert run_cli("audit", str(tmp_path / "nothing-*.jsonl"), "--db", db) == 2
    assert "no file matches" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert run_cli("audit", tmp_path / "empty", "--db", db) == 2
    assert "no log files" in capsys.readouterr().err and not db.exists()


def test_since_until_audit_a_time_window(tmp_path):
    log = tmp_path / "day.jsonl"
    log.write_text("".join(json.dumps({"session_id": f"s{h % 3}", "timestamp": f"2026-11-01T{h:02d}:30:00Z",
                                       "response": {"usage": {"prompt_tokens": 100 + h, "completion_tokens": 1}}})
                           + "\n" for h in range(24)) + '{"response": {"usage": {"prompt_tokens": 5, "completion_tokens": 1}}}\n'
                   + "{broken\n"
                   + "".join(json.dumps({"session_id": "edge", "timestamp": ts, "response": {"usage": {
                       "prompt_tokens": n, "completion_tokens": 1}}}) + "\n"
                             for ts, n in (("2026-11-01T06:00:00Z", 1), ("2026-11-01T09:00:00Z", 2))))
    s = quiet_audit([log], db=tmp_path / "w.duckdb", since="2026-11-01T06:00:00Z",
                until="2026-11-01T10:00:00+01:00")  # 06:00 to 09:00 UTC
    calls, rej, _ = _results(tmp_path / "w.duckdb")
    # [since, until): the call at 06:00 is in, the one at 09:00 out; the call with no time is out too
    assert sorted(c[4] for c in calls) == [1, 106, 107, 108] and s["n_skipped_lines"] == 21 + 1 + 1
    assert rej == [("day.jsonl", 26, "malformed JSON")]  # a broken line stays a reject whatever the window
    assert run_cli("audit", log, "--since", "yesterday", "--db", tmp_path / "x.duckdb") == 2
    assert run_cli("audit", log, "--since", "2026-11-02", "--until", "2026-11-01", "--db", tmp_path / "x.duckdb") == 2


@pytest.mark.slow
def test_progress_only_on_a_terminal(tmp_path, capsys):
    assert run_cli("audit", FIX / "openai.jsonl", "--db", tmp_path / "a.duckdb") == 0
    err = capsys.readouterr().err
    assert "lines/s" not in err and "\x1b[" not in err  # not a terminal here: quiet
    with Output(bar=True) as out:
        audit_result([FIX / "openai.jsonl", FIX / "anthropic.jsonl"], tmp_path / "b.duckdb", on_event=out,
                     progress=True)
    assert "lines/s" in capsys.readouterr().err  # forced on, as on a terminal


@pytest.mark.slow
def test_slices_give_the_same_prompt_bloat_as_one_pass(tmp_path, monkeypatch):
    """The bloat steps run per slice of calls (pipeline.SLICE); slice edges must not lose or split a pair."""
    import kvreport.runner.audit.pipeline as pipeline
    from test_audit import _tokenizer

    words = "You are a bot . Reply in JSON please with keys q0 q1 q2 q3 q4 q5 q6 q7".split()
    tok = _tokenizer(tmp_path / "tokenizer.json", words)
    log = tmp_path / "chat.jsonl"
    lines, history = [], []
    for i in range(8):
        history.append({"role": "user", "content": f"q{i} . Reply in JSON please with keys ."})
        lines.append(json.dumps({"session_id": f"s{i % 2}", "timestamp": 1735689600 + 60 * i,
                                 "request": {"messages": [{"role": "system", "content": f"Time : q{i} . You are a bot ."},
                                                          *history]},  # the time breaks every pair's prefix
                                 "response": {"usage": {"prompt_tokens": 10 + i, "completion_tokens": 1}}}))
    log.write_text("\n".join(lines) + "\n")

    def bloat(db):
        quiet_audit([log], db=db, tokenizer=str(tok))
        con = duckdb.connect(str(db), read_only=True)
        rows = con.execute("SELECT * EXCLUDE (audit_id) FROM token_bloat ORDER BY session_id").fetchall()
        con.close()
        return rows

    whole = bloat(tmp_path / "whole.duckdb")
    monkeypatch.setattr(pipeline, "SLICE", 3)
    sliced = bloat(tmp_path / "sliced.duckdb")
    assert sliced == whole
    con = duckdb.connect(str(tmp_path / "sliced.duckdb"), read_only=True)
    # per session: 4 calls, 3 pairs, each broken by the time at the top of the system prompt
    assert con.execute("SELECT n_pairs, broken_pairs FROM token_bloat").fetchall() == [(3, 3), (3, 3)]
    con.close()


@pytest.mark.slow
def test_spilled_tables_survive_until_they_are_stored(tmp_path):
    """With a memory limit far below the audit's data, DuckDB spills into the scratch folder; the folder
    must outlive the copy into the DB (it was removed first, and the audit failed at its last step)."""
    log = tmp_path / "big.jsonl"
    duckdb.sql(f"""COPY (SELECT 's-' || (i % 5000) AS session_id, 1735689600 + i AS timestamp,
                          {{'usage': {{'prompt_tokens': 100 + i % 50, 'completion_tokens': 7}}}} AS response
                        FROM range(300000) t(i)) TO '{log}' (FORMAT JSON)""")
    s = quiet_audit([log], db=tmp_path / "k.duckdb", memory_limit="80MB")
    assert s["n_calls"] == 300000


@pytest.mark.slow
def test_calls_are_stored_narrow_with_their_labels(tmp_path, monkeypatch):
    """token_calls (a view since schema step 006) gives every call its file, format, provider, models and price
    source from token_call_labels; the same calls come back whether each finds its label by hash or, after a
    hash collision, by comparing the strings."""
    from kvreport.runner.audit import engine

    quiet_audit([FIX / "sessions.jsonl"], db=tmp_path / "one.duckdb")  # one label: no lookup
    con = duckdb.connect(str(tmp_path / "one.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM token_call_labels").fetchone()[0] == 1
    one = con.execute("SELECT count(*), count(source), count(format), count(line) FROM token_calls").fetchone()
    con.close()
    assert one[0] > 1 and len(set(one)) == 1

    logs = [FIX / "openai.jsonl", FIX / "anthropic.jsonl", FIX / "litellm.jsonl", FIX / "otel.jsonl"]
    quiet_audit(logs, db=tmp_path / "hash.duckdb")
    con = duckdb.connect(str(tmp_path / "hash.duckdb"), read_only=True)
    labels = con.execute("SELECT source, format, provider_name, request_model, response_model FROM token_call_labels "
                         "ORDER BY label_id").fetchall()
    calls = con.execute("SELECT * EXCLUDE (audit_id) FROM token_calls ORDER BY source, line").fetchall()
    n_rows = con.execute("SELECT count(*) FROM token_call_rows").fetchone()[0]
    con.close()
    assert len({r[0] for r in labels}) == len(logs) and len({r[3:] for r in labels}) > 1 and len(labels) < n_rows
    assert len(calls) == n_rows and all(c[1] is not None and c[3] for c in calls)  # every call has its source, format

    monkeypatch.setattr(engine, "labels_hash_apart", lambda con: False)
    quiet_audit(logs, db=tmp_path / "strings.duckdb")
    con = duckdb.connect(str(tmp_path / "strings.duckdb"), read_only=True)
    assert con.execute("SELECT * EXCLUDE (audit_id) FROM token_calls ORDER BY source, line").fetchall() == calls
    con.close()


def test_labels_that_share_a_hash_are_found_by_their_strings(tmp_path):
    from kvreport.runner.audit.engine import labels_hash_apart

    con = duckdb.connect()
    con.execute("CREATE TEMP TABLE _call_labels AS SELECT * FROM (VALUES (1, 7::UBIGINT, 'a'), (2, 8, 'b')) t(label_id, label_hash, source)")
    assert labels_hash_apart(con)
    con.execute("UPDATE _call_labels SET label_hash = 7")
    assert not labels_hash_apart(con)


def test_since_until_also_bounds_the_prompt_bloat_analysis(tmp_path):
    """Calls outside --since/--until are skipped by every figure, prompt bloat included: token_bloat counts
    only the calls inside the window (it once read every call that logged messages)."""
    system = {"role": "system", "content": "You are a careful assistant. " * 8}
    lines = []
    for h in range(8):
        msgs = [system] + [{"role": "user", "content": f"turn {k} of the day"} for k in range(h + 1)]
        lines.append(json.dumps({"session_id": "s", "timestamp": f"2026-11-01T{h:02d}:00:00Z",
                                 "request": {"messages": msgs},
                                 "response": {"usage": {"prompt_tokens": 100 + h, "completion_tokens": 1}}}))
    log = tmp_path / "chat.jsonl"
    log.write_text("\n".join(lines) + "\n")
    quiet_audit([log], db=tmp_path / "w.duckdb", since="2026-11-01T05:00:00Z")
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        n_calls = con.execute("SELECT count(*) FROM token_calls").fetchone()[0]
        bloat_calls = con.execute("SELECT sum(n_calls) FROM token_bloat").fetchone()[0]
    assert n_calls == 3 and bloat_calls == 3


def _label_runs(monkeypatch) -> list[str]:
    """The label steps each audit runs from now on (store/label_parts*.sql), in order."""
    from kvreport.runner.audit import steps

    ran: list[str] = []
    real = steps.run_sql

    def recording(con, name, *args, **kwargs):
        if name.startswith("store/label_parts"):
            ran.append(name)
        return real(con, name, *args, **kwargs)

    monkeypatch.setattr(steps, "run_sql", recording)
    return ran


@pytest.mark.parametrize("system_on_line", [None, 3])
def test_a_label_shared_by_every_call_is_taken_from_the_first(tmp_path, monkeypatch, system_on_line):
    """Where every call has the first call's key, file, format and system-token source and one price row
    prices them all, the label is the first call's (store/label_parts_first.sql), not a grouping of the calls;
    one call that logs its system tokens is a second label, found by the grouping. Either way the stored labels
    and calls are those the grouping gives."""
    from kvreport.runner.audit import dollars

    log = tmp_path / "one.jsonl"
    log.write_text("".join(json.dumps({
        "session_id": f"s{i % 3}", "timestamp": 1764460800 + i, "request": {"model": "gpt-4o-mini"},
        **({"system_tokens": 4} if i == system_on_line else {}),
        "response": {"model": "gpt-4o-mini-2024-07-18", "usage": {"prompt_tokens": 40 + i, "completion_tokens": 3}},
    }) + "\n" for i in range(1, 9)))

    def stored(db: Path) -> tuple[list, list]:
        quiet_audit([log], db=db)
        with duckdb.connect(str(db), read_only=True) as con:
            return (con.execute("SELECT * EXCLUDE (audit_id) FROM token_call_labels ORDER BY label_id").fetchall(),
                    con.execute("SELECT * EXCLUDE (audit_id) FROM token_calls ORDER BY line").fetchall())

    ran = _label_runs(monkeypatch)
    labels, calls = stored(tmp_path / "a.duckdb")
    assert ran == (["store/label_parts_first"] if system_on_line is None else ["store/label_parts"])
    assert len(labels) == (1 if system_on_line is None else 2) and len(calls) == 8
    monkeypatch.setattr(dollars, "_one_row_for_all", lambda rows, key: False)
    assert stored(tmp_path / "b.duckdb") == (labels, calls) and ran[-1] == "store/label_parts"


def test_one_price_row_prices_every_call_only_without_periods_or_tiers():
    from kvreport.runner.audit.dollars import _Key, _one_row_for_all

    timed, untimed = _Key("openai", "m", "m", 5, None, None, False), _Key("openai", "m", "m", 5, None, None, True)
    row = dict(valid_from=None, valid_to=None, above_input_tokens=None, upto_input_tokens=None, untimed=True)
    assert _one_row_for_all([], timed) and _one_row_for_all([row], untimed)
    assert not _one_row_for_all([row, dict(row)], timed)
    for bound in ("valid_from", "valid_to", "above_input_tokens", "upto_input_tokens"):
        assert not _one_row_for_all([dict(row, **{bound: 1})], timed)
    assert _one_row_for_all([dict(row, untimed=False)], timed) and not _one_row_for_all([dict(row, untimed=False)], untimed)
