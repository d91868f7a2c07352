"""The DuckDB store: schema version, refusal of foreign/newer files, atomic experiment writes."""
import duckdb
import pytest

from kvreport.runner.core.store import SCHEMA_VERSION, Store, StoreError


def _meta():
    return {"device_kind": "cpu", "device_name": "test cpu", "model": "tiny-gpt2", "dtype": "float32"}


def test_new_file_gets_schema_version_and_core_tables(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        assert {"runs", "experiments", "kv_memory_v2", "kv_per_layer", "kv_memory"} <= set(s.tables())
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
        with pytest.raises(Exception):
            s.record_experiment(run_id, "kv_memory_v2", "ok", None, {"kv_memory_v2": [good, bad]})
        assert s.query("SELECT count(*) AS n FROM kv_memory_v2")[0]["n"] == 0
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


@pytest.mark.parametrize("fail_on", ["kv_memory_v2", "kv_per_layer", "experiments"])
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
            s.record_experiment(run_id, "kv_memory_v2", "ok", None, {
                "kv_memory_v2": [{"seq_len": 8, "batch_size": 1, "kv_bytes": 10}],
                "kv_per_layer": [{"layer": 0, "seq_len": 8, "batch_size": 1, "k_bytes": 5, "v_bytes": 5}]})
        monkeypatch.undo()
        for table in ("kv_memory_v2", "kv_per_layer", "experiments"):
            assert s.query(f"SELECT count(*) AS n FROM {table}")[0]["n"] == 0, table


@pytest.mark.slow
def test_a_failed_write_marks_the_run_failed_and_keeps_the_other_experiments(tmp_path, monkeypatch):
    from kvreport.runner.commands import run as run_cmd

    real = Store._insert

    def insert(self, table, rows):
        rows = list(rows)
        if table == "experiments" and rows and rows[0]["experiment"] == "kv_memory_v2" and rows[0]["status"] == "ok":
            raise RuntimeError("status row refused")
        return real(self, table, rows)

    monkeypatch.setattr(Store, "_insert", insert)
    db = tmp_path / "k.duckdb"
    run_id = run_cmd.execute("tiny-gpt2", "cpu", "float32", ["2"], True, db, echo=lambda *_: None,
                             only=["kv_memory_v2", "device_ceilings"])
    monkeypatch.undo()
    with Store(db, read_only=True) as s:
        assert s.query("SELECT status FROM runs WHERE run_id = ?", [run_id])[0]["status"] == "failed"
        assert s.query("SELECT count(*) AS n FROM kv_memory_v2")[0]["n"] == 0
        assert s.query("SELECT count(*) AS n FROM kv_per_layer")[0]["n"] == 0
        st = {r["experiment"]: r["status"] for r in s.query("SELECT experiment, status FROM experiments")}
        assert st == {"kv_memory_v2": "failed", "device_ceilings": "ok"}


def test_a_key_only_later_rows_carry_is_stored_not_dropped(tmp_path):
    with Store(tmp_path / "k.duckdb") as s:
        run_id = s.begin_run(_meta())
        s.record_experiment(run_id, "kv_memory_v2", "ok", None, {"kv_memory_v2": [
            {"seq_len": 8, "batch_size": 1},
            {"seq_len": 16, "batch_size": 1, "kv_bytes": 160}]})
        rows = s.query("SELECT seq_len, kv_bytes FROM kv_memory_v2 ORDER BY seq_len")
        assert [(r["seq_len"], r["kv_bytes"]) for r in rows] == [(8, None), (16, 160)]
