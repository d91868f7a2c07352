"""A synthetic kvreport DB with many runs, for measuring build, findings, merge and export at scale.

    python benchmarks/make_big_db.py OUT.duckdb --runs 1000000 [--measured 1000] [--configs 1]
        [--src tests/fixtures/site/kvreport.duckdb]

The source DB's runs (real measurements) are copied under fresh run ids and uids until OUT holds --runs runs:
every copy gets its `runs` and `experiments` rows; the newest --measured copies also get every measurement row
of their source run (each table keyed by run_id), and the audits made inside it with their rows, renamed
`run-<new id>-...` as `kvreport run` names them (standalone audits and replays are kept once). --configs spreads the
copies over that many model names (`<model>~<k>`), so pages that keep the newest run per configuration see
that many. Rows are inserted by DuckDB in one statement per table; nothing is held in Python.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from kvreport.runner.core.migrations import table_columns
from kvreport.runner.core.store import Store, current_schema_copy
from kvreport.runner.core.untrusted import quoted

ROOT = Path(__file__).resolve().parents[1]

KEEP_ONCE = ("runs", "experiments", "kvreport_meta")


def copy_sql(table: str, cols: list[str], base_max: int, copies: str, configs: int) -> str:
    """INSERT every row of `table` once per k in `copies` (a table of k), run_id shifted by k * base_max."""
    exprs = []
    for c in cols:
        if c == "run_id":
            exprs.append(f"t.run_id + g.k * {base_max}")
        elif c == "audit_id":  # an audit inside a run is named after it: run-<run_id>-<what>
            exprs.append(f"'run-' || (t.run_id + g.k * {base_max}) || '-' || "
                         "regexp_extract(t.audit_id, '^run-[0-9]+-(.+)$', 1)")
        elif c == "run_uid":
            exprs.append("md5(t.run_uid || '-' || g.k::VARCHAR)")
        elif c == "model" and table == "runs" and configs > 1:
            exprs.append(f"t.model || '~' || (g.k % {configs})::VARCHAR")
        else:
            exprs.append(f"t.{quoted(c)}")
    names = ", ".join(quoted(c) for c in cols)
    return (f"INSERT INTO {quoted(table)} ({names}) SELECT {', '.join(exprs)} "
            f"FROM {quoted(table)} t, {copies} WHERE t.run_id <= {base_max}"
            + (" AND regexp_matches(t.audit_id, '^run-[0-9]+-.+$')" if "audit_id" in cols else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--measured", type=int, default=1000, help="newest copies that get measurement rows")
    ap.add_argument("--configs", type=int, default=1, help="distinct model names over the copies")
    ap.add_argument("--src", type=Path, default=ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb")
    args = ap.parse_args(argv)
    if args.out.exists():
        raise SystemExit(f"{args.out}: exists; give a new file")
    t0 = time.perf_counter()
    with current_schema_copy(args.src) as cur:
        shutil.copyfile(cur, args.out)
    with Store(args.out) as s:
        con = s.con
        n_base, base_max = con.execute("SELECT count(*), max(run_id) FROM runs").fetchone()
        if n_base != base_max:
            raise SystemExit(f"{args.src}: run ids must be 1..{n_base}")
        reps = -(-args.runs // n_base)  # copies including the original (k = 0)
        cols = table_columns(con)
        keyed = sorted(t for t, cs in cols.items() if "run_id" in cs and t not in KEEP_ONCE)
        con.execute("BEGIN TRANSACTION")
        for t in ("runs", "experiments"):
            con.execute(copy_sql(t, cols[t], base_max, f"range(1, {reps}) g(k)", args.configs))
        first_measured = max(1, reps - -(-args.measured // n_base))
        for t in keyed:
            con.execute(copy_sql(t, cols[t], base_max, f"range({first_measured}, {reps}) g(k)", args.configs))
        # Trim to exactly --runs: the last copy may overshoot.
        for t in ["experiments", *keyed, "runs"]:
            con.execute(f"DELETE FROM {quoted(t)} WHERE run_id > ?", [args.runs])
        con.execute("COMMIT")
        n_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        n_rows = sum(con.execute(f"SELECT count(*) FROM {quoted(t)}").fetchone()[0] for t in keyed)
    print(f"{args.out}: {n_runs} runs, {n_rows} measurement rows ({len(keyed)} tables), "
          f"{args.out.stat().st_size / 1e6:.0f} MB, {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
