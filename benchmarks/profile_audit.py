"""Where a `kvreport audit` spends its time: wall and CPU seconds (every thread of the process: the fair figure on
a shared machine) per SQL file (runner/audit/sql/STAGE/NAME.sql), for the
Python passes over the log's bytes and for the final COMMIT, then the whole process's wall time and peak RSS.

    python benchmarks/profile_audit.py LOG [kvreport audit options...] --db /tmp/profile.duckdb
    python benchmarks/profile_audit.py --operators metrics/per_session,metrics/segments LOG --db /tmp/p.duckdb

`--operators STEP,...` (first) also prints, for each named step, DuckDB's own profile of it: the operators that
took over 2% of the step's CPU time (summed over threads, as DuckDB counts it) with their rows, and the bytes
the step wrote to and read from disk (spilled scratch, or the DB file for a store step).

It runs the real command in this process, with each module's `run_sql` wrapped by a timer (the SQL
files are the audit's steps, so their times add up to nearly all of it). Steps run once per slice are
summed. Use a DB path that does not exist yet, or the audit adds to it.
"""
from __future__ import annotations

import json
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

T0 = time.perf_counter()
C0 = time.process_time()


def _operators(path: Path, step: str) -> None:
    """Print the heaviest operators of one step's DuckDB JSON profile (a tree of operators with timings)."""
    profile = json.loads(path.read_text())
    rows: list[tuple[float, int, str, str, int | None]] = []  # timing, depth, operator, what on, rows out

    def walk(node: dict, depth: int) -> None:
        extra = node.get("extra_info", {})
        what = extra.get("Table") or extra.get("Function") or extra.get("Join Type") or ""
        rows.append((node.get("timing", 0.0), depth, node.get("name", "?"), what, node.get("intermediate_rows")))
        for child in node.get("children", []):
            walk(child, depth + 1)

    for op in profile.get("operator", []):
        walk(op, 0)
    total = sum(r[0] for r in rows) or 1.0
    io = profile.get("io", {})
    print(f"\n{step}: operators {total:.2f} CPU-s; wrote {io.get('total_bytes_written', 0) / 1e6:,.0f} MB to disk, "
          f"read {io.get('total_bytes_read', 0) / 1e6:,.0f} MB from it")
    for timing, depth, name, what, n in rows:
        if timing >= 0.02 * total:
            print(f"  {timing:6.2f}  {'  ' * depth}{name} {what}" + (f" ({n:,} rows)" if n is not None else ""))


class _Rows:
    """A step's result already read: what the audit's code reads of a DuckDB result (description, fetchone,
    fetchall)."""

    def __init__(self, result) -> None:
        self.description = result.description
        self._rows = result.fetchall() if result.description else []

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list:
        rows, self._rows = self._rows, []
        return rows


def main() -> None:
    args = sys.argv[1:]
    operators: list[str] = []
    if args[:1] == ["--operators"]:
        if len(args) < 2:
            sys.exit("profile_audit.py: --operators needs a comma-separated list of steps, e.g. metrics/per_session")
        operators, args = args[1].split(","), args[2:]
    profiles = Path(tempfile.mkdtemp(prefix="kvreport-profile-"))

    def profile_of(step: str) -> Path:
        return profiles / (step.replace("/", "_") + ".json")

    try:
        _profile(args, operators, profile_of)
    finally:
        shutil.rmtree(profiles, ignore_errors=True)


def _profile(args: list[str], operators: list[str], profile_of) -> None:
    from kvreport.runner.audit import (dollars, engine, fastread, formats, ingest, kv_pricing, pipeline, prepare,
                                       prompt_bloat, sqlfiles, steps)
    from kvreport.runner.cli import main as cli

    seconds: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    run_sql, persist = sqlfiles.run_sql, engine.persist

    def timed_sql(con, name, columns=None, **params):
        if name in operators:
            out = str(profile_of(name)).replace("'", "''")  # a string literal: SET takes no parameters
            con.execute(f"PRAGMA enable_profiling = 'json'; SET profiling_output = '{out}'")
        t, c = time.perf_counter(), time.process_time()
        try:
            result = run_sql(con, name, columns, **params)
            # A statement run on the connection closes the one before's pending result: a profiled step's rows are
            # read here, before the PRAGMA below, for the caller to fetch as it would have.
            return _Rows(result) if name in operators else result
        except Exception as exc:
            # which step failed, and with what (the command's own message does not say where)
            print(f"step {name} failed after {time.perf_counter() - t:.2f} s ({time.perf_counter() - T0:.1f} s into "
                  f"the audit, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB): "
                  f"{str(exc).splitlines()[0][:300]}", file=sys.stderr)
            raise
        finally:
            seconds[name] += time.perf_counter() - t
            cpu[name] += time.process_time() - c
            if name in operators:
                con.execute("PRAGMA disable_profiling")

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - t
                cpu[name] += time.process_time() - c
        return wrapper

    for module in (engine, ingest, fastread, formats, prepare, dollars, kv_pricing, pipeline, prompt_bloat, sqlfiles,
                   steps):  # each imported run_sql by name
        module.run_sql = timed_sql
    # Python passes over the log's bytes (linescan.py, called from ingest.py and fastread.py), and the COMMIT of everything (persist less its store steps)
    ingest.scan_lines = timed("(python: the line scan of each file)", ingest.scan_lines)
    fastread._lines_copy = timed("(python: lines read again line-exactly)", fastread._lines_copy)
    commit = [0.0, 0.0]

    def timed_persist(con, result):
        t, c = time.perf_counter(), time.process_time()
        before, before_cpu = sum(seconds.values()), sum(cpu.values())
        try:
            persist(con, result)
        finally:
            commit[0] += time.perf_counter() - t - (sum(seconds.values()) - before)
            commit[1] += time.process_time() - c - (sum(cpu.values()) - before_cpu)

    engine.persist = timed_persist
    sys.argv = ["kvreport", "audit", *args]
    try:
        cli()
    except SystemExit as exc:
        if exc.code:
            raise
    wall, total_cpu = time.perf_counter() - T0, time.process_time() - C0
    seconds["(COMMIT of the audit's transaction)"], cpu["(COMMIT of the audit's transaction)"] = commit
    print(f"\nwhole process {wall:.2f} s ({total_cpu:.2f} CPU-s), peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB; steps below {sum(seconds.values()):.2f} s "
          f"({sum(cpu.values()):.2f} CPU-s), the rest (start-up, store, detection, output) "
          f"{wall - sum(seconds.values()):.2f} s ({total_cpu - sum(cpu.values()):.2f} CPU-s)")
    print("   CPU-s  wall s  step (by CPU seconds)")
    for name, c in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if c >= 0.005 or seconds[name] >= 0.005:
            print(f"  {c:6.2f}  {seconds[name]:6.2f}  {name}")
    for name in operators:  # a step run once per slice keeps the profile of its last run
        if profile_of(name).is_file():
            _operators(profile_of(name), name)
        else:
            print(f"\n{name}: did not run (no such step in this audit)")


if __name__ == "__main__":
    main()
