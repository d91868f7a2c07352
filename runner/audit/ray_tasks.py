"""The Ray audit's tasks: map (read a share of the files, write calls partitioned by session), reduce (one
partition's per-session figures) and time (one partition's leakage and TTL sums). Plain functions run in Ray
workers, so tests call them too; distributed.py is the driver. See docs/audit-on-ray.md."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

import duckdb

from ..core.connections import connect
from ..core.migrations import create_schema
from . import dollars, engine, pipeline
from .formats import Source
from .sqlfiles import run_sql, value
from .steps import Statement
from .tokenizer import load_tokenizer

# The small partial tables a reduce (or time) task writes, one Parquet file each, that the driver unions.
SESSION_PARTS = ("_call_stats", "_seg_window_parts", "_price_parts", "_whatif_parts", "_label_parts")
TIME_PARTS = ("_timeline_parts", "_ttl_parts", "_ttl_evicted")
SESSION_TABLES = ("token_audit", "token_bloat")  # the per-session figures, written by the reduces
# Every table (or view) moved between the phases: the only names the sql/distributed/ files' {table} takes.
_MOVED = frozenset(("_rejects", "_staged_stats", "_seg", "_repeat_parts", "_calls_priced", *SESSION_TABLES,
                    *SESSION_PARTS, *TIME_PARTS))
FAULTS_ENV = "KVREPORT_RAY_FAULTS"  # tests: a folder of marker files that make a task's worker die (see _fault)


def _fault(phase: str, index: int) -> None:
    """Tests of retries: with KVREPORT_RAY_FAULTS=DIR, a file DIR/crash-once-PHASE-INDEX makes this task's worker
    die once (the file is removed first), DIR/crash-PHASE-INDEX on every attempt. os._exit: the worker process
    ends as if killed, with no exception for Ray to report."""
    folder = os.environ.get(FAULTS_ENV)
    if not folder:
        return
    once = Path(folder) / f"crash-once-{phase}-{index}"
    try:
        once.unlink()
        os._exit(1)
    except FileNotFoundError:
        pass
    if (Path(folder) / f"crash-{phase}-{index}").exists():
        os._exit(1)


def _connect(opts: engine.AuditOptions, tmpdir: str):
    con = connect()
    create_schema(con)  # the audit tables, which the per-session figures are written into
    engine.setup(con, tmpdir, opts)
    return con


# A reduce whose calls logged no content makes no _repeat_parts; a reduce partition's valid calls (its progress).
HAS_REPEATS = Statement("SELECT count(*) > 0 FROM duckdb_tables() WHERE table_name = '_repeat_parts'")
CALLS_COUNTED = Statement("SELECT coalesce(sum(n_calls), 0) FROM _call_stats")
TIME_WINDOW = Statement("SELECT t0, t1, n, active_session_s FROM _seg_window")


def time_window(con) -> dict:
    """The whole audit's time span (metrics/seg_window.sql, on the driver), which every time task samples."""
    if (window := TIME_WINDOW.row(con)) is None:
        raise LookupError("metrics/seg_window.sql left no time span")  # an aggregate: always one row
    return window


def table_param(name: str) -> dict[str, str]:
    """The {table} placeholder of a sql/distributed/ file: only a table this module moves between phases."""
    if name not in _MOVED:
        raise ValueError(f"{name} is not a table the Ray audit moves between its phases")
    return dict(table=name)


def _copy(con, name: str, folder: Path, scratch: Path, columns: str | None = None) -> None:
    """Table (or view) `name` to folder/NAME.parquet (inside `scratch`): `columns`, or all of them with HUGEINT
    sums as BIGINT (distributed/copy_columns.sql)."""
    columns = columns or value(con, "distributed/copy_columns", table=name)
    if columns is None:
        raise LookupError(f"the Ray audit's task has no table {name} to write")
    run_sql(con, "distributed/write_table", dict(table_param(name), columns=columns),
            paths=dict(file=folder / f"{name}.parquet"), scratch=scratch)


def _attempt_dir(final: Path) -> Path:
    """A fresh folder for one attempt of a task; `_publish` renames it to `final` once it is complete, so a
    retry never reads (or leaves) half of a dead attempt's files."""
    out = final.with_name(f"{final.name}.{uuid.uuid4().hex[:8]}.tmp")
    out.mkdir(parents=True)
    return out


