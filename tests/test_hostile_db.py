"""Issue 25, faults around the DB file: two audits creating one DB, a full disk, a read-only folder, a damaged
DB, a kill, and Ctrl-C. Each is one clear line naming the file and the cause, a non-zero exit, and nothing
left behind: no partial DB, backup or merge output, no scratch folder, no file of another process removed."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostile_disk import tiny_disk
from conftest import cli_process as _cli, one_clear_line as _one_clear_line

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "fixtures" / "audit" / "openai.jsonl"
PUBLISHED_V1 = ROOT / "tests" / "fixtures" / "published_v1.duckdb"


def _audits(db: Path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT audit_id FROM audits ORDER BY 1").fetchall()]
    finally:
        con.close()


@pytest.mark.slow
def test_audits_racing_to_create_one_db_never_remove_each_others_file(tmp_path):
    db = tmp_path / "new.duckdb"
    procs = [subprocess.Popen([sys.executable, "-m", "kvreport.runner", "audit", str(LOG), "--db", str(db)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
    ok = [r for r in results if r[0] == 0]
    assert ok, results
    assert _audits(db) == [f"audit-{i}" for i in range(1, len(ok) + 1)]  # every success is stored
    for rc, _out, err in results:
        if rc:
            assert len(err.strip().splitlines()) == 1 and str(db) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.duckdb"]  # no temporary DB left


def test_a_db_file_appearing_meanwhile_is_not_replaced(tmp_path):
    from kvreport.runner.core.scratch import DBAppeared, new_db_file

    target = tmp_path / "x.duckdb"
    with pytest.raises(DBAppeared):
        with new_db_file(target) as tmp:
            tmp.write_bytes(b"ours")
            target.write_bytes(b"theirs")  # another process created it while we worked
    assert target.read_bytes() == b"theirs" and sorted(p.name for p in tmp_path.iterdir()) == ["x.duckdb"]


@pytest.mark.slow
@pytest.mark.parametrize("room", ["300k", "1200k"])  # no room for the empty DB / room for it, not the audit
def test_audit_onto_a_full_disk_is_one_line_and_leaves_no_db(tmp_path, room):
    log = _big_log(tmp_path / "big.jsonl", 30_000)
    with tiny_disk(tmp_path / "disk", room) as disk:
        err = _one_clear_line(_cli("audit", log, "--db", disk / "a.duckdb"))
        assert "a.duckdb" in err and "No space left on device" in err, err
        assert "kvreport-new" not in err and "rollback" not in err.lower(), err
        assert list(disk.iterdir()) == []


def test_audit_into_a_read_only_folder_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    with tiny_disk(ro, "1m"):
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        err = _one_clear_line(_cli("audit", LOG, "--db", ro / "a.duckdb"))
        assert "a.duckdb" in err and "Read-only file system" in err, err


def test_migrate_on_a_full_disk_leaves_no_partial_backup(tmp_path):
    size = PUBLISHED_V1.stat().st_size
    with tiny_disk(tmp_path / "disk", str(size + size // 2)) as disk:
        db = disk / "old.duckdb"
        shutil.copyfile(PUBLISHED_V1, db)
        before = db.read_bytes()
        err = _one_clear_line(_cli("migrate", db))
        assert "old.duckdb" in err, err
        assert sorted(p.name for p in disk.iterdir()) == ["old.duckdb"], list(disk.iterdir())  # no .bak at all
        assert db.read_bytes() == before


@pytest.mark.slow
def test_merge_into_a_new_file_on_a_full_disk_leaves_no_output(tmp_path):
    src = tmp_path / "src.duckdb"
    assert _cli("audit", _big_log(tmp_path / "big.jsonl", 30_000), "--db", src).returncode == 0
    with tiny_disk(tmp_path / "disk", "1200k") as disk:  # room for an empty DB, not for the merged rows
        err = _one_clear_line(_cli("merge", src, "--into", disk / "m.duckdb"))
        assert "m.duckdb" in err, err
        assert list(disk.iterdir()) == []


@pytest.mark.slow
def test_a_damaged_db_is_named_and_not_called_in_use(tmp_path):
    db = tmp_path / "d.duckdb"
    assert _cli("audit", LOG, "--db", db).returncode == 0
    data = bytearray(db.read_bytes())
    data[4096:4096 + 8192] = os.urandom(8192)  # the header blocks, after the magic bytes
    db.write_bytes(bytes(data))
    for args in (["findings", "--db", db], ["audit", LOG, "--db", db], ["export", "--db", db, "--out", tmp_path / "x"]):
        err = _one_clear_line(_cli(*args))
        assert str(db) in err and "in use" not in err, err


@pytest.mark.slow
def test_scratch_a_killed_audit_left_is_removed_on_the_next_start(tmp_path):
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spill = tmp / f"kvreport-audit-{dead}-abc_12"
    spill.mkdir()
    (spill / "duckdb_temp_block-1.block").write_bytes(b"x" * 1000)
    alive = tmp / f"kvreport-audit-{os.getppid()}-abc_12"
    alive.mkdir()
    half_db = tmp_path / f".kvreport-new-{dead}-xyz.duckdb"
    half_db.write_bytes(b"half")
    env = dict(os.environ, TMPDIR=str(tmp))
    assert _cli("audit", LOG, "--db", tmp_path / "a.duckdb", env=env).returncode == 0
    assert not spill.exists() and not half_db.exists() and alive.exists()
    assert sorted(p.name for p in tmp.iterdir()) == [alive.name]  # the audit's own spill folder is gone too


def _big_log(path: Path, n: int) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"session_id": f"s{i % 997}", "timestamp": f"2025-01-01T00:{i % 60:02d}:00Z",
                                "response": {"id": f"c{i}", "object": "chat.completion", "created": 1735689600 + i,
                                             "model": "gpt-4o", "choices": [], "usage": {
                                                 "prompt_tokens": 100 + i % 50, "completion_tokens": 5,
                                                 "total_tokens": 105}}}) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_an_interrupted_audit_exits_with_its_code_and_leaves_nothing(tmp_path, sig, code, word):
    log = _big_log(tmp_path / "big.jsonl", 300_000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    db = tmp_path / "a.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "kvreport.runner", "audit", str(log), "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=str(tmp)))
    deadline = time.time() + 120
    while not list(tmp.glob("kvreport-audit-*")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    if proc.poll() is not None:
        pytest.skip("the audit finished before it could be interrupted")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code and err.strip().splitlines()[-1] == word, (proc.returncode, err[-1000:])
    assert "Traceback" not in err
    assert not db.exists() and list(tmp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.jsonl", "tmp"]


@pytest.mark.slow
def test_damaged_data_blocks_are_one_line_naming_the_db(tmp_path):
    """A block that fails its checksum shows only when a query reads it: whichever command meets it says the
    DB file is damaged, naming it, and leaves no output."""
    fixture = ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb"
    size = fixture.stat().st_size
    met = 0
    for frac in (0.6, 0.8, 0.95):
        db = tmp_path / f"d{frac}.duckdb"
        data = bytearray(fixture.read_bytes())
        off = int(size * frac) // 4096 * 4096 + 100
        data[off:off + 64] = bytes(range(64))
        db.write_bytes(bytes(data))
        for args in (["findings", "--db", db], ["build", "--db", db, "--out", tmp_path / f"s{frac}"],
                     ["export", "--db", db, "--out", tmp_path / f"e{frac}"]):
            r = _cli(*args)
            if r.returncode == 0:
                continue
            err = _one_clear_line(r)
            assert str(db) in err and "damaged" in err, err
            met += 1
    assert met >= 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("s", ".kvreport"))]
    assert all(not list(p.iterdir()) for p in tmp_path.glob("e*"))


# --- a DB from someone else is data, never code -------------------------------------------------------------
SITE_DB = ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb"
SECRET = "TOPSECRET-7f3a"


def _theirs(tmp_path: Path, *statements: str, base: Path = SITE_DB) -> Path:
    """A copy of a good kvreport DB with `statements` run on it ({secret} is a file only they would read)."""
    import duckdb

    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    db = tmp_path / "theirs.duckdb"
    shutil.copyfile(base, db)
    con = duckdb.connect(str(db))
    try:
        for stmt in statements:
            con.execute(stmt.replace("{secret}", str(secret)).replace("{dir}", str(tmp_path)))
    finally:
        con.close()
    return db


_HOSTILE = {
    # runs is a view over a file of the reader's machine
    "view over a file": (["DROP TABLE runs", "CREATE VIEW runs AS SELECT 1 AS run_id, column0 AS model "
                          "FROM read_csv('{secret}', header = false)"], "view 'runs'"),
    # a macro shadows DuckDB's own printf (and would print the file wherever a query formats a number)
    "macro printf": (["CREATE MACRO printf(a, b) AS (SELECT string_agg(column0, '') "
                      "FROM read_csv('{secret}', header = false))"], "macro 'printf'"),
    # a table name that is SQL when pasted unquoted into a statement
    "table name with SQL": (["""CREATE TABLE "x AS SELECT 1; COPY (SELECT 1) TO '{dir}/inj.sh'; --" (a INT)"""],
                            "table \"x AS SELECT 1; COPY"),
    # a column of token_call_labels whose name is SQL (store/calls_labelled.sql lists that table's columns)
    "column name with SQL": (["""ALTER TABLE token_call_labels ADD COLUMN "1) AS h, (SELECT 1" VARCHAR"""],
                             "table 'token_call_labels'"),
}


def _commands(db: Path, tmp_path: Path) -> list[list]:
    good = tmp_path / "good.duckdb"
    shutil.copyfile(SITE_DB, good)
    return [["build", "--db", db, "--out", tmp_path / "site"], ["export", "--db", db, "--out", tmp_path / "export"],
            ["findings", "--db", db], ["merge", db, "--into", tmp_path / "merged.duckdb"],
            ["merge", good, "--into", db], ["migrate", db], ["audit", LOG, "--db", db]]


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(_HOSTILE))
def test_a_db_holding_foreign_objects_is_refused_by_every_command_naming_them(tmp_path, kind):
    statements, named = _HOSTILE[kind]
    db = _theirs(tmp_path, *statements)
    before = db.read_bytes()
    for args in _commands(db, tmp_path):
        r = _cli(*args, cwd=tmp_path)
        err = _one_clear_line(r)
        assert r.returncode == 2 and str(db) in err and named in err, (args, err)
        assert SECRET not in r.stdout + r.stderr, args
    assert db.read_bytes() == before  # nothing was migrated or merged into it
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["good.duckdb", "secret.txt", "theirs.duckdb"], left  # no site, export, merge or inj.sh


@pytest.mark.slow
def test_an_older_db_with_a_macro_is_refused_before_it_is_migrated(tmp_path):
    db = _theirs(tmp_path, "CREATE MACRO upper(x) AS (SELECT string_agg(column0, '') FROM read_csv('{secret}', header = false))",
                 base=PUBLISHED_V1)
    before = db.read_bytes()
    from kvreport.runner.core.errors import StoreError
    from kvreport.runner.core.store import Store

    for read_only in (True, False):
        with pytest.raises(StoreError, match=r"macro 'upper'.* at schema 1 "):
            Store(db, read_only=read_only, allow_older=True)
    assert db.read_bytes() == before


@pytest.mark.slow
def test_a_reading_connection_reaches_no_file_and_cannot_be_unlocked(tmp_path):
    import duckdb
    from kvreport.runner.core.store import Store

    db = _theirs(tmp_path)
    out = tmp_path / "out"
    with Store(db, read_only=True, allow_older=True, writable=[out]) as store:
        for sql in (f"SELECT * FROM read_csv('{tmp_path / 'secret.txt'}')",
                    f"COPY (SELECT 1) TO '{tmp_path / 'x.csv'}'",
                    "SET enable_external_access = true", "SET allowed_directories = ['/']",
                    "INSTALL sqlite"):
            with pytest.raises(duckdb.Error):
                store.con.execute(sql)
        store.export_tables(out, "csv")  # its own output folder stays writable
    assert (out / "runs.csv").is_file() and not (tmp_path / "x.csv").exists()


def test_store_columns_quote_every_name_the_db_gives(tmp_path):
    """Names from the DB never become SQL: the audit's column lists (store/*.sql) quote each one."""
    from kvreport.runner.audit.engine import store_columns
    from kvreport.runner.core.connections import connect
    from kvreport.runner.core.migrations import create_schema

    con = connect()
    create_schema(con)
    con.execute("""ALTER TABLE token_call_labels RENAME COLUMN provider_name TO "p"", 'x') AS h, (SELECT 1" """)
    cols = store_columns(con)
    con.execute("CREATE TEMP TABLE c AS SELECT * FROM token_call_labels")
    # one column per name, however the name reads
    assert len(con.execute(f"SELECT {cols['label_columns']} FROM c").description) == \
        len(con.execute("SELECT * FROM token_call_labels").description) - 3  # less audit_id, run_id, label_id
