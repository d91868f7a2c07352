"""`kvreport build`, `findings` and `merge` on a DB of many runs: peak RSS and wall time of each, as a child
process of its own.

    python benchmarks/bench_scale.py [--runs 1000000] [--measured 1000] [--db EXISTING.duckdb] [--keep DIR]

Without --db, a DB of --runs runs is generated first (benchmarks/make_big_db.py) in a temporary folder
(about 100 MB and ten minutes on a 2-core VM for a million runs) and deleted at the end, with the site and
the merged DB. Targets: each command under TARGET_RSS_MB peak RSS and TARGET_S seconds; the exit status is 1
when one is missed.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TARGET_RSS_MB = 1500
TARGET_S = 600

# kvreport's main() in a child, printing its peak RSS on the way out: VmHWM, its own memory's high-water mark.
# Not ru_maxrss: Linux carries that across exec, so a child of a big process reports the parent's.
_MEASURED = ("import sys\nfrom kvreport.runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "finally:\n    print('maxrss_kb', next(int(line.split()[1]) for line in open('/proc/self/status') "
             "if line.startswith('VmHWM')), file=sys.stderr)")


def measure(*args) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MB, exit status, last line of output) of `kvreport ARGS` in a child."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", _MEASURED, *map(str, args)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    rss = re.search(r"maxrss_kb (\d+)", r.stderr)
    last = (r.stdout.strip().splitlines() or r.stderr.strip().splitlines() or [""])[-1]
    return wall, (int(rss.group(1)) / 1024 if rss else float("nan")), r.returncode, last


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--measured", type=int, default=1000, help="newest runs with measurement rows (make_big_db)")
    ap.add_argument("--db", type=Path, help="an existing DB to measure instead of generating one")
    ap.add_argument("--keep", type=Path, help="a folder to leave the outputs in (default: a temporary one)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="kvreport-scale-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        db = args.db
        if db is None:
            db = work / f"runs{args.runs}.duckdb"
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_big_db.py"), str(db), "--runs",
                            str(args.runs), "--measured", str(args.measured)], check=True)
            print(f"generated in {time.perf_counter() - t0:.0f} s")
        ok = True
        print(f"{'command':<10} {'wall s':>8} {'peak RSS MB':>12}  exit  last line")
        for name, cmd in (("build", ["build", "--db", db, "--out", work / "site"]),
                          ("findings", ["findings", "--db", db]),
                          ("merge", ["merge", db, "--into", work / "merged.duckdb"])):
            wall, rss, code, last = measure(*cmd)
            ok &= code == 0 and rss < TARGET_RSS_MB and wall < TARGET_S
            print(f"{name:<10} {wall:8.1f} {rss:12.0f}  {code:>4}  {last[:100]}")
        print(f"targets: < {TARGET_RSS_MB} MB peak RSS and < {TARGET_S} s each -> {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
