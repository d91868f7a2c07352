"""`kvreport export --layout seed` writes the profiler's own file names; the default names files after the
tables, which schema step 10 named for what they measure."""
from conftest import cli_in_process

from kvreport.runner.core.store import Store
from kvreport.runner.core.table_names import SEED_NAMES


def _db_with_rows(tmp_path):
    db = tmp_path / "k.duckdb"
    with Store(db) as s:
        run = s.begin_run({"device_kind": "cpu", "model": "gpt2"})
        s.record_experiment(run, "cache_tensors", "ok", None, {
            "cache_tensors": [{"seq_len": 8, "batch_size": 1, "kv_bytes": 64}],
            "decode_cost": [{"prefix_len": 8, "batch_size": 1, "step_ms": 1.5}]})
    return db


def test_seed_layout_writes_the_profilers_names_with_the_same_rows(tmp_path):
    db = _db_with_rows(tmp_path)
    assert cli_in_process("export", "--db", db, "--out", tmp_path / "t").returncode == 0
    r = cli_in_process("export", "--db", db, "--out", tmp_path / "s", "--layout", "seed")
    assert r.returncode == 0, r.stderr
    tables = {p.name for p in (tmp_path / "t").iterdir()}
    seed = {p.name for p in (tmp_path / "s").iterdir()}
    assert {"cache_tensors.csv", "decode_cost.csv"} <= tables and "kv_memory_v2.csv" not in tables
    assert {"kv_memory_v2.csv", "kv_decode_cost_v2.csv", "runs.csv"} <= seed and "cache_tensors.csv" not in seed
    assert len(seed) == len(tables)
    for new, old in SEED_NAMES.items():
        assert (tmp_path / "t" / f"{new}.csv").read_bytes() == (tmp_path / "s" / f"{old}.csv").read_bytes()


def test_an_unknown_layout_is_one_line_and_exit_2(tmp_path):
    db = _db_with_rows(tmp_path)
    r = cli_in_process("export", "--db", db, "--out", tmp_path / "x", "--layout", "v2")
    assert r.returncode == 2 and "--layout v2" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()
