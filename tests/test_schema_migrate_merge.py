"""The store owns the schema: versioned steps, real migrations of published files, and `kvreport merge`."""
import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest

from kvreport.runner.core.merge import merge
from kvreport.runner.core.errors import StoreError
from kvreport.runner.core.migrations import schema_steps, SCHEMA_VERSION, table_columns
from kvreport.runner.core.store import current_schema_copy, Store
from kvreport.runner.core.table_names import SEED_NAMES
from conftest import cli_in_process

PUBLISHED_V1 = Path(__file__).parent / "fixtures" / "published_v1.duckdb"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _version(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute("SELECT value FROM kvreport_meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        con.close()


def _meta(host="box-a", model="tiny-gpt2"):
    return {"device_kind": "cpu", "device_name": "test cpu", "model": model, "dtype": "float32", "host": host}


def _add_run(path: Path, host="box-a", rows=2) -> int:
    with Store(path) as s:
        run_id = s.begin_run(_meta(host))
        s.record_experiment(run_id, "cache_tensors", "ok", None, {"cache_tensors": [
            {"seq_len": 8 * (i + 1), "batch_size": 1, "kv_bytes": 100 * (i + 1)} for i in range(rows)]})
        s.finish_run(run_id, "complete")
    return run_id


def test_schema_steps_are_numbered_files_starting_at_the_published_version():
    steps = schema_steps()
    assert steps[0].version == 1 and steps[0].name == "001_initial.sql"
    assert [s.version for s in steps] == sorted({s.version for s in steps})
    assert SCHEMA_VERSION == steps[-1].version >= 2


def test_a_fresh_file_equals_a_migrated_published_file(tmp_path):
    fresh = tmp_path / "fresh.duckdb"
    Store(fresh).close()
    old = tmp_path / "old.duckdb"
    shutil.copyfile(PUBLISHED_V1, old)
    Store(old).close()
    cf, co = duckdb.connect(str(fresh)), duckdb.connect(str(old))
    try:
        assert table_columns(cf) == table_columns(co)
    finally:
        cf.close()
        co.close()


def test_the_published_v1_db_migrates_in_place_with_a_backup_and_keeps_every_row(tmp_path):
    db = tmp_path / "kvreport.duckdb"
    shutil.copyfile(PUBLISHED_V1, db)
    before = duckdb.connect(str(db), read_only=True)
    counts = {t: before.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for (t,) in before.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    before.close()
    r = cli_in_process("migrate", db)
    assert r.returncode == 0, r.stderr
    assert "migrated to schema" in r.stdout
    backup = db.with_name("kvreport.duckdb.schema1.bak")
    assert backup.is_file() and _digest(backup) == _digest(PUBLISHED_V1)
    assert _version(db) == SCHEMA_VERSION
    with Store(db, read_only=True) as s:
        for table, n in counts.items():
            renamed = {old: new for new, old in SEED_NAMES.items()}.get(table, table)
            assert s.query(f"SELECT count(*) AS n FROM {renamed}")[0]["n"] == n, table
        uids = s.query("SELECT run_uid FROM runs")
        assert uids and all(u["run_uid"] for u in uids)
    r = cli_in_process("migrate", db)
    assert r.returncode == 0 and "nothing to do" in r.stdout


def test_a_failing_step_leaves_the_file_at_its_old_version(tmp_path):
    from kvreport.runner.core import migrations as migrations

    db = tmp_path / "old.duckdb"
    shutil.copyfile(PUBLISHED_V1, db)
    real = migrations.schema_steps()
    broken = [*real[:-1], migrations.SchemaStep(real[-1].version, real[-1].name,
                                               real[-1].sql + "\nALTER TABLE no_such_table ADD COLUMN x INT;")]
    with pytest.raises(StoreError, match=real[-1].name):
        Store(db, steps=broken)
    assert _version(db) == 1
    con = duckdb.connect(str(db), read_only=True)
    assert "run_uid" not in table_columns(con)["runs"]  # step 002's column rolled back with the rest
    con.close()


@pytest.mark.slow
def test_readers_build_from_a_migrated_copy_and_never_touch_the_original(tmp_path):
    from kvreport.analysis.site import build_site

    db = tmp_path / "kvreport.duckdb"
    shutil.copyfile(PUBLISHED_V1, db)
    digest = _digest(db)
    with pytest.raises(StoreError, match="kvreport migrate"):
        Store(db, read_only=True)
    pages = build_site(db, tmp_path / "site")
    assert "index.html" in pages and (tmp_path / "site" / "claims.html").is_file()
    assert _digest(db) == digest and _version(db) == 1
    assert not list(tmp_path.glob("*.bak"))
    with current_schema_copy(db) as current:
        assert current != db and _version(current) == SCHEMA_VERSION
    assert not current.exists()  # the temporary copy is gone


def test_merge_remaps_run_ids_and_keeps_rows_with_their_run(tmp_path):
    a, b, out = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "out.duckdb"
    _add_run(a, "box-a", rows=1)
    _add_run(a, "box-a", rows=2)
    _add_run(b, "box-b", rows=3)  # run_id 1 in b collides with run_id 1 in a
    reports = merge([a, b], out)
    assert [(r.runs_added, r.runs_present) for r in reports] == [(2, 0), (1, 0)]
    with Store(out, read_only=True) as s:
        runs = s.query("SELECT run_id, host FROM runs ORDER BY run_id")
        assert [(r["run_id"], r["host"]) for r in runs] == [(1, "box-a"), (2, "box-a"), (3, "box-b")]
        per_run = s.query("SELECT run_id, count(*) AS n FROM cache_tensors GROUP BY run_id ORDER BY run_id")
        assert [(r["run_id"], r["n"]) for r in per_run] == [(1, 1), (2, 2), (3, 3)]
        statuses = s.query("SELECT run_id FROM experiments ORDER BY run_id")
        assert [r["run_id"] for r in statuses] == [1, 2, 3]


def test_merge_does_not_duplicate_a_run_it_already_holds(tmp_path):
    a, out = tmp_path / "a.duckdb", tmp_path / "out.duckdb"
    _add_run(a)
    merge([a], out)
    reports = merge([a], out)
    assert (reports[0].runs_added, reports[0].runs_present) == (0, 1)
    with Store(out, read_only=True) as s:
        assert s.query("SELECT count(*) AS n FROM runs")[0]["n"] == 1
        assert s.query("SELECT count(*) AS n FROM cache_tensors")[0]["n"] == 2


def test_merge_mixes_schema_versions_and_keeps_audit_ids_unique(tmp_path):
    old = tmp_path / "old.duckdb"
    shutil.copyfile(PUBLISHED_V1, old)
    digest = _digest(old)
    new = tmp_path / "new.duckdb"
    _add_run(new, "box-new")
    out = tmp_path / "out.duckdb"
    merge([old, new, old], out)  # the old file twice: its runs and audits are not duplicated
    assert _digest(old) == digest  # inputs are read through migrated copies
    src = duckdb.connect(str(PUBLISHED_V1), read_only=True)
    n_old_runs = src.execute("SELECT count(*) FROM runs").fetchone()[0]
    old_audits = src.execute("SELECT audit_id, run_id FROM audits ORDER BY audit_id").fetchall()
    n_calls = src.execute("SELECT count(*) FROM token_calls").fetchone()[0]
    src.close()
    with Store(out, read_only=True) as s:
        assert s.query("SELECT count(*) AS n FROM runs")[0]["n"] == n_old_runs + 1
        audits = s.query("SELECT audit_id, run_id FROM audits")
        assert len(audits) == len(old_audits) and len({a["audit_id"] for a in audits}) == len(audits)
        assert s.query("SELECT count(*) AS n FROM token_calls")[0]["n"] == n_calls
        # a run's demo audit is named after the run it belongs to in the merged file
        for a in audits:
            if a["run_id"] is not None and a["audit_id"].startswith("run-"):
                assert a["audit_id"].startswith(f"run-{a['run_id']}-")


def test_merge_renames_a_colliding_standalone_audit(tmp_path):
    def audit_db(path, created):
        with Store(path) as s:
            s.con.execute("INSERT INTO audits (audit_id, run_id, created_at, sources, n_calls) "
                          "VALUES ('audit-1', NULL, ?, 'x.jsonl', 1)", [created])
            s.con.execute("INSERT INTO token_call_labels (audit_id, run_id, label_id, source) "
                          "VALUES ('audit-1', NULL, 1, 'x.jsonl')")
            s.con.execute("INSERT INTO token_call_rows (audit_id, run_id, label_id, line, session_id) "
                          "VALUES ('audit-1', NULL, 1, 1, ?)", [created])

    a, b, out = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "out.duckdb"
    audit_db(a, "2026-01-01 00:00:00")
    audit_db(b, "2026-02-01 00:00:00")
    merge([a, b], out)
    with Store(out, read_only=True) as s:
        rows = s.query("SELECT audit_id, session_id, source FROM token_calls ORDER BY audit_id")
        assert [(r["audit_id"], r["session_id"], r["source"]) for r in rows] == [
            ("audit-1", "2026-01-01 00:00:00", "x.jsonl"), ("audit-2", "2026-02-01 00:00:00", "x.jsonl")]


def test_merge_gives_clashing_ids_the_next_free_numbers_in_creation_order(tmp_path):
    """Ids are settled in SQL for any number of audits and replays: a free id is kept, and the clashing ones
    get audit-N / replay-N, the lowest free numbers, oldest first."""
    def db(path, audits, replays):
        with Store(path) as s:
            for audit_id, created in audits:
                s.con.execute("INSERT INTO audits (audit_id, run_id, created_at, sources) VALUES (?, NULL, ?, 'x')",
                              [audit_id, created])
            for replay_id, created in replays:
                s.con.execute("INSERT INTO replays (replay_id, created_at, sources) VALUES (?, ?, 'x')",
                              [replay_id, created])

    a, b, out = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "out.duckdb"
    db(a, [("audit-1", "2026-01-01"), ("x", "2026-01-01")], [("replay-1", "2026-01-01")])
    db(b, [("x", "2026-03-01"), ("audit-1", "2026-02-01"), ("audit-3", "2025-12-01"), ("y", "2026-04-01")],
       [("replay-1", "2026-02-01"), ("r", "2026-03-01")])
    merge([a, b], out)
    with Store(out, read_only=True) as s:
        audits = s.query("SELECT audit_id, created_at::DATE::VARCHAR AS d FROM audits ORDER BY audit_id")
        replays = s.query("SELECT replay_id, created_at::DATE::VARCHAR AS d FROM replays ORDER BY replay_id")
    assert [(r["audit_id"], r["d"]) for r in audits] == [
        ("audit-1", "2026-01-01"), ("audit-2", "2026-02-01"), ("audit-3", "2025-12-01"), ("audit-4", "2026-03-01"),
        ("x", "2026-01-01"), ("y", "2026-04-01")]
    assert [(r["replay_id"], r["d"]) for r in replays] == [
        ("r", "2026-03-01"), ("replay-1", "2026-01-01"), ("replay-2", "2026-02-01")]


def test_merge_refuses_a_bad_input_before_writing(tmp_path):
    good, bad, out = tmp_path / "good.duckdb", tmp_path / "bad.duckdb", tmp_path / "out.duckdb"
    _add_run(good)
    bad.write_text("not a db")
    r = cli_in_process("merge", good, bad, "--into", out)
    assert r.returncode == 2 and "bad.duckdb" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_step_6_stores_calls_narrow_and_the_token_calls_view_reads_as_the_table_did(tmp_path):
    """A schema-5 file's calls move into token_call_rows + token_call_labels; token_calls (now a view) gives
    back the same rows, columns and order of columns."""
    from kvreport.runner.core import migrations as migrations

    db = tmp_path / "v5.duckdb"
    real = migrations.schema_steps()
    with Store(db, steps=[st for st in real if st.version <= 5]) as s:
        cols = table_columns(s.con)["token_calls"]
        rows = []
        for i in range(12):  # three audits; labels that differ in one string or in a NULL only
            rows.append({"audit_id": f"audit-{i % 3}", "run_id": None if i % 3 else 7, "source": f"f{i % 2}.jsonl",
                         "line": i + 1, "format": "openai", "session_id": f"s{i % 4}",
                         "provider_name": "openai", "request_model": None if i % 4 == 1 else "m",
                         "response_model": "m-1", "input_tokens": 100 + i, "cached_input_tokens": i,
                         "output_tokens": 5, "system_tokens_source": "explicit" if i % 5 == 0 else None,
                         "cost_usd": 0.001 * i, "price_source": "p"})
        s._insert("token_calls", rows)
        before = s.con.execute("SELECT * FROM token_calls ORDER BY ALL").fetchall()
    with Store(db) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert [d[0] for d in s.con.execute("SELECT * FROM token_calls LIMIT 0").description] == cols
        assert s.con.execute("SELECT * FROM token_calls ORDER BY ALL").fetchall() == before
        labels = s.query("SELECT audit_id, list(label_id ORDER BY label_id) AS ids FROM token_call_labels "
                         "GROUP BY audit_id ORDER BY audit_id")
        assert all(r["ids"] == list(range(1, len(r["ids"]) + 1)) for r in labels)
        n_distinct = s.con.execute("SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (line, session_id, input_tokens, "
                                   "cached_input_tokens, output_tokens, cost_usd) FROM token_calls)").fetchone()[0]
        assert sum(len(r["ids"]) for r in labels) == n_distinct < len(before)
        assert "token_calls" not in table_columns(s.con)  # a view: merge copies the two tables, not it


def test_step_12_keeps_stored_costs_and_prices_new_calls_from_their_labels_rates(tmp_path):
    """A schema-11 file's calls keep the costs they were stored with (token_call_rows_with_costs); an audit
    after the step stores no per-call cost, and token_calls prices its calls from their label's rates."""
    from kvreport.runner.core import migrations as migrations

    db = tmp_path / "v11.duckdb"
    with Store(db, steps=[st for st in migrations.schema_steps() if st.version <= 11]) as s:
        s._insert("token_call_labels", [{"audit_id": "audit-9", "label_id": 1, "source": "old.jsonl",
                                         "format": "openai", "response_model": "m", "price_source": "p"}])
        # costs that are no function of the tokens: the step must keep them, not recompute them
        s._insert("token_call_rows", [{"audit_id": "audit-9", "label_id": 1, "line": i + 1, "session_id": "s",
                                       "input_tokens": 100, "cached_input_tokens": 10, "output_tokens": 5,
                                       "input_cost_usd": 0.25 * i, "cost_usd": 1.0 + i} for i in range(3)])
        before = s.con.execute("SELECT * FROM token_calls ORDER BY line").fetchall()
    with Store(db) as s:
        assert s.con.execute("SELECT * FROM token_calls ORDER BY line").fetchall() == before
        assert s.con.execute("SELECT count(*) FROM token_call_rows_with_costs").fetchone()[0] == 3
        assert not {"cost_usd", "input_cost_usd"} & set(table_columns(s.con)["token_call_rows"])
    log = tmp_path / "new.jsonl"
    log.write_text("".join(
        '{"session_id": "n", "timestamp": "2025-06-02T10:00:0%dZ", "request": {"model": "gpt-4o"}, '
        '"response": {"model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": %d, "completion_tokens": 7, '
        '"prompt_tokens_details": {"cached_tokens": %d}}}}\n' % (i, 1000 + i, 100 * i) for i in range(3)))
    r = cli_in_process("audit", str(log), "--db", str(db))
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM token_call_rows").fetchone()[0] == 3
        rates = con.execute("SELECT input_usd_mtok, cache_read_usd_mtok, output_usd_mtok, request_usd "
                            "FROM token_call_labels WHERE source = ?", [str(log)]).fetchone()
        assert rates[0] > 0 and rates[1] > 0 and rates[2] > 0
        rows = con.execute("SELECT input_tokens, cached_input_tokens, output_tokens, input_cost_usd, "
                           "cache_read_cost_usd, output_cost_usd, cost_usd FROM token_calls "
                           "WHERE source = ? ORDER BY line", [str(log)]).fetchall()
        for n_in, n_cached, n_out, c_in, c_read, c_out, total in rows:
            assert c_in == (n_in - n_cached) * rates[0] / 1e6
            assert c_read == n_cached * rates[1] / 1e6
            assert c_out == n_out * rates[2] / 1e6
            assert total == c_in + c_read + 0.0 + c_out + rates[3]
        (session_cost,) = con.execute("SELECT cost_usd FROM token_audit WHERE session_id = 'n'").fetchone()
        assert session_cost == pytest.approx(sum(row[-1] for row in rows), rel=1e-12)
        assert con.execute("SELECT count(*) FROM token_calls").fetchone()[0] == 6
    finally:
        con.close()