def _publish(attempt: Path, final: Path) -> None:
    shutil.rmtree(final, ignore_errors=True)
    os.replace(attempt, final)


def _in_folder(cwd: str) -> None:
    """Relative log and tokenizer paths mean what they meant to the command (and are stored as given)."""
    if os.getcwd() != cwd:
        os.chdir(cwd)


def map_task(index: int, sources: list[Source], out: str, opts: engine.AuditOptions, partitions: int,
             cwd: str) -> dict:
    """Read `sources` (a contiguous run of the audit's files) into _staged, as the single-process audit does;
    write their calls, partitioned by hash(session_id), and their rejects to Parquet under `out`."""
    _fault("map", index)
    _in_folder(cwd)
    started = time.perf_counter()
    final = Path(out)
    attempt = _attempt_dir(final)
    with tempfile.TemporaryDirectory(prefix="kvreport-map-") as tmpdir:
        con = _connect(opts, tmpdir)
        try:
            stats = engine.read_logs(con, sources, tmpdir, opts)
            keys = dollars.key_spans(con)
            t_log_end = engine.log_end(con)
            run_sql(con, "distributed/partition")
            run_sql(con, "distributed/calls_by_partition", paths=dict(calls=attempt / "calls"), scratch=final.parent,
                    map_idx=int(index), partitions=int(partitions))
            for name in ("_rejects", "_staged_stats"):
                _copy(con, name, attempt, final.parent)
            held = run_sql(con, "distributed/partition_sources", partitions=int(partitions)).fetchall()
        finally:
            con.close()
    _publish(attempt, final)
    return dict(index=index, stats=stats, keys=keys, t_log_end=t_log_end, duckdb=duckdb.__version__,
                parts={p: sorted(srcs) for p, srcs in held}, seconds=time.perf_counter() - started)


def reduce_task(index: int, files: list[str], out: str, opts: engine.AuditOptions, fig: engine.Figures,
                tokenizer: str | None, cwd: str) -> dict:
    """One partition of the sessions: engine.session_figures on its calls; the per-session tables, the calls
    with their costs, the segments and the *_parts tables to Parquet under `out`."""
    _fault("reduce", index)
    _in_folder(cwd)
    started = time.perf_counter()
    final = Path(out)
    attempt = _attempt_dir(final)
    if tokenizer:
        fig = replace(fig, tokenizer=load_tokenizer(tokenizer))
    with tempfile.TemporaryDirectory(prefix="kvreport-reduce-") as tmpdir:
        con = _connect(opts, tmpdir)
        try:
            run_sql(con, "distributed/load_calls", files=files)
            engine.session_figures(con, opts, fig)
            for name in (*SESSION_TABLES, "_seg", *SESSION_PARTS):
                _copy(con, name, attempt, final.parent)
            if HAS_REPEATS.value(con):
                _copy(con, "_repeat_parts", attempt, final.parent)
            # the stored columns of the calls and of their labels (the schema's), as persist reads them
            columns = ", ".join(dict.fromkeys(engine.own_columns(con, "token_call_rows")
                                              + engine.own_columns(con, "token_call_labels")))
            _copy(con, "_calls_priced", attempt, final.parent, columns)
            calls = CALLS_COUNTED.value(con)
        finally:
            con.close()
    _publish(attempt, final)
    return dict(index=index, calls=int(calls), seconds=time.perf_counter() - started)


def time_task(index: int, folder: str, opts: engine.AuditOptions, window: dict) -> dict:
    """One partition's sums for the leakage timeline and the TTL sweep, on the whole audit's time span."""
    _fault("time", index)
    started = time.perf_counter()
    final = Path(folder) / "time"
    attempt = _attempt_dir(final)
    with tempfile.TemporaryDirectory(prefix="kvreport-time-") as tmpdir:
        con = connect()
        try:
            engine.setup(con, tmpdir, opts, pipeline.SETTINGS)
            run_sql(con, "distributed/time_inputs", seg=str(Path(folder) / "_seg.parquet"), **window)
            engine.time_parts(con, opts)
            for name in TIME_PARTS:
                _copy(con, name, attempt, final.parent)
        finally:
            con.close()
    _publish(attempt, final)
    return dict(index=index, seconds=time.perf_counter() - started)
