"""Where a `kvreport audit` spends its time: wall and CPU seconds (every thread of the process: the fair figure on
a shared machine) per SQL file (runner/audit/sql/STAGE/NAME.sql), for the
Python passes over the log's bytes and for the final COMMIT, then the whole process's wall time and peak RSS.

    python benchmarks/profile_audit.py LOG [kvreport audit options...] --db /tmp/profile.duckdb

It runs the real command in this process, with each module's `run_sql` wrapped by a timer (the SQL
files are the audit's steps, so their times add up to nearly all of it). Steps run once per slice are
summed. Use a DB path that does not exist yet, or the audit adds to it.
"""
from __future__ import annotations

import resource
import sys
import time
from collections import defaultdict

T0 = time.perf_counter()
C0 = time.process_time()


def main() -> None:
    from kvreport.runner.audit import (dollars, engine, fastread, formats, ingest, kv_pricing, pipeline, prepare,
                                       prompt_bloat, sqlfiles, steps)
    from kvreport.runner.cli import main as cli

    seconds: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    run_sql, persist = sqlfiles.run_sql, engine.persist

    def timed_sql(con, name, columns=None, **params):
        t, c = time.perf_counter(), time.process_time()
        try:
            return run_sql(con, name, columns, **params)
        except Exception as exc:
            # which step failed, and with what (the command's own message does not say where)
            print(f"step {name} failed after {time.perf_counter() - t:.2f} s ({time.perf_counter() - T0:.1f} s into "
                  f"the audit, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB): "
                  f"{str(exc).splitlines()[0][:300]}", file=sys.stderr)
            raise
        finally:
            seconds[name] += time.perf_counter() - t
            cpu[name] += time.process_time() - c

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
    sys.argv = ["kvreport", "audit", *sys.argv[1:]]
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


if __name__ == "__main__":
    main()
