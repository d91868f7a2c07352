"""Benchmark: the whole `kvreport audit` process vs the seed's per-record pydantic loop, on the same log.

    python benchmarks/bench_audit.py                          # 1M calls, usage fields only: ratio, RSS
    python benchmarks/bench_audit.py --messages               # the same with request messages (prompt bloat)
    python benchmarks/bench_audit.py --calls 10000000 --no-seed --rss-trace   # bounded memory at 10M

The log (a temp dir, deleted afterwards) is OpenAI-shaped JSON lines, 8 calls per session, session ids,
timestamps and usage with cached tokens (and with --messages, a system prompt and the growing
conversation in `request.messages`), plus two broken lines at the end. Two child processes, each timed
whole from outside (interpreter start, imports, reading, writing; peak RSS from wait4):
  audit  `python -m kvreport.runner audit LOG --db DB`: detect, ingest with validation and rejects, per-session
         and fleet metrics, leakage timeline, TTL sweep, cost, everything written to a fresh DuckDB file;
  seed   the seed article's loop (its pydantic SessionTokens / TokenAllocationProfile models and
         TokenProfilerEngine.profile_session, copied as published), one record per line: json.loads, build
         the model, profile it, sum per session. It computes far less (no times, no leakage, no TTL, no DB),
         so the comparison flatters it. Pydantic is a benchmark requirement (`pip install -e .[bench]`),
         never a kvreport dependency.
Both sides' call counts, reject line numbers and overall PCER are compared, so the benchmark also checks
the SQL. Target (issue 12): audit >= 10x faster than the seed loop, peak RSS <= 500 MB at 1M calls, and
RSS that does not grow with the input at 10M. Target (issue 26): the audit within 4x of the floor's time (stretch
2.5x). Two more references say where the rest goes: the store floor (the floor, with every call written to a
DuckDB file first: what "every call stored" costs at least) and the fixed cost (the audit of the log's first
1,000 lines: start-up, DB creation, query planning, output, which do not grow with the log).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CALLS_PER_SESSION = 8


def write_log(path: Path, n: int, messages: bool = False) -> None:
    """The log, written by DuckDB (a Python writer would take longer than the audit)."""
    import duckdb

    n_sessions = max(1, n // CALLS_PER_SESSION)
    # Call k of a session re-sends the conversation so far: system prompt, then k user/assistant turns.
    request = ("{'model': 'gpt-4o-mini', 'messages': [{'role': 'system', 'content': 'You are a helpful assistant. "
               "Answer briefly and cite sources.'}] || list_transform(range((i // " + str(n_sessions) + ")::BIGINT + 1), "
               "lambda x: {'role': 'user', 'content': 'question ' || x || ' about item ' || (i % 977)})}"
               if messages else "{'model': 'gpt-4o-mini'}")
    con = duckdb.connect()
    con.execute(f"""
        COPY (
          SELECT 's-' || (i % {n_sessions}) AS session_id,
                 strftime(TIMESTAMP '2025-06-02 00:00:00' + to_seconds(i * 86400 // {n}), '%Y-%m-%dT%H:%M:%SZ') AS timestamp,
                 {request} AS request,
                 {{'model': 'gpt-4o-mini-2024-07-18',
                   'usage': {{'prompt_tokens': 50 + (hash(i) % 8000)::BIGINT,
                              'completion_tokens': 20 + (hash(i + 1) % 400)::BIGINT,
                              'prompt_tokens_details': {{'cached_tokens':
                                 CASE WHEN hash(i + 2) % 10 < 6 THEN ((50 + hash(i) % 8000) // 128 * 128)::BIGINT ELSE 0 END}}}}}} AS response
          FROM range({n}) t(i)
        ) TO '{path}' (FORMAT JSON)""")
    con.close()
    with open(path, "a") as f:  # a few broken lines, as real logs have
        f.write('{"session_id": "s-1", "response": {"usage": {"prompt_tokens": -3, "completion_tokens": 1}}}\n')
        f.write("{truncated\n")


# --- the seed's loop (the article's models and profiler, as published) --------------------------------------

def seed_loop(path: Path) -> dict:
    from pydantic import BaseModel, ValidationError

    class SessionTokens(BaseModel):
        session_id: str
        system_tokens: int
        user_tokens: int
        assistant_tokens: int
        cached_input_tokens: int

    class TokenAllocationProfile(BaseModel):
        session_id: str
        total_input_tokens: int
        pcer: float  # Prompt Cache Efficiency Ratio
        spor: float  # System Prompt Overhead Ratio
        estimated_kv_cache_mb: float

    class TokenProfilerEngine:
        def __init__(self, bytes_per_token: float = 0.002):
            self.bytes_per_token_mb = bytes_per_token

        def profile_session(self, session: SessionTokens) -> TokenAllocationProfile:
            total_input = session.system_tokens + session.user_tokens
            pcer = session.cached_input_tokens / total_input if total_input > 0 else 0.0
            spor = session.system_tokens / total_input if total_input > 0 else 0.0
            total_tokens = total_input + session.assistant_tokens
            estimated_kv_memory = total_tokens * self.bytes_per_token_mb
            return TokenAllocationProfile(session_id=session.session_id, total_input_tokens=total_input,
                                          pcer=round(pcer, 4), spor=round(spor, 4),
                                          estimated_kv_cache_mb=round(estimated_kv_memory, 2))

    profiler = TokenProfilerEngine(bytes_per_token=36864 / 1e6)  # gpt2 at 16-bit, as the audit prices it
    per_session: dict[str, list[int]] = {}
    reject_lines = []
    n_calls = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
                usage = rec["response"]["usage"]
                sess = SessionTokens(session_id=rec["session_id"], system_tokens=0, user_tokens=usage["prompt_tokens"],
                                     assistant_tokens=usage["completion_tokens"],
                                     cached_input_tokens=(usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
                if sess.user_tokens < 0 or sess.cached_input_tokens > sess.user_tokens:
                    raise ValueError("bad usage")
            except (ValueError, KeyError, TypeError, ValidationError):
                reject_lines.append(lineno)
                continue
            profile = profiler.profile_session(sess)
            n_calls += 1
            s = per_session.setdefault(profile.session_id, [0, 0])
            s[0] += profile.total_input_tokens
            s[1] += sess.cached_input_tokens
    total_in = sum(v[0] for v in per_session.values())
    return {"n_calls": n_calls, "n_sessions": len(per_session), "reject_lines": reject_lines,
            "overall_pcer": sum(v[1] for v in per_session.values()) / total_in}


# --- the floor: what reading the file costs at all ---------------------------------------------------------

FLOOR_COLUMNS = ("{'session_id': 'VARCHAR', 'response': 'STRUCT(usage STRUCT(prompt_tokens BIGINT, "
                 "completion_tokens BIGINT, prompt_tokens_details STRUCT(cached_tokens BIGINT)))'}")


def floor_query(path: Path) -> dict:
    """DuckDB's own JSON reader with the columns spelled out, and the per-session sums: no validation, no
    line numbers, no times, nothing written. No audit can be faster than this on the same machine, so
    seed / floor is the largest speed-up this log allows."""
    import duckdb

    con = duckdb.connect()
    n, sessions, pcer = con.execute(f"""
        SELECT sum(n), count(*), sum(cached) / sum(inp) FROM (
          SELECT session_id, count(*) AS n, sum(response.usage.prompt_tokens) AS inp,
                 sum(response.usage.prompt_tokens_details.cached_tokens) AS cached
          FROM read_json(?, format = 'newline_delimited', ignore_errors = true, columns = {FLOOR_COLUMNS})
          WHERE response.usage.prompt_tokens >= 0 GROUP BY session_id)""", [str(path)]).fetchone()
    return {"n_calls": int(n), "n_sessions": sessions, "overall_pcer": pcer}


def store_floor_query(path: Path, db: Path) -> dict:
    """The floor, plus what "every call stored" costs at least: the same typed read written whole into a
    table of a new DuckDB file (session, time, the three counts; not even the line), then the per-session sums
    from that table. Still nothing checked, converted, priced or timed: an audit that stores every call
    cannot be faster than this."""
    import duckdb

    con = duckdb.connect(str(db))
    con.execute(f"""
        CREATE TABLE calls AS
        SELECT session_id, timestamp::TIMESTAMP AS start_time,
               response.usage.prompt_tokens AS input_tokens, response.usage.completion_tokens AS output_tokens,
               response.usage.prompt_tokens_details.cached_tokens AS cached_input_tokens
        FROM read_json(?, format = 'newline_delimited', ignore_errors = true,
                       columns = {{'session_id': 'VARCHAR', 'timestamp': 'VARCHAR', 'response': 'STRUCT(usage STRUCT(
                                   prompt_tokens BIGINT, completion_tokens BIGINT,
                                   prompt_tokens_details STRUCT(cached_tokens BIGINT)))'}})
        WHERE response.usage.prompt_tokens >= 0""", [str(path)])
    n, sessions, pcer = con.execute("""
        SELECT sum(n), count(*), sum(cached) / sum(inp) FROM (
          SELECT session_id, count(*) AS n, sum(input_tokens) AS inp, sum(cached_input_tokens) AS cached
          FROM calls GROUP BY session_id)""").fetchone()
    con.close()
    return {"n_calls": int(n), "n_sessions": sessions, "overall_pcer": pcer}


# --- children ----------------------------------------------------------------------------------------------

def _rss_sampler(pid: int, out: list, stop: threading.Event, every_s: float) -> None:
    """Resident memory of `pid` over time (VmRSS from /proc), to show whether it grows with the input."""
    t0 = time.perf_counter()
    while not stop.wait(every_s):
        try:
            with open(f"/proc/{pid}/status") as f:
                kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            return
        out.append((round(time.perf_counter() - t0, 1), kb * 1024))


def run_side(cmd: list[str], rss_every_s: float = 0.0) -> dict:
    """Run `cmd` to the end: wall time, its own peak RSS and CPU time (wait4) and, optionally, RSS samples."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        samples: list = []
        stop = threading.Event()
        sampler = threading.Thread(target=_rss_sampler, args=(p.pid, samples, stop, rss_every_s), daemon=True)
        if rss_every_s:
            sampler.start()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        if rss_every_s:
            sampler.join()
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:5])} failed ({p.returncode}):\n{err.read()[-3000:]}")
        return {"wall_s": wall, "stdout": out.read(), "samples": samples, "peak_rss_bytes": usage.ru_maxrss * 1024,
                "cpu_s": usage.ru_utime + usage.ru_stime}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--messages", action="store_true", help="log the request messages too (prompt-bloat input)")
    ap.add_argument("--seed", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the seed's pydantic loop (default on)")
    ap.add_argument("--memory-limit", default=None, help="kvreport audit --memory-limit (default: its own)")
    ap.add_argument("--rss-trace", action="store_true", help="sample the audit's RSS every second")
    ap.add_argument("--log", type=Path, help="audit this log instead of generating one")
    ap.add_argument("--child-seed", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-floor", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-store-floor", type=Path, nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_seed:
        print(json.dumps(seed_loop(args.child_seed)))
        return
    if args.child_floor:
        print(json.dumps(floor_query(args.child_floor)))
        return
    if args.child_store_floor:
        print(json.dumps(store_floor_query(*args.child_store_floor)))
        return

    with tempfile.TemporaryDirectory(prefix="kvreport-bench-") as d:
        log = args.log or Path(d) / "openai.jsonl"
        if not args.log:
            t0 = time.perf_counter()
            write_log(log, args.calls, args.messages)
            print(f"log: {args.calls:,} calls ({CALLS_PER_SESSION} per session{', with messages' if args.messages else ''})"
                  f" + 2 broken lines, {log.stat().st_size / 1e6:,.0f} MB, written in {time.perf_counter() - t0:.1f}s "
                  f"({os.cpu_count()} CPUs)")
        db = Path(d) / "audit.duckdb"
        cmd = [sys.executable, "-m", "kvreport.runner", "audit", str(log), "--db", str(db)]
        if args.memory_limit:
            cmd += ["--memory-limit", args.memory_limit]
        a = run_side(cmd, 1.0 if args.rss_trace else 0.0)
        import duckdb

        con = duckdb.connect(str(db), read_only=True)
        s = dict(zip(("n_calls", "n_sessions", "overall_pcer", "duration_s"),
                     con.execute("SELECT n_calls, n_sessions, overall_pcer, duration_s FROM audits").fetchone()))
        reject_lines = [r[0] for r in con.execute("SELECT line FROM token_rejects ORDER BY line").fetchall()]
        con.close()
        n = s["n_calls"]
        print(f"kvreport audit : {a['wall_s']:7.2f} s whole process ({n / a['wall_s']:,.0f} calls/s; audit's own "
              f"duration_s {s['duration_s']:.2f} s; {a['cpu_s']:.2f} CPU-s), peak RSS {a['peak_rss_bytes'] / 1e6:,.0f} MB, "
              f"DB {db.stat().st_size / 1e6:,.0f} MB, rejects at lines {reject_lines[:4]}")
        if a["samples"]:
            print("  RSS over time (s, MB): " + ", ".join(f"{t:g}:{b / 1e6:,.0f}" for t, b in a["samples"]))
        if not args.log and reject_lines != [args.calls + 1, args.calls + 2]:
            raise SystemExit("reject line numbers are wrong: the line numbering lost the file order")
        if args.seed:
            p = run_side([sys.executable, __file__, "--child-seed", str(log)])
            ps = json.loads(p["stdout"].strip().splitlines()[-1])
            print(f"seed loop      : {p['wall_s']:7.2f} s whole process ({ps['n_calls'] / p['wall_s']:,.0f} calls/s; "
                  f"{p['cpu_s']:.2f} CPU-s), peak RSS {p['peak_rss_bytes'] / 1e6:,.0f} MB")
            same = (n == ps["n_calls"] and reject_lines == ps["reject_lines"] and s["n_sessions"] == ps["n_sessions"]
                    and abs(s["overall_pcer"] - ps["overall_pcer"]) < 1e-9)
            print(f"results agree  : {same} (calls {n:,} / {ps['n_calls']:,}, sessions {s['n_sessions']:,} / "
                  f"{ps['n_sessions']:,}, reject lines {reject_lines[:4]} / {ps['reject_lines'][:4]}, PCER "
                  f"{s['overall_pcer']:.6f} / {ps['overall_pcer']:.6f})")
            f = run_side([sys.executable, __file__, "--child-floor", str(log)])
            fs = json.loads(f["stdout"].strip().splitlines()[-1])
            print(f"floor          : {f['wall_s']:7.2f} s whole process (DuckDB read_json with the columns spelled out + "
                  f"per-session sums, nothing checked or written; {fs['n_calls']:,} calls), peak RSS "
                  f"{f['peak_rss_bytes'] / 1e6:,.0f} MB")
            print(f"speed-up       : {p['wall_s'] / a['wall_s']:.1f}x whole process (target >= 10x, stretch 20x); "
                  f"the floor is {p['wall_s'] / f['wall_s']:.1f}x, and the audit takes {a['wall_s'] / f['wall_s']:.1f}x "
                  "the floor's time")
            sf = run_side([sys.executable, __file__, "--child-store-floor", str(log), str(Path(d) / "floor.duckdb")])
            print(f"store floor    : {sf['wall_s']:7.2f} s whole process (the floor, with every call written to a new DuckDB "
                  f"file first); the audit takes {a['wall_s'] / sf['wall_s']:.1f}x its time")
            small = Path(d) / "first-1000.jsonl"
            with open(log, "rb") as src, open(small, "wb") as dst:
                dst.writelines(line for _, line in zip(range(1000), src))
            fixed = sorted(run_side([sys.executable, "-m", "kvreport.runner", "audit", str(small), "--db",
                                     str(Path(d) / f"small-{i}.duckdb")])["wall_s"] for i in range(3))
            print(f"fixed cost     : {fixed[1]:7.2f} s whole process for the log's first 1,000 lines (median of 3, "
                  f"{fixed[0]:.2f}-{fixed[-1]:.2f}): start-up, DB creation, query planning, output; the audit less it "
                  f"takes {(a['wall_s'] - fixed[1]) / f['wall_s']:.1f}x the floor's time")
            if not same:
                raise SystemExit("the two sides disagree: one of them is wrong")
        help_s = sorted(run_side([sys.executable, "-m", "kvreport.runner", "audit", "--help"])["wall_s"] for _ in range(5))
        print(f"start-up       : `kvreport audit --help` {help_s[2]:.2f} s (median of 5, {help_s[0]:.2f}-{help_s[-1]:.2f})")


if __name__ == "__main__":
    main()
