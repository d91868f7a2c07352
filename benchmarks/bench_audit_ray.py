"""Benchmark: `kvreport audit --ray` on a local Ray with 1 and 2 workers against the single-process audit.

    python benchmarks/bench_audit_ray.py                       # 10M calls (bench_audit.py's log), 8 files
    python benchmarks/bench_audit_ray.py --calls 1000000 --files 8 --workers 1,2

The log is bench_audit.py's (OpenAI-shaped JSON lines, 8 calls per session, two broken lines), cut into
--files files at line boundaries (a pile, as a fleet writes it; sessions run across file boundaries). Each
audit runs in a child process, timed whole from outside (interpreter start, imports, Ray's start and stop,
reading, writing the DB); the Ray runs also report each task's seconds. The DBs are compared afterwards
(`n_calls`, `n_sessions`, `overall_pcer`, `leakage_index`), so the benchmark also checks the Ray path.

The last table is an ESTIMATE, not a measurement: what a 16-core or multi-node run would take, from this run's
per-task times (Amdahl: the driver's own seconds as measured, plus each phase's task seconds spread over the
CPUs, but never below its longest task). It assumes tasks keep their speed with more of them running, which a
shared disk or a network filesystem may not give.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import write_log  # noqa: E402 - the same log as the single-process benchmark

PHASES = ("map", "reduce", "time")


def split_log(path: Path, n: int, folder: Path) -> list[Path]:
    """`path` cut into n files at line boundaries (byte ranges, no parsing)."""
    size = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, n):
            f.seek(max(cuts[-1], size * k // n))
            f.readline()
            cuts.append(f.tell())
    cuts.append(size)
    out = []
    with open(path, "rb") as src:
        for k in range(n):
            dst_path = folder / f"log-{k:03d}.jsonl"
            src.seek(cuts[k])
            left = cuts[k + 1] - cuts[k]
            with open(dst_path, "wb") as dst:
                while left > 0:
                    chunk = src.read(min(left, 64 << 20))
                    dst.write(chunk)
                    left -= len(chunk)
            out.append(dst_path)
    return out


def child(args) -> None:
    """One audit in this process; prints its figures and (with Ray) task times as JSON."""
    from kvreport.runner.audit.api import AuditRequest, audit

    started = time.perf_counter()
    kw = dict(ray="local", ray_workers=args.child_workers) if args.child_workers else {}
    result = audit([Path(p) for p in args.child], AuditRequest(memory_limit=args.memory_limit, **kw),
                   db=Path(args.db))
    s = result.summary
    out = dict(seconds=time.perf_counter() - started,
               summary={k: s[k] for k in ("n_calls", "n_sessions", "n_rejects", "overall_pcer", "leakage_index")})
    run = result.ray_run
    if run is not None:
        out.update(partitions=run.partitions, maps=run.maps, phases=run.phase_seconds, ray_start=run.ray_start_s,
                   tasks=[dict(phase=t.phase, index=t.index, seconds=t.seconds, calls=t.calls) for t in run.task_times])
    print(json.dumps(out))


def run_child(files: list[Path], db: Path, workers: int | None, memory_limit: str) -> dict:
    cmd = [sys.executable, __file__, "--db", str(db), "--memory-limit", memory_limit, "--child", *map(str, files)]
    if workers:
        cmd += ["--child-workers", str(workers)]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"audit failed ({' '.join(cmd[:6])} ...):\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall"] = wall
    return out


def estimate(run: dict, cpus: int) -> float:
    """Seconds a run with `cpus` CPUs would take, from this run's tasks (see the module docstring)."""
    tasks = run["tasks"]
    in_tasks = 0.0
    for phase in PHASES:
        secs = [t["seconds"] for t in tasks if t["phase"] == phase]
        if secs:
            in_tasks += max(max(secs), sum(secs) / cpus)
    scheduled = sum(run["phases"].get(p, 0.0) for p in PHASES)
    driver = run["wall"] - scheduled  # start-up, Ray's start and stop, combine, the DB write: as measured
    return driver + in_tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=8, help="the log is cut into this many files")
    ap.add_argument("--workers", default="1,2", help="local Ray sizes to time (CPUs), comma-separated")
    ap.add_argument("--memory-limit", default="350MB", help="DuckDB's, per process and per Ray task")
    ap.add_argument("--db")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    ap.add_argument("--child-workers", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(args)
        return
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    with tempfile.TemporaryDirectory(prefix="kvreport-bench-ray-") as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        write_log(folder / "whole.jsonl", args.calls)
        files = split_log(folder / "whole.jsonl", args.files, folder)
        (folder / "whole.jsonl").unlink()
        print(f"log: {args.calls:,} calls + 2 broken lines in {len(files)} files, "
              f"{sum(f.stat().st_size for f in files) / 1e9:.2f} GB, written in {time.perf_counter() - t:.1f} s "
              f"({os.cpu_count()} CPUs here)")
        one = run_child(files, folder / "one.duckdb", None, args.memory_limit)
        print(f"single process: {one['wall']:.2f} s wall ({args.calls / one['wall']:,.0f} calls/s)")
        runs = {}
        for w in workers:
            r = run_child(files, folder / f"ray{w}.duckdb", w, args.memory_limit)
            r["wall"] = r["wall"]
            runs[w] = r
            same = r["summary"] == one["summary"] or all(
                (a == b) or (isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-12 * max(abs(a), 1))
                for a, b in zip(r["summary"].values(), one["summary"].values()))
            print(f"ray, {w} worker(s): {r['wall']:.2f} s wall ({args.calls / r['wall']:,.0f} calls/s), "
                  f"{r['wall'] / one['wall']:.2f}x the single process's time; {r['maps']} map tasks, "
                  f"{r['partitions']} partitions; same figures: {'yes' if same else 'NO'}")
            if not same:
                print(f"  single process {one['summary']}\n  ray            {r['summary']}")
            other = r["wall"] - sum(r["phases"].values()) - r["ray_start"]
            print("  seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items())
                  + f", Ray start {r['ray_start']:.2f}, the rest (interpreter, imports, detection, Ray stop) {other:.2f}")
            for phase in PHASES:
                secs = sorted((t["seconds"] for t in r["tasks"] if t["phase"] == phase), reverse=True)
                if secs:
                    print(f"  {phase} tasks: {len(secs)}, {sum(secs):.2f} s of work, longest {secs[0]:.2f} s, "
                          f"shortest {secs[-1]:.2f} s")
        if runs:
            base = runs[max(runs)]
            print(f"\nESTIMATE (not measured): from the {max(runs)}-worker run's task times, driver's own seconds "
                  "as measured plus each phase's task work over the CPUs (never below its longest task):")
            for cpus in (2, 4, 16, 64):
                e = estimate(base, cpus)
                warm = e - base["ray_start"]  # --ray auto on a running cluster does not start one
                print(f"  {cpus:3d} CPUs: ~{e:.1f} s ({one['wall'] / e:.2f}x the single process's speed measured "
                      f"here); on a running cluster, without Ray's start: ~{warm:.1f} s ({one['wall'] / warm:.2f}x)")
            print("  The tasks' share only shrinks with more CPUs when there are at least that many files and "
                  "partitions (--files; 2 partitions per CPU); the driver's own part (Ray's start, the DB write, "
                  "start-up) does not.")


if __name__ == "__main__":
    main()
