"""Site build benchmark: a DB with 20 runs (the fixture DB's runs copied under new run ids) built into a
static site, timed.

    python benchmarks/bench_build.py [--db tests/fixtures/site/kvreport.duckdb] [--runs 20] [--repeats 3]

Prints the median build time over the repeats, the time per run, and the largest HTML page. Targets: a
20-run build in a few seconds (TARGET_S) and no page over a few hundred KB (TARGET_PAGE_BYTES); the exit
status is 1 when either is missed.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

TARGET_S = 5.0
TARGET_PAGE_BYTES = 300_000


def make_many_runs(src: Path, dest: Path, n_runs: int) -> int:
    """Copy every run's rows (runs, experiments and each experiment table) under fresh run ids until the
    DB holds n_runs runs. Rows stay real measurements; only the run ids repeat them."""
    import duckdb

    shutil.copyfile(src, dest)
    con = duckdb.connect(str(dest))
    base = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    if not base:
        raise SystemExit(f"{src}: no runs to copy")
    tables = [t for (t,) in con.execute(
        "SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = 'run_id' AND NOT internal "
        "ORDER BY 1").fetchall()]
    next_id = max(base) + 1
    con.execute("BEGIN TRANSACTION")
    while next_id <= n_runs:
        for rid in base:
            if next_id > n_runs:
                break
            for t in tables:
                cols = [c for (c,) in con.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
                    [t]).fetchall()]
                select = ", ".join("?::INTEGER" if c == "run_id" else f'"{c}"' for c in cols)
                con.execute(f'INSERT INTO "{t}" SELECT {select} FROM "{t}" WHERE run_id = ?', [next_id, rid])
            next_id += 1
    con.execute("COMMIT")
    n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    con.close()
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    from kvreport.analysis.site import build_site

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "many.duckdb"
        n = make_many_runs(args.db, db, args.runs)
        times = []
        for i in range(args.repeats):
            out = Path(tmp) / f"site{i}"
            t0 = time.perf_counter()
            pages = build_site(db, out)
            times.append(time.perf_counter() - t0)
        sizes = {p: (out / p).stat().st_size for p in pages}
        biggest = max(sizes, key=sizes.get)
        median = statistics.median(times)
        print(f"runs in DB:        {n}")
        print(f"build time:        {median:.2f} s median of {args.repeats} "
              f"(min {min(times):.2f}, max {max(times):.2f}); target < {TARGET_S:.1f} s "
              f"-> {median / TARGET_S:.2f}x of target")
        print(f"per run:           {1000 * median / n:.0f} ms")
        print(f"pages:             {len(pages)}; largest {biggest} {sizes[biggest] / 1000:.0f} KB "
              f"(target < {TARGET_PAGE_BYTES / 1000:.0f} KB -> {sizes[biggest] / TARGET_PAGE_BYTES:.2f}x)")
        for p in sorted(sizes, key=sizes.get, reverse=True)[:5]:
            print(f"  {p:<22} {sizes[p] / 1000:7.0f} KB")
        ok = median < TARGET_S and sizes[biggest] < TARGET_PAGE_BYTES
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
