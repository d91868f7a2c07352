"""`kvreport audit --ray` (issue 28): the audit as Ray tasks gives the single-process audit's rows, survives a
worker that dies, and stores nothing when a task fails for good.

One local Ray of 2 CPUs for the whole module (started and stopped here; no Ray process outlives it), and logs
of a few thousand calls."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from pathlib import Path

import duckdb
import pytest

from kvreport.runner.audit.distributed import FLOAT_DIGITS, RayAuditError, check_address
from kvreport.runner.audit.ray_tasks import FAULTS_ENV
from kvreport.runner.audit.engine import TABLES
from kvreport.runner.commands.output import Output
from kvreport.runner.core.errors import UserError
from conftest import audit_result, quiet_audit

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.slow]

FIX = Path(__file__).parent / "fixtures" / "audit"
# Columns that differ between any two runs of the audit, on one process or many.
RUN_COLUMNS = {"audits": ("created_at", "duration_s")}


@pytest.fixture(scope="module")
def faults(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module", autouse=True)
def local_ray(faults):
    """A Ray of 2 CPUs for the module; its workers inherit FAULTS_ENV (the crash markers' folder)."""
    os.environ[FAULTS_ENV] = str(faults)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    session = Path(ray._private.worker._global_node.get_session_dir_path()).name
    try:
        yield
    finally:
        ray.shutdown()
        os.environ.pop(FAULTS_ENV, None)
        deadline = time.time() + 20
        while (left := _processes_of(session)) and time.time() < deadline:
            time.sleep(0.5)
        assert not left, f"Ray processes left running: {left}"


def _processes_of(session: str) -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if session in cmd:
                out.append(f"{proc.name}: {cmd[:100]}")
    return out


def _select(con, db: str, table: str) -> str:
    """The table's rows with DOUBLEs rounded to FLOAT_DIGITS significant digits (the documented step: sums over
    many rows are added in another order) and the per-run columns left out."""
    cols = con.execute(f"DESCRIBE {db}.main.{table}").fetchall()
    parts = []
    for name, typ, *_ in cols:
        if name in RUN_COLUMNS.get(table, ()):
            continue
        q = f'"{name}"'
        if typ in ("DOUBLE", "FLOAT"):
            q = (f"CASE WHEN {q} IS NULL OR {q} = 0 OR NOT isfinite({q}) THEN {q} "
                 f"ELSE round({q}, {FLOAT_DIGITS} - 1 - CAST(floor(log10(abs({q}))) AS INTEGER)) END")
        parts.append(q)
    return f"SELECT {', '.join(parts)} FROM {db}.main.{table}"


def assert_same_audit(db_one: Path, db_ray: Path) -> dict[str, int]:
    """Every audit table holds the same rows in both DBs (EXCEPT ALL both ways empty); returns the row counts."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{db_one}' AS one (READ_ONLY)")
        con.execute(f"ATTACH '{db_ray}' AS ray (READ_ONLY)")
        counts = {}
        for table in TABLES:
            a, b = _select(con, "one", table), _select(con, "ray", table)
            only_one = con.execute(f"{a} EXCEPT ALL {b}").fetchall()
            only_ray = con.execute(f"{b} EXCEPT ALL {a}").fetchall()
            assert not only_one and not only_ray, (table, only_one[:3], only_ray[:3])
            n = con.execute(f"SELECT count(*) FROM one.main.{table}").fetchone()[0]
            assert n == con.execute(f"SELECT count(*) FROM ray.main.{table}").fetchone()[0]
            counts[table] = n
    finally:
        con.close()
    return counts


def _both(tmp_path: Path, paths: list[Path], **kw) -> tuple[dict, dict, dict[str, int]]:
    one = quiet_audit(paths, db=tmp_path / "one.duckdb", **kw)
    two = audit_result(paths, tmp_path / "ray.duckdb", ray="local", ray_partitions=3, **kw)
    return one, two.summary, assert_same_audit(tmp_path / "one.duckdb", tmp_path / "ray.duckdb") | {"run": two.ray_run}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[list[Path], Path]:
    """The demo's logs (OpenAI and Anthropic chats with messages, disconnects) and its tokenizer."""
    from kvreport.runner.audit.demo import write_demo

    return write_demo(tmp_path_factory.mktemp("demo"))


def _split(path: Path, folder: Path, parts: int) -> list[Path]:
    """The log's lines dealt round-robin into `parts` files: every session is split across them."""
    lines = path.read_text().splitlines(keepends=True)
    out = []
    for k in range(parts):
        p = folder / f"{path.stem}-{k}.jsonl"
        p.write_text("".join(lines[k::parts]))
        out.append(p)
    return out


def test_mixed_pile_with_rejects_and_split_sessions_is_the_single_process_audit(tmp_path, demo):
    logs, tok = demo
    pile = tmp_path / "pile"
    pile.mkdir()
    for f in sorted(FIX.iterdir()):
        if f.name != "xss.jsonl":
            shutil.copy(f, pile / f.name)
    for log in logs:  # the demo's chat sessions, each split across three files, one of them gzipped
        if not log.read_text().startswith("{"):
            shutil.copy(log, pile / log.name)
            continue
        for i, part in enumerate(_split(log, pile, 3)):
            if i == 2:
                part.with_suffix(".jsonl.gz").write_bytes(gzip.compress(part.read_bytes()))
                part.unlink()
    (pile / "broken.jsonl").write_text('{"session_id": "s-x", "response": {"usage": {"prompt_tokens": -1}}}\n{trunc\n')
    paths = sorted(pile.iterdir())
    one, two, counts = _both(tmp_path, paths, tokenizer=str(tok), gpu_hour_price=2.5)
    assert one["n_rejects"] > 5 and one["format"].startswith("mixed")  # the shapes the test is about
    assert counts["token_rejects"] == one["n_rejects"] and counts["token_call_rows"] == one["n_calls"] > 200
    assert counts["token_bloat"] > 10 and counts["token_repeats"] > 0 and counts["token_prices"] > 1
    assert counts["token_leakage"] == 120 and counts["token_ttl_sweep"] == 6
    assert one["audit_id"] == two["audit_id"] == "audit-1"
    assert two["duration_s"] > 0 and two["created_at"] is not None
    run = counts["run"]
    assert run.maps > 1 and run.partitions == 3 and {t.phase for t in run.task_times} == {"map", "reduce", "time"}


def test_since_until_window_is_the_single_process_audit(tmp_path, demo):
    logs, tok = demo
    con = duckdb.connect()
    lo, hi = con.execute("SELECT min(t), max(t) FROM (SELECT CAST(json_extract_string(j, '$.timestamp') AS TIMESTAMP) t "
                         "FROM read_json_objects(?) r(j))", [[str(f) for f in logs if f.read_text().startswith("{")]]).fetchone()
    con.close()
    since, until = lo + (hi - lo) / 4, lo + (hi - lo) * 3 / 4
    one, _, counts = _both(tmp_path, logs, tokenizer=str(tok), since=since.isoformat(), until=until.isoformat())
    assert one["n_skipped_lines"] > 50 and counts["token_call_rows"] > 50


def test_many_sessions_across_many_files_without_messages(tmp_path, monkeypatch):
    """Bigger than the fixtures: 6 files, 4,000 calls, sessions in every file, calls with no session, the
    session keys given by --session-key; the files named by relative paths, stored as given."""
    rows = []
    for i in range(4000):
        rec = {"meta": {"conv": f"c-{i % 97}"} if i % 13 else {},
               "timestamp": f"2026-11-01T{(i // 180) % 24:02d}:{(i // 3) % 60:02d}:{i % 60:02d}Z",
               "response": {"model": "gpt-4o-mini" if i % 3 else "claude-3-5-haiku-20241022",
                            "usage": {"prompt_tokens": 100 + i % 911, "completion_tokens": 7 + i % 50,
                                      "prompt_tokens_details": {"cached_tokens": (i % 5) * 16}}}}
        rows.append(json.dumps(rec))
    paths = []
    for k in range(6):
        p = tmp_path / f"log-{k}.jsonl"
        p.write_text("\n".join(rows[k::6]) + "\n\n")
        paths.append(p)
    monkeypatch.chdir(tmp_path)
    one, _, counts = _both(tmp_path, [Path(p.name) for p in paths], session_keys=["meta.conv"])
    assert one["n_sessions"] > 97 and counts["token_audit"] == one["n_sessions"]
    assert one["sources"].startswith("log-0.jsonl; ")


def test_a_worker_that_dies_is_retried(tmp_path, faults):
    paths = sorted(FIX.glob("*.jsonl"))
    for marker in ("crash-once-map-0", "crash-once-reduce-1", "crash-once-time-0"):
        (faults / marker).write_text("")
    try:
        one, _, counts = _both(tmp_path, paths)
        assert not list(faults.iterdir()), "every crash marker was used: each of those tasks died once"
    finally:
        for left in faults.iterdir():  # none after a pass; after a failure, no later test may crash
            left.unlink()
    assert counts["token_call_rows"] == one["n_calls"]


def _scratch_left(root: Path) -> list[Path]:
    return list(root.iterdir()) if root.exists() else []


def test_a_partition_that_fails_twice_fails_the_audit_naming_its_files(tmp_path, faults):
    paths = sorted(FIX.glob("*.jsonl"))
    (faults / "crash-reduce-0").write_text("")
    scratch = tmp_path / "scratch"
    try:
        with pytest.raises(RayAuditError) as err:
            quiet_audit(paths, db=tmp_path / "ray.duckdb", ray="local", ray_partitions=2, ray_scratch=scratch)
    finally:
        (faults / "crash-reduce-0").unlink()
    msg = str(err.value)
    assert "partition 0" in msg and "failed twice" in msg and ".jsonl" in msg and "nothing stored" in msg
    assert not (tmp_path / "ray.duckdb").exists()  # a new DB is not left behind
    assert not _scratch_left(scratch)


def test_a_bad_file_fails_the_audit_before_anything_is_written(tmp_path):
    db = tmp_path / "kept.duckdb"
    quiet_audit([FIX / "openai.jsonl"], db=db)  # an existing DB with one audit
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress((FIX / "openai.jsonl").read_bytes())[:-40])  # cut short: fails when read
    scratch = tmp_path / "scratch"
    with pytest.raises(UserError) as err:
        quiet_audit([FIX / "anthropic.jsonl", bad], db=db, ray="local", ray_scratch=scratch)
    assert str(bad) in str(err.value)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM audits").fetchone()[0] == 1
        assert con.execute("SELECT count(DISTINCT audit_id) FROM token_call_rows").fetchone()[0] == 1
    finally:
        con.close()
    assert not _scratch_left(scratch)


