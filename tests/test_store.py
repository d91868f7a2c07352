"""The DuckDB store: schema version, refusal of foreign/newer files, atomic experiment writes."""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from kvreport.runner.core import connections
from kvreport.runner.core.connections import FILE_MEMORY_LIMIT, connect
from kvreport.runner.core.errors import StoreError
from kvreport.runner.core.migrations import apply_steps, create_schema, fresh_schema, schema_ddl, SCHEMA_VERSION
from kvreport.runner.core.store import Store


def _meta():
    return {"device_kind": "cpu", "device_name": "test cpu", "model": "tiny-gpt2", "dtype": "float32"}


def test_new_file_gets_schema_version_and_core_tables(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        assert {"runs", "experiments", "cache_tensors", "kv_per_layer", "allocator_memory"} <= set(s.tables())
        v = s.query("SELECT value FROM kvreport_meta WHERE key = 'schema_version'")[0]["value"]
        assert int(v) == SCHEMA_VERSION


def test_run_ids_increase_and_status_is_recorded(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        a = s.begin_run(_meta())
        s.finish_run(a, "complete")
        b = s.begin_run(_meta())
        assert b == a + 1
        assert s.query("SELECT status FROM runs WHERE run_id = ?", [a])[0]["status"] == "complete"


def test_a_run_left_running_is_marked_interrupted_by_the_next(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        a = s.begin_run(_meta())  # never finished: the process "died"
    with Store(tmp_path / "k.duckdb") as s:
        s.begin_run(_meta())
        assert s.query("SELECT status FROM runs WHERE run_id = ?", [a])[0]["status"] == "interrupted"


def test_experiment_rows_are_all_or_nothing(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        run_id = s.begin_run(_meta())
        good = {"seq_len": 8, "batch_size": 1, "kv_bytes": 10}
        bad = {"seq_len": "not a number", "batch_size": 1, "kv_bytes": 10}
        with pytest.raises(duckdb.ConversionException):
            s.record_experiment(run_id, "cache_tensors", "ok", None, {"cache_tensors": [good, bad]})
        assert s.query("SELECT count(*) AS n FROM cache_tensors")[0]["n"] == 0
        assert s.query("SELECT count(*) AS n FROM experiments")[0]["n"] == 0


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "k.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE kvreport_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(StoreError, match="newer kvreport"):
        Store(path)


def test_foreign_duckdb_file_is_refused(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.close()
    with pytest.raises(StoreError, match="not a kvreport DB"):
        Store(path)


def test_non_duckdb_file_is_refused(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_text("hello, I am a text file\n" * 100)
    with pytest.raises(StoreError, match="not a DuckDB file"):
        Store(path)


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "nope" / "k.duckdb")


def test_read_only_open_of_missing_file(tmp_path):
    with pytest.raises(StoreError, match="no such DB file"):
        Store(tmp_path / "k.duckdb", read_only=True)


@pytest.mark.parametrize("fail_on", ["cache_tensors", "kv_per_layer", "experiments"])
def test_a_failure_at_any_insert_leaves_no_rows_of_that_experiment(tmp_path, monkeypatch, fail_on):
    """Data rows and the status row commit together: whichever insert fails, none of them stays."""
    with Store(tmp_path / "k.duckdb") as s:
        run_id = s.begin_run(_meta())
        real = Store._insert

        def insert(self, table, rows):
            if table == fail_on:
                raise RuntimeError(f"disk full while writing {table}")
            return real(self, table, rows)

        monkeypatch.setattr(Store, "_insert", insert)
        with pytest.raises(RuntimeError, match="disk full"):
            s.record_experiment(run_id, "cache_tensors", "ok", None, {
                "cache_tensors": [{"seq_len": 8, "batch_size": 1, "kv_bytes": 10}],
                "kv_per_layer": [{"layer": 0, "seq_len": 8, "batch_size": 1, "k_bytes": 5, "v_bytes": 5}]})
        monkeypatch.undo()
        for table in ("cache_tensors", "kv_per_layer", "experiments"):
            assert s.query(f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0, table


@pytest.mark.slow
def test_a_failed_write_marks_the_run_failed_and_keeps_the_other_experiments(tmp_path, monkeypatch):
    from conftest import quiet_run

    real = Store._insert

    def insert(self, table, rows):
        rows = list(rows)
        if table == "experiments" and rows and rows[0]["experiment"] == "cache_tensors" and rows[0]["status"] == "ok":
            raise RuntimeError("status row refused")
        return real(self, table, rows)

    monkeypatch.setattr(Store, "_insert", insert)
    db = tmp_path / "k.duckdb"
    run_id = quiet_run(db, only=["cache_tensors", "device_ceilings"]).run_id
    monkeypatch.undo()
    with Store(db, read_only=True) as s:
        assert s.query("SELECT status FROM runs WHERE run_id = ?", [run_id])[0]["status"] == "failed"
        assert s.query("SELECT count(*) AS n FROM cache_tensors")[0]["n"] == 0
        assert s.query("SELECT count(*) AS n FROM kv_per_layer")[0]["n"] == 0
        st = {r["experiment"]: r["status"] for r in s.query("SELECT experiment, status FROM experiments")}
        assert st == {"cache_tensors": "failed", "device_ceilings": "ok"}


def test_a_key_only_later_rows_carry_is_stored_not_dropped(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        run_id = s.begin_run(_meta())
        s.record_experiment(run_id, "cache_tensors", "ok", None, {"cache_tensors": [
            {"seq_len": 8, "batch_size": 1},
            {"seq_len": 16, "batch_size": 1, "kv_bytes": 160}]})
        rows = s.query("SELECT seq_len, kv_bytes FROM cache_tensors ORDER BY seq_len")
        assert [(r["seq_len"], r["kv_bytes"]) for r in rows] == [(8, None), (16, 160)]


def _schema_of(con) -> dict:
    """Everything a schema is: each table's and view's DDL, its constraints, and the rows of every table."""
    tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal "
                                        "AND database_name = current_database() ORDER BY 1").fetchall()]
    return {"ddl": schema_ddl(con),
            "constraints": con.execute("SELECT table_name, constraint_type, constraint_column_names::VARCHAR "
                                       "FROM duckdb_constraints() WHERE database_name = current_database() "
                                       "ORDER BY ALL").fetchall(),
            "rows": {t: con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall() for t in tables}}


def test_fresh_schema_is_what_the_steps_build():
    """runner/core/schema/fresh.sql (a new DB's schema in one pass) equals every step applied in order: run
    scripts/schema_snapshot.py after changing a step."""
    stepwise, fresh = connect(), connect()
    assert apply_steps(stepwise, 0) == SCHEMA_VERSION
    assert create_schema(fresh) == SCHEMA_VERSION
    assert _schema_of(fresh) == _schema_of(stepwise), "run scripts/schema_snapshot.py"


def test_a_new_file_is_created_from_the_fresh_schema_and_a_stale_one_is_not_used(tmp_path):
    """Store creates a new file from fresh.sql; a fresh.sql behind the latest step (a step added without a new
    snapshot) is ignored and the steps are applied instead, so a new file is never at the wrong schema."""
    created = Store(tmp_path / "a.duckdb")
    assert _schema_of(created.con)["ddl"] == _schema_of_steps()["ddl"]
    created.close()
    stale = fresh_schema().replace(f"schema version {SCHEMA_VERSION}:", f"schema version {SCHEMA_VERSION - 1}:", 1)
    stale = stale.replace("CREATE TABLE runs(", "CREATE TABLE runs(stale_marker INTEGER, ", 1)
    con = connect()
    assert create_schema(con, fresh=stale) == SCHEMA_VERSION
    assert _schema_of(con)["ddl"] == _schema_of_steps()["ddl"]


def _schema_of_steps() -> dict:
    con = connect()
    apply_steps(con, 0)
    return _schema_of(con)


# --- bounded memory ------------------------------------------------------------------------------------------
def _spill_folder(con) -> Path:
    return Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])


def test_every_db_files_connection_has_a_memory_limit_and_spills_into_this_processs_scratch(tmp_path):
    """DuckDB's default, 80% of the machine, let `build` of a million runs reach gigabytes."""
    with connect() as probe:
        probe.execute("SET memory_limit = ?", [FILE_MEMORY_LIMIT])
        limit = probe.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    one, other = tmp_path / "one.duckdb", tmp_path / "other.duckdb"
    Store(one).close()
    Store(other).close()
    with Store(one) as writer, connect(one) as beside, Store(other, read_only=True) as reader:
        cons = [writer.con, beside, reader.con]
        folders = [_spill_folder(con) for con in cons]
        for con, folder in zip(cons, folders):
            assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == limit
            assert re.fullmatch(rf"kvreport-spill-{os.getpid()}-\w+", folder.parent.name), folder
            assert folder.parent.parent == Path(tempfile.gettempdir()) and folder.is_dir()
        # One file's connections share its folder (DuckDB refuses a second connection configured otherwise);
        # two files never share spill files.
        assert folders[0] == folders[1] != folders[2]


def test_a_sealed_reader_over_its_limit_spills_rather_than_failing(tmp_path, monkeypatch):
    monkeypatch.setattr(connections, "FILE_MEMORY_LIMIT", "64MB")
    db = tmp_path / "big.duckdb"
    with duckdb.connect(str(db)) as con:  # ~100 MB of text, more than the limit holds
        con.execute("CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) || md5(range::VARCHAR) AS s "
                    "FROM range(1500000)")
    with connect(db, read_only=True, sealed=True) as con:
        con.execute("SELECT s, i FROM t ORDER BY s DESC")
        assert con.fetchmany(1)[0][0].startswith("ffff")
        spilled = con.cursor().execute("SELECT count(*) FROM duckdb_temporary_files()").fetchone()[0]
        assert spilled > 0


def test_the_spill_folder_is_removed_when_the_process_exits(tmp_path):
    db = tmp_path / "k.duckdb"
    Store(db).close()
    code = ("import sys\nfrom kvreport.runner.core.store import Store\ns = Store(sys.argv[1], read_only=True)\n"
            "print(s.con.execute(\"SELECT current_setting('temp_directory')\").fetchone()[0])\ns.close()")
    r = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    folder = Path(r.stdout.strip())
    assert folder.parent.name.startswith("kvreport-spill-") and not folder.parent.exists()
