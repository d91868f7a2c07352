"""Benchmark: `kvreport audit` (DuckDB, vectorised SQL) vs a per-record Python loop doing the same work.

    python benchmarks/bench_audit.py                 # 1M-line OpenAI-shaped log, both sides, speed-up
    python benchmarks/bench_audit.py --calls 10000000 --no-python --memory-limit 1GB   # bounded memory

The log (written to a temp dir, deleted afterwards) has Chat Completions envelopes with session ids,
timestamps, request metadata and usage with cached tokens, 50,000 sessions, plus a few malformed lines.
Each side runs in its own child process so its peak RSS is its own:
  audit   runner.commands.audit.execute: detect, ingest with validation and rejects, per-session and
          fleet metrics, leakage timeline, TTL sweep, everything written to a fresh DuckDB file;
  python  for each line: json.loads, validate, build a Call dataclass, then per session: sort by time,
          PCER / SPOR / KV footprint, idle byte-seconds (leakage) and the same TTL sweep. No DB writes and
          no timeline sampling, so the comparison flatters the Python side.
The two sides' overall PCER and leakage index are compared, so the benchmark also checks the SQL.
Times are wall-clock inside each child (imports excluded, reported separately as process wall time).
Target: audit >= 10x faster end to end.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TTLS = (60.0, 300.0, 900.0, 1800.0, 3600.0)
IDLE_TIMEOUT = 300.0
GPT2_BPT = 36864.0  # what the audit prices gpt2 at in a fresh DB (formula, 16-bit)


def write_log(path: Path, n: int, n_sessions: int = 50_000) -> None:
    """An OpenAI-shaped JSONL log, written by DuckDB (a Python writer would take longer than the audit)."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"""
        COPY (
          SELECT 's-' || (i % {n_sessions}) AS session_id,
                 strftime(TIMESTAMP '2025-06-02 00:00:00' + to_seconds(i * 86400 // {n}), '%Y-%m-%dT%H:%M:%SZ') AS timestamp,
                 {{'model': 'gpt-4o-mini', 'user': 'u-' || (i % 977)}} AS request,
                 {{'id': 'chatcmpl-' || i, 'object': 'chat.completion', 'created': 1748822400 + i * 86400 // {n},
                   'model': 'gpt-4o-mini-2024-07-18',
                   'choices': [{{'index': 0, 'message': {{'role': 'assistant', 'content': 'Sure, here is the answer.'}},
                                 'finish_reason': 'stop'}}],
                   'usage': {{'prompt_tokens': 50 + (hash(i) % 8000)::BIGINT,
                              'completion_tokens': 20 + (hash(i + 1) % 400)::BIGINT,
                              'total_tokens': 70 + (hash(i) % 8000)::BIGINT + (hash(i + 1) % 400)::BIGINT,
                              'prompt_tokens_details': {{'cached_tokens':
                                 CASE WHEN hash(i + 2) % 10 < 6 THEN ((50 + hash(i) % 8000) // 128 * 128)::BIGINT ELSE 0 END,
                                 'audio_tokens': 0}},
                              'completion_tokens_details': {{'reasoning_tokens': 0}}}}}} AS response
          FROM range({n}) t(i)
        ) TO '{path}' (FORMAT JSON)""")
    con.close()
    with open(path, "a") as f:  # a few broken lines, as real logs have
        f.write('{"session_id": "s-1", "response": {"usage": {"prompt_tokens": -3, "completion_tokens": 1}}}\n')
        f.write("{truncated\n")


# --- the per-record Python loop --------------------------------------------------------------------------

@dataclass
class Call:
    session_id: str
    t: float
    input_tokens: int
    cached_tokens: int
    output_tokens: int


def _int(v) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != int(v):
        return None
    return int(v)


def _ts(v) -> float | None:
    import datetime as dt

    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return dt.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def python_audit(path: Path) -> dict:
    sessions: dict[str, list[Call]] = {}
    rejects: list[tuple[int, str]] = []
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                rejects.append((lineno, "malformed JSON"))
                continue
            usage = (rec.get("response") or {}).get("usage") if isinstance(rec, dict) else None
            if not isinstance(usage, dict):
                rejects.append((lineno, "no usage"))
                continue
            p = _int(usage.get("prompt_tokens"))
            c = _int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
            o = _int(usage.get("completion_tokens"))
            t = _ts(rec.get("timestamp"))
            if p is None or c is None or o is None or c > p or t is None:
                rejects.append((lineno, "bad usage"))
                continue
            sid = rec.get("session_id") or (rec.get("request") or {}).get("user") or f"line:{lineno}"
            sessions.setdefault(sid, []).append(Call(sid, t, p, c, o))

    t_end = max(c.t for calls in sessions.values() for c in calls)
    tot_in = tot_cached = 0
    held = idle = 0.0
    ttl_held = {ttl: 0.0 for ttl in TTLS}
    ttl_recompute = {ttl: 0 for ttl in TTLS}
    per_session = {}
    for sid, calls in sessions.items():
        calls.sort(key=lambda c: c.t)
        s_in = sum(c.input_tokens for c in calls)
        s_cached = sum(c.cached_tokens for c in calls)
        ctx = max(c.input_tokens + c.output_tokens for c in calls)
        for i, c in enumerate(calls):
            end = calls[i + 1].t if i + 1 < len(calls) else t_end
            b = (c.input_tokens + c.output_tokens) * GPT2_BPT
            held += (end - c.t) * b
            idle += max(0.0, end - max(c.t + IDLE_TIMEOUT, c.t)) * b
            for ttl in TTLS:
                evict = min(end, c.t + ttl)
                ttl_held[ttl] += (evict - c.t) * b
                if i + 1 < len(calls) and evict < end:
                    ttl_recompute[ttl] += c.input_tokens + c.output_tokens
        per_session[sid] = dict(pcer=s_cached / s_in if s_in else None, kv_bytes=ctx * GPT2_BPT,
                                kv_warning=ctx * GPT2_BPT > 15e6)
        tot_in += s_in
        tot_cached += s_cached
    return {"n_calls": sum(len(v) for v in sessions.values()), "n_sessions": len(sessions),
            "n_rejects": len(rejects), "reject_lines": [n for n, _ in rejects], "overall_pcer": tot_cached / tot_in, "leakage_index": idle / held,
            "ttl_capacity": {ttl: held / h for ttl, h in ttl_held.items()}}


# --- children ---------------------------------------------------------------------------------------------

def child(side: str, log: Path, memory_limit: str) -> None:
    t0 = time.perf_counter()
    c0 = time.process_time()
    if side == "audit":
        from kvreport.runner.commands.audit import execute
        imported, c_imported = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as d:
            s = execute([log], db=Path(d) / "audit.duckdb", memory_limit=memory_limit, echo=lambda *_: None)
            done, c_done = time.perf_counter(), time.process_time()
            db_bytes = (Path(d) / "audit.duckdb").stat().st_size
            import duckdb

            con = duckdb.connect(str(Path(d) / "audit.duckdb"), read_only=True)
            reject_lines = [r[0] for r in con.execute("SELECT line FROM token_rejects ORDER BY line").fetchall()]
            con.close()
        out = {k: s[k] for k in ("n_calls", "n_sessions", "n_rejects", "overall_pcer", "leakage_index")}
        out.update(db_bytes=db_bytes, reject_lines=reject_lines)
    else:
        imported, c_imported = time.perf_counter(), time.process_time()
        out = python_audit(log)
        out.pop("ttl_capacity")
        done, c_done = time.perf_counter(), time.process_time()
    out.update(import_s=imported - t0, work_s=done - imported, cpu_s=c_done - c_imported,
               peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    print(json.dumps(out))


def run_child(side: str, log: Path, memory_limit: str) -> dict:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, __file__, "--child", side, "--log", str(log), "--memory-limit", memory_limit],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{side} child failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--python", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the per-record Python loop (default on)")
    ap.add_argument("--memory-limit", default="2GB", help="DuckDB memory_limit for the audit")
    ap.add_argument("--child", choices=["audit", "python"])
    ap.add_argument("--log", type=Path)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.log, args.memory_limit)
        return

    with tempfile.TemporaryDirectory(prefix="kvreport-bench-") as d:
        log = Path(d) / "openai.jsonl"
        t0 = time.perf_counter()
        write_log(log, args.calls)
        size = log.stat().st_size
        print(f"log: {args.calls:,} calls + 2 broken lines, {size / 1e6:,.0f} MB, written in "
              f"{time.perf_counter() - t0:.1f}s ({os.cpu_count()} CPUs; DuckDB memory_limit {args.memory_limit})")
        a = run_child("audit", log, args.memory_limit)
        print(f"kvreport audit : {a['work_s']:7.2f} s  ({args.calls / a['work_s']:,.0f} calls/s, "
              f"{size / a['work_s'] / 1e6:,.0f} MB/s, {a['cpu_s']:.2f} CPU-s), peak RSS "
              f"{a['peak_rss_bytes'] / 2**20:,.0f} MiB, process {a['process_s']:.2f} s incl. {a['import_s']:.2f} s "
              f"imports; DB {a['db_bytes'] / 1e6:,.0f} MB; rejects at lines {a['reject_lines'][:4]}")
        if a["reject_lines"] != [args.calls + 1, args.calls + 2]:
            raise SystemExit("reject line numbers are wrong: the line numbering lost the file order")
        if args.python:
            p = run_child("python", log, args.memory_limit)
            print(f"python loop    : {p['work_s']:7.2f} s  ({args.calls / p['work_s']:,.0f} calls/s, "
                  f"{p['cpu_s']:.2f} CPU-s), peak RSS {p['peak_rss_bytes'] / 2**20:,.0f} MiB, process {p['process_s']:.2f} s")
            same = (a["n_calls"] == p["n_calls"] and a["reject_lines"] == p["reject_lines"]
                    and abs(a["overall_pcer"] - p["overall_pcer"]) < 1e-9
                    and abs(a["leakage_index"] - p["leakage_index"]) < 1e-9)
            print(f"results agree  : {same} (calls {a['n_calls']:,} / {p['n_calls']:,}, rejects {a['n_rejects']} / "
                  f"{p['n_rejects']}, PCER {a['overall_pcer']:.6f} / {p['overall_pcer']:.6f}, leakage "
                  f"{a['leakage_index']:.6f} / {p['leakage_index']:.6f})")
            speed = p["work_s"] / a["work_s"]
            print(f"speed-up       : {speed:.1f}x in-process (target >= 10x); "
                  f"{p['process_s'] / a['process_s']:.1f}x including interpreter start and imports; "
                  f"{p['cpu_s'] / a['cpu_s']:.1f}x in CPU time (DuckDB uses every core, the loop one)")
            if not same:
                raise SystemExit("the two sides disagree: one of them is wrong")


if __name__ == "__main__":
    main()