@pytest.mark.parametrize("value,ok", [("local", None), ("auto", "auto"), ("ray://head:10001", "ray://head:10001"),
                                      ("10.0.0.1:6379", "10.0.0.1:6379"), ("logs/a.jsonl", False),
                                      ("a.jsonl", False)])
def test_ray_address_is_checked(value, ok):
    if ok is False:
        with pytest.raises(UserError, match="not a Ray address"):
            check_address(value)
    else:
        assert check_address(value) == ok


def test_progress_only_on_a_terminal(tmp_path, capsys):
    paths = sorted(FIX.glob("*.jsonl"))
    quiet_audit(paths, db=tmp_path / "a.duckdb", ray="local")
    err = capsys.readouterr().err
    assert "files mapped" not in err and "\x1b[" not in err  # not a terminal here: quiet
    with Output(bar=True) as out:  # forced on, as on a terminal
        audit_result(paths, tmp_path / "b.duckdb", ray="local", on_event=out, progress=True)
    err = capsys.readouterr().err
    assert "files mapped" in err and "partitions reduced" in err and "calls/s" in err


def test_strict_fails_as_in_one_process_with_nothing_written(tmp_path):
    from kvreport.runner.audit.engine import StrictRejects

    paths = [FIX / "openai.jsonl", FIX / "anthropic.jsonl"]
    with pytest.raises(StrictRejects) as one:
        quiet_audit(paths, db=tmp_path / "one.duckdb", strict=True)
    with pytest.raises(StrictRejects) as two:
        quiet_audit(paths, db=tmp_path / "ray.duckdb", strict=True, ray="local")
    assert str(one.value) == str(two.value)  # the same rejects, in the same order
    assert not (tmp_path / "ray.duckdb").exists()
