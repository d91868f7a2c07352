"""Benchmark: the whole `kvreport audit` process on the log shapes people write, against its floors.

    python benchmarks/bench_audit.py                                   # every shape, 4M calls, 3 runs each
    python benchmarks/bench_audit.py --calls 1000000 --shapes iso,epoch-ms,openai-chat,anthropic,litellm
    python benchmarks/bench_audit.py --shapes iso --per-session 1 --calls 10000000 --runs 1 --rss-trace
    python benchmarks/bench_audit.py --shapes iso --seed --startup    # and the seed's loop, fixed cost, --help

Per shape (SHAPES: the OpenAI envelope with its time as each common logger writes it, and three API objects as
their SDKs return them), a log is generated (a temp dir, deleted afterwards): N calls, 8 per session, then two
broken lines (a negative count in that shape, and a truncated line). Four child processes, each timed whole
from outside (interpreter start, imports, reading, writing; wall and CPU seconds and peak RSS from wait4), run
--runs times in alternating order, and the medians (min-max) are printed, in wall seconds and in CPU seconds (user +
system, every thread): on a shared machine the CPU-seconds ratios are the fair figure, and the load average
before and after each shape says how shared it was:
  audit          `python -m kvreport.runner audit LOG --db DB`: detect, ingest with validation and rejects,
                 per-session and fleet metrics, leakage timeline, TTL sweep, cost, everything written to a new DB;
  floor          DuckDB's JSON reader with the shape's columns spelled out, and the per-session sums: nothing
                 checked, converted or written (no audit can be faster on this machine);
  store floor    the floor with every call written to a new DuckDB file first (session, time converted the
                 plainest correct way, three counts): what "every call stored" costs at least;
  figures floor  the store floor plus the audit's time figures by the plainest SQL (KV segments, a per-session
                 table, the leakage timeline, the TTL sweep): what those figures cost at least, nothing checked.
Every audit is checked against the floor (calls, sessions, overall PCER), the figures floor (leakage index) and for
the two rejects' line numbers.
Target (issue 39): each shape within 3x of its store floor at 4M calls. `--seed` also times the seed article's
per-record pydantic loop on envelope logs (its models copied as published; `pip install -e .[bench]`; pydantic is
never a kvreport dependency), `--startup` the fixed cost (the audit of the log's first 1,000 lines) and
`kvreport audit --help`.
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
from dataclasses import dataclass
from pathlib import Path

CALLS_PER_SESSION = 8
_ENVELOPE = ("{{'model': 'gpt-4o-mini-2024-07-18', 'usage': {{'prompt_tokens': inp, 'completion_tokens': out, "
             "'prompt_tokens_details': {{'cached_tokens': cached}}}}}}")


@dataclass(frozen=True)
class LogShape:
    """One way people log calls: how a line is generated (a DuckDB struct over the generator's columns i, sess,
    ts, inp, out, cached), one bad line of that shape (a negative count), the audit's extra options, and how the
    floors read it (read_json columns; session, time and counts as SQL over them)."""
    line: str                   # the struct each line is written from
    bad: str                    # a line of the same shape whose count is negative (a reject)
    columns: str                # read_json columns for the floors
    session: str
    time: str                   # the store floor's time: the plainest correct conversion, no checks
    input: str
    cached: str
    output: str
    args: tuple[str, ...] = ()
    end: str | None = None      # the figures floor's end time, where the shape logs one (the audit's last activity)


def _envelope(ts_sql: str, ts_type: str, time: str) -> LogShape:
    return LogShape(
        "{'session_id': sess, 'timestamp': " + ts_sql + ", 'request': {'model': 'gpt-4o-mini'}, 'response': "
        + _ENVELOPE.format() + "}",
        '{"session_id": "s-1", "timestamp": null, "response": {"usage": {"prompt_tokens": -3, "completion_tokens": 1}}}',
        "{'session_id': 'VARCHAR', 'timestamp': '" + ts_type + "', 'response': 'STRUCT(usage STRUCT(prompt_tokens "
        "BIGINT, completion_tokens BIGINT, prompt_tokens_details STRUCT(cached_tokens BIGINT)))'}",
        "session_id", time, "response.usage.prompt_tokens", "response.usage.prompt_tokens_details.cached_tokens",
        "response.usage.completion_tokens")


_OFFSET = "strftime(ts + INTERVAL 2 HOUR, '%Y-%m-%dT%H:%M:%S')"
# The shapes people log. The envelope ({session_id, timestamp, request, response}) with its time as each common
# logger writes it; then three API objects as their SDKs return them, one per line.
SHAPES = {
    "iso": _envelope("strftime(ts, '%Y-%m-%dT%H:%M:%SZ')", "VARCHAR", "timestamp::TIMESTAMP"),       # 2025-06-02T10:00:00Z
    "iso-ms": _envelope("strftime(ts, '%Y-%m-%dT%H:%M:%S.%gZ')", "VARCHAR", "timestamp::TIMESTAMP"),  # JS toISOString
    "iso-offset": _envelope(_OFFSET + " || '+02:00'", "VARCHAR", "timestamp::TIMESTAMPTZ"),          # ...12:00:00+02:00
    "iso-us-offset": _envelope("strftime(ts + INTERVAL 2 HOUR, '%Y-%m-%dT%H:%M:%S.%f') || '+02:00'", "VARCHAR",
                               "timestamp::TIMESTAMPTZ"),                                           # Python isoformat()
    "iso-naive-us": _envelope("strftime(ts, '%Y-%m-%d %H:%M:%S.%f')", "VARCHAR", "timestamp::TIMESTAMP"),  # str(datetime)
    "epoch-s": _envelope("epoch(ts)::BIGINT", "BIGINT", "to_timestamp(timestamp)"),                 # 1748858400
    "epoch-s-float": _envelope("round(epoch_us(ts) / 1e6, 3)", "DOUBLE", "to_timestamp(timestamp)"),  # time.time()
    "epoch-ms": _envelope("epoch_ms(ts)", "BIGINT", "make_timestamp(timestamp * 1000)"),            # Date.now()
    "epoch-ms-float": _envelope("round(epoch_us(ts) / 1e3, 3)", "DOUBLE",
                                "make_timestamp((timestamp * 1000)::BIGINT)"),                      # performance.timeOrigin + now()
    # Chat Completions objects (stored completions carry the request's metadata: its session)
    "openai-chat": LogShape(
        "{'id': 'chatcmpl-' || i, 'object': 'chat.completion', 'created': epoch(ts)::BIGINT, "
        "'model': 'gpt-4o-mini-2024-07-18', 'choices': [{'index': 0, 'message': {'role': 'assistant', "
        "'content': 'ok'}, 'finish_reason': 'stop'}], 'usage': {'prompt_tokens': inp, 'completion_tokens': out, "
        "'total_tokens': inp + out, 'prompt_tokens_details': {'cached_tokens': cached}}, "
        "'metadata': {'session_id': sess}}",
        '{"id": "chatcmpl-x", "object": "chat.completion", "created": 1748858400, "usage": {"prompt_tokens": -3, '
        '"completion_tokens": 1}}',
        "{'created': 'BIGINT', 'metadata': 'STRUCT(session_id VARCHAR)', 'usage': 'STRUCT(prompt_tokens BIGINT, "
        "completion_tokens BIGINT, prompt_tokens_details STRUCT(cached_tokens BIGINT))'}",
        "metadata.session_id", "to_timestamp(created)", "usage.prompt_tokens",
        "usage.prompt_tokens_details.cached_tokens", "usage.completion_tokens"),
    # Anthropic Message objects, with the session and time the logger added beside the SDK's fields
    "anthropic": LogShape(
        "{'id': 'msg_' || i, 'type': 'message', 'role': 'assistant', 'model': 'claude-sonnet-4-5', "
        "'content': [{'type': 'text', 'text': 'ok'}], 'stop_reason': 'end_turn', 'usage': {'input_tokens': "
        "inp - cached, 'output_tokens': out, 'cache_creation_input_tokens': 0, 'cache_read_input_tokens': cached}, "
        "'session_id': sess, 'timestamp': strftime(ts, '%Y-%m-%dT%H:%M:%S.%fZ')}",
        '{"type": "message", "usage": {"input_tokens": -3, "output_tokens": 1}, "session_id": "s-1"}',
        "{'session_id': 'VARCHAR', 'timestamp': 'VARCHAR', 'usage': 'STRUCT(input_tokens BIGINT, output_tokens BIGINT, "
        "cache_creation_input_tokens BIGINT, cache_read_input_tokens BIGINT)'}",
        "session_id", "timestamp::TIMESTAMP",
        "usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens",
        "usage.cache_read_input_tokens", "usage.output_tokens", ("--session-key", "session_id", "--time-key", "timestamp")),
    # LiteLLM's StandardLoggingPayload (times are Unix seconds as floats)
    "litellm": LogShape(
        "{'id': 'req-' || i, 'trace_id': sess, 'call_type': 'acompletion', 'status': 'success', "
        "'model': 'gpt-4o-mini', 'custom_llm_provider': 'openai', 'prompt_tokens': inp, 'completion_tokens': out, "
        "'total_tokens': inp + out, 'startTime': round(epoch_us(ts) / 1e6, 6), "
        "'endTime': round(epoch_us(ts) / 1e6 + 0.8, 6), 'cache_hit': false, 'metadata': {'usage_object': "
        "{'prompt_tokens': inp, 'completion_tokens': out, 'prompt_tokens_details': {'cached_tokens': cached}}}}",
        '{"call_type": "acompletion", "status": "success", "prompt_tokens": -3, "completion_tokens": 1, '
        '"trace_id": "s-1"}',
        "{'trace_id': 'VARCHAR', 'startTime': 'DOUBLE', 'endTime': 'DOUBLE', 'prompt_tokens': 'BIGINT', "
        "'completion_tokens': 'BIGINT', 'metadata': 'STRUCT(usage_object STRUCT(prompt_tokens_details STRUCT(cached_tokens BIGINT)))'}",
        "trace_id", "to_timestamp(startTime)", "prompt_tokens",
        "metadata.usage_object.prompt_tokens_details.cached_tokens", "completion_tokens", end="to_timestamp(endTime)"),
}


def write_log(path: Path, n: int, messages: bool = False, shape: str = "iso",
              per_session: int = CALLS_PER_SESSION) -> None:
    """The log, written by DuckDB (a Python writer would take longer than the audit): `n` calls of `shape`,
    `per_session` per session, then two broken lines (a negative count in the same shape, and a truncated line)."""
    import duckdb

    n_sessions = max(1, n // per_session)
    line = SHAPES[shape].line
    if messages:  # call k of a session re-sends the conversation so far: system prompt, then k user turns
        request = ("{'model': 'gpt-4o-mini', 'messages': [{'role': 'system', 'content': 'You are a helpful assistant. "
                   "Answer briefly and cite sources.'}] || list_transform(range((i // " + str(n_sessions) + ")::BIGINT + 1), "
                   "lambda x: {'role': 'user', 'content': 'question ' || x || ' about item ' || (i % 977)})}")
        if "'request': {'model': 'gpt-4o-mini'}" not in line:
            raise SystemExit(f"--messages: only the envelope shapes log request messages, not {shape}")
        line = line.replace("{'model': 'gpt-4o-mini'}", request)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""
        COPY (
          SELECT UNNEST({line})
          FROM (SELECT i, 's-' || (i % {n_sessions}) AS sess,
                       TIMESTAMP '2025-06-02 00:00:00' + to_microseconds(i * 86400000000 // {n}) AS ts,
                       50 + (hash(i) % 8000)::BIGINT AS inp, 20 + (hash(i + 1) % 400)::BIGINT AS out,
                       CASE WHEN hash(i + 2) % 10 < 6 THEN ((50 + hash(i) % 8000) // 128 * 128)::BIGINT ELSE 0 END
                         AS cached
                FROM range({n}) t(i))
        ) TO '{path}' (FORMAT JSON)""")
    con.close()
    with open(path, "a") as f:  # a few broken lines, as real logs have
        f.write(SHAPES[shape].bad + "\n")
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


# --- the floors: what reading the file, and storing its calls, cost at all -----------------------------------

def floor_query(path: Path, shape: str) -> dict:
    """DuckDB's own JSON reader with the shape's columns spelled out, and the per-session sums: no validation,
    no line numbers, no times, nothing written. No audit can be faster than this on the same machine."""
    import duckdb

    sh = SHAPES[shape]
    con = duckdb.connect()
    n, sessions, pcer = con.execute(f"""
        SELECT sum(n), count(*), sum(cached) / sum(inp) FROM (
          SELECT {sh.session} AS session_id, count(*) AS n, sum({sh.input}) AS inp, sum({sh.cached}) AS cached
          FROM read_json(?, format = 'newline_delimited', ignore_errors = true, columns = {sh.columns})
          WHERE {sh.input} >= 0 GROUP BY ALL)""", [str(path)]).fetchone()
    return {"n_calls": int(n), "n_sessions": sessions, "overall_pcer": pcer}


def _stored_calls(path: Path, db: Path, shape: str, end: bool = False):
    """A new DuckDB file with every call of the log in its `calls` table, by the store floor's typed read (and
    each call's end time, with `end`, where the shape logs one); returns the open connection."""
    import duckdb

    sh = SHAPES[shape]
    con = duckdb.connect(str(db))
    con.execute("SET TimeZone = 'UTC'")
    end_time = f", ({sh.end or 'NULL'})::TIMESTAMP AS end_time" if end else ""
    con.execute(f"""
        CREATE TABLE calls AS
        SELECT {sh.session} AS session_id, ({sh.time})::TIMESTAMP AS start_time{end_time}, {sh.input} AS input_tokens,
               {sh.cached} AS cached_input_tokens, {sh.output} AS output_tokens
        FROM read_json(?, format = 'newline_delimited', ignore_errors = true, columns = {sh.columns})
        WHERE {sh.input} >= 0""", [str(path)])
    return con


def store_floor_query(path: Path, db: Path, shape: str) -> dict:
    """The floor, plus what "every call stored" costs at least: the same typed read, its time converted the
    plainest correct way, written whole into a table of a new DuckDB file (session, time, the three counts; not
    even the line), then the per-session sums from that table. Nothing checked, priced or timed: an audit that
    stores every call cannot be faster than this."""
    con = _stored_calls(path, db, shape)
    n, sessions, pcer = con.execute("""
        SELECT sum(n), count(*), sum(cached) / sum(inp) FROM (
          SELECT session_id, count(*) AS n, sum(input_tokens) AS inp, sum(cached_input_tokens) AS cached
          FROM calls GROUP BY session_id)""").fetchone()
    con.close()
    return {"n_calls": int(n), "n_sessions": sessions, "overall_pcer": pcer}


IDLE_S, TTLS_S, BUCKETS = 300.0, (60.0, 300.0, 900.0, 1800.0, 3600.0), 120  # the audit's defaults (engine.py)


def figures_floor_query(path: Path, db: Path, shape: str) -> dict:
    """The store floor, plus the audit's time figures by the plainest SQL over the stored calls: each call's KV
    segment (its context held until the session's next call, idle IDLE_S after its activity), a table of
    per-session sums (tokens, PCER, largest context, first and last time, KV and idle token-seconds), the
    leakage timeline's BUCKETS intervals and the TTL sweep (held token-seconds, tokens prefilled again, the
    intervals a segment starts and is evicted in, sessions evicted). Nothing checked, priced or labelled; no
    line numbers or rejects. Its leakage index is checked against the audit's (bench_shape): the same figure."""
    con = _stored_calls(path, db, shape, end=True)
    ttls = ", ".join(str(t) for t in TTLS_S)
    con.execute("""
        CREATE TEMP TABLE seg AS
        WITH c AS (SELECT session_id, epoch_us(start_time) / 1e6 AS t, epoch_us(coalesce(end_time, start_time)) / 1e6
                            AS t_act, input_tokens + output_tokens AS ctx FROM calls)
        SELECT session_id, t, t_act, ctx, t_next IS NULL AS is_last,
               coalesce(t_next, (SELECT max(epoch_us(coalesce(end_time, start_time))) / 1e6 FROM calls)) AS t_end
        FROM (SELECT *, lead(t) OVER (PARTITION BY session_id ORDER BY t) AS t_next FROM c)""")
    con.execute(f"""
        CREATE TABLE sessions AS
        WITH s AS (
          SELECT session_id, count(*) AS n_calls, sum(input_tokens) AS input_tokens,
                 sum(cached_input_tokens) AS cached_input_tokens, sum(output_tokens) AS output_tokens,
                 max(input_tokens + output_tokens) AS context_tokens, min(start_time) AS first_seen,
                 max(coalesce(end_time, start_time)) AS last_activity
          FROM calls GROUP BY session_id),
        b AS (
          SELECT session_id, sum((t_end - t) * ctx) AS kv_token_seconds,
                 sum(greatest(0, t_end - greatest(t_act + {IDLE_S}, t)) * ctx) AS idle_token_seconds
          FROM seg GROUP BY session_id)
        SELECT s.*, cached_input_tokens / nullif(input_tokens, 0) AS pcer, b.kv_token_seconds, b.idle_token_seconds
        FROM s LEFT JOIN b USING (session_id)""")
    con.execute(f"""
        CREATE TABLE timeline AS
        WITH w AS (SELECT min(t) AS t0, (max(t_end) - min(t)) / {BUCKETS} AS w FROM seg),
        ev AS (
          SELECT t AS x, ctx AS held, 0 AS idle FROM seg
          UNION ALL SELECT t_end, -ctx, 0 FROM seg
          UNION ALL SELECT t_act + {IDLE_S}, 0, ctx FROM seg WHERE t_end > greatest(t_act + {IDLE_S}, t)
          UNION ALL SELECT t_end, 0, -ctx FROM seg WHERE t_end > greatest(t_act + {IDLE_S}, t))
        SELECT least({BUCKETS}, floor((x - t0) / w))::INTEGER AS k, sum(held) AS held, sum(idle) AS idle
        FROM ev, w GROUP BY k""")
    con.execute(f"""
        CREATE TABLE ttl_sweep AS
        WITH w AS (SELECT min(t) AS t0, (max(t_end) - min(t)) / {BUCKETS} AS w FROM seg),
        e AS (
          SELECT ttl, t, t_end, ctx, is_last, least(t_end, greatest(t, t_act + ttl)) AS t_evict,
                 least({BUCKETS}, floor((t - w.t0) / w.w))::INTEGER AS ks
          FROM seg, w, (SELECT unnest([{ttls}]) AS ttl))
        SELECT ttl, ks, least({BUCKETS}, floor((t_evict - w.t0) / w.w))::INTEGER AS ke,
               sum((t_evict - t) * ctx) AS held_token_seconds,
               sum(ctx) FILTER (WHERE NOT is_last AND t_evict < t_end) AS recompute_tokens, sum(ctx) AS tokens
        FROM e, w GROUP BY GROUPING SETS ((ttl), (ttl, ks, ke))""")
    con.execute(f"""
        CREATE TABLE ttl_evicted AS
        SELECT max_ttl, count(*) AS sessions FROM (
          SELECT session_id, max(list_max(list_filter([{ttls}], lambda x: t_act + x < t_end))) AS max_ttl
          FROM seg GROUP BY session_id)
        GROUP BY max_ttl""")
    n, sessions, pcer, leakage = con.execute("""
        SELECT sum(n_calls), count(*), sum(cached_input_tokens) / sum(input_tokens),
               sum(idle_token_seconds) / sum(kv_token_seconds) FROM sessions""").fetchone()
    con.close()
    return {"n_calls": int(n), "n_sessions": sessions, "overall_pcer": pcer, "leakage_index": leakage}


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


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def _spread(xs: list[float]) -> str:
    """The median of `xs` and its range: '9.36 (9.10-9.80)' (one run: just the value)."""
    return f"{_median(xs):.2f}" + (f" ({min(xs):.2f}-{max(xs):.2f})" if len(xs) > 1 else "")


def _load() -> str:
    """The 1-minute load average (the machine may be shared: how many runnable processes competed)."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def audit_result(db: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    s = dict(zip(("n_calls", "n_sessions", "overall_pcer", "leakage_index", "duration_s"), con.execute(
        "SELECT n_calls, n_sessions, overall_pcer, leakage_index, duration_s FROM audits").fetchone()))
    s["reject_lines"] = [r[0] for r in con.execute("SELECT line FROM token_rejects ORDER BY line").fetchall()]
    con.close()
    return s


def bench_shape(shape: str, args, d: Path) -> dict:
    """Audit, floor, store floor and figures floor of one shape's log, `args.runs` times in alternating order;
    every audit checked against the floor (calls, sessions, PCER), the figures floor (its leakage index) and for
    the two rejects' line numbers."""
    log = args.log or d / f"{shape}.jsonl"
    if not args.log:
        t0 = time.perf_counter()
        write_log(log, args.calls, args.messages, shape, args.per_session)
        print(f"{shape}: {args.calls:,} calls ({args.per_session} per session) + 2 broken lines, "
              f"{log.stat().st_size / 1e6:,.0f} MB, written in {time.perf_counter() - t0:.1f}s", flush=True)
    cmd = [sys.executable, "-m", "kvreport.runner", "audit", str(log), *SHAPES[shape].args]
    if args.memory_limit:
        cmd += ["--memory-limit", args.memory_limit]
    times: dict[str, list[dict]] = {"audit": [], "floor": [], "store floor": [], "figures floor": []}
    db, floor_db, figures_db = d / "audit.duckdb", d / "floor.duckdb", d / "figures.duckdb"

    def audit() -> None:
        db.unlink(missing_ok=True)
        a = run_side(cmd + ["--db", str(db)], 1.0 if args.rss_trace else 0.0)
        a.update(audit_result(db))
        times["audit"].append(a)
        if a["samples"]:
            print("  RSS over time (s, MB): " + ", ".join(f"{t:g}:{b / 1e6:,.0f}" for t, b in a["samples"]))

    def floor() -> None:
        times["floor"].append(run_side([sys.executable, __file__, "--child-floor", str(log), shape]))

    def store_floor() -> None:
        floor_db.unlink(missing_ok=True)
        times["store floor"].append(run_side([sys.executable, __file__, "--child-store-floor", str(log),
                                              str(floor_db), shape]))

    def figures_floor() -> None:
        figures_db.unlink(missing_ok=True)
        times["figures floor"].append(run_side([sys.executable, __file__, "--child-figures-floor", str(log),
                                                str(figures_db), shape]))

    sides = [audit, floor, store_floor, figures_floor]
    load_before = _load()
    for run in range(args.runs):
        for side in sides if run % 2 == 0 else sides[::-1]:
            side()
    fs = json.loads(times["floor"][0]["stdout"].strip().splitlines()[-1])
    gs = json.loads(times["figures floor"][0]["stdout"].strip().splitlines()[-1])
    for a in times["audit"]:
        if args.log:
            break
        if a["reject_lines"] != [args.calls + 1, args.calls + 2]:
            raise SystemExit(f"{shape}: reject line numbers {a['reject_lines'][:4]}: the line numbering is wrong")
        if (a["n_calls"], a["n_sessions"]) != (fs["n_calls"], fs["n_sessions"]) \
                or abs(a["overall_pcer"] - fs["overall_pcer"]) > 1e-9:
            raise SystemExit(f"{shape}: the audit ({a['n_calls']:,} calls, {a['n_sessions']:,} sessions, PCER "
                             f"{a['overall_pcer']}) and the floor ({fs}) disagree: one of them is wrong")
        if abs(a["leakage_index"] - gs["leakage_index"]) > 1e-9:
            raise SystemExit(f"{shape}: the audit's leakage index {a['leakage_index']} and the figures floor's "
                             f"{gs['leakage_index']} disagree: the floor does not compute the audit's figures")
    row = {"shape": shape, "mb": log.stat().st_size / 1e6, "load": f"{load_before}/{_load()}"}
    for side, runs in times.items():
        row[side] = _median([r["wall_s"] for r in runs])
        row[side + " cpu"] = _median([r["cpu_s"] for r in runs])
        row[side + " rss"] = max(r["peak_rss_bytes"] for r in runs) / 1e6
        row[side + " wall str"] = _spread([r["wall_s"] for r in runs])
        row[side + " cpu str"] = _spread([r["cpu_s"] for r in runs])
    # ratios of the medians, and of the runs paired in order (run k of the audit against run k of the floor)
    row["ratio"] = _spread([a["wall_s"] / f["wall_s"] for a, f in zip(times["audit"], times["store floor"])])
    row["ratio cpu"] = _spread([a["cpu_s"] / f["cpu_s"] for a, f in zip(times["audit"], times["store floor"])])
    row["figures cpu"] = _spread([g["cpu_s"] / f["cpu_s"] for g, f in zip(times["figures floor"], times["store floor"])])
    row["over figures cpu"] = _spread([a["cpu_s"] / g["cpu_s"] for a, g in zip(times["audit"], times["figures floor"])])
    print(f"  audit {row['audit wall str']} s ({row['audit cpu str']} CPU-s, peak RSS {row['audit rss']:,.0f} MB), "
          f"floor {row['floor wall str']} s ({row['floor cpu str']} CPU-s), store floor {row['store floor wall str']} s "
          f"({row['store floor cpu str']} CPU-s), figures floor {row['figures floor wall str']} s "
          f"({row['figures floor cpu str']} CPU-s, {row['figures cpu']}x the store floor's CPU): "
          f"{row['audit'] / row['floor']:.1f}x the floor, "
          f"{row['ratio']}x the store floor, CPU {row['ratio cpu']}x; load average {row['load']}", flush=True)
    if args.seed and "'response'" in SHAPES[shape].columns:  # the seed's loop reads envelopes only
        p = run_side([sys.executable, __file__, "--child-seed", str(log)])
        ps = json.loads(p["stdout"].strip().splitlines()[-1])
        print(f"  seed loop {p['wall_s']:.2f} s ({p['cpu_s']:.2f} CPU-s), peak RSS {p['peak_rss_bytes'] / 1e6:,.0f} MB: "
              f"the audit is {p['wall_s'] / row['audit']:.1f}x faster; calls {ps['n_calls']:,}, reject lines "
              f"{ps['reject_lines'][:4]}")
    if args.startup:
        small = d / "first-1000.jsonl"
        with open(log, "rb") as src, open(small, "wb") as dst:
            dst.writelines(line for _, line in zip(range(1000), src))
        fixed = sorted(run_side(cmd[:4] + [str(small), *cmd[5:], "--db", str(d / f"small-{i}.duckdb")])["wall_s"]
                       for i in range(3))
        print(f"  fixed cost {fixed[1]:.2f} s (the log's first 1,000 lines, median of 3, {fixed[0]:.2f}-{fixed[-1]:.2f})")
    if not args.log:
        log.unlink()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=4_000_000)
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    ap.add_argument("--per-session", type=int, default=CALLS_PER_SESSION, help="calls per session")
    ap.add_argument("--runs", type=int, default=3, help="runs of each side per shape, alternating (medians)")
    ap.add_argument("--messages", action="store_true", help="log the request messages too (envelope shapes)")
    ap.add_argument("--seed", action="store_true", help="also time the seed's pydantic loop (envelope shapes)")
    ap.add_argument("--startup", action="store_true", help="also time the fixed cost and `audit --help`")
    ap.add_argument("--memory-limit", default=None, help="kvreport audit --memory-limit (default: its own)")
    ap.add_argument("--rss-trace", action="store_true", help="sample the audit's RSS every second")
    ap.add_argument("--log", type=Path, help="audit this log (of the one shape --shapes names) instead")
    ap.add_argument("--child-seed", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-floor", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--child-store-floor", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--child-figures-floor", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_seed:
        print(json.dumps(seed_loop(args.child_seed)))
        return
    if args.child_floor:
        print(json.dumps(floor_query(Path(args.child_floor[0]), args.child_floor[1])))
        return
    if args.child_store_floor:
        log, db, shape = args.child_store_floor
        print(json.dumps(store_floor_query(Path(log), Path(db), shape)))
        return
    if args.child_figures_floor:
        log, db, shape = args.child_figures_floor
        print(json.dumps(figures_floor_query(Path(log), Path(db), shape)))
        return
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown or (args.log and len(shapes) != 1):
        raise SystemExit(f"--shapes: {unknown or shapes}: give shapes of {', '.join(SHAPES)} (one with --log)")
    print(f"{os.cpu_count()} CPUs; {args.runs} runs per side, alternating; medians", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kvreport-bench-") as d:
        for shape in shapes:
            rows.append(bench_shape(shape, args, Path(d)))
    # On a shared machine wall time depends on the neighbours; CPU seconds (user + system, every thread) less so.
    print(f"\n{args.calls:,} calls per shape; median (min-max) of {args.runs} alternating runs; wall s / CPU s; "
          "ratios: over the store floor's, run k against run k")
    print("\n| shape | log MB | audit wall s | audit CPU s | floor CPU s | store floor wall s | store floor CPU s | "
          "figures floor CPU s | audit / store floor (wall) | audit / store floor (CPU) | "
          "figures floor / store floor (CPU) | audit / figures floor (CPU) | audit peak RSS MB | load avg |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['shape']} | {r['mb']:,.0f} | {r['audit wall str']} | {r['audit cpu str']} | {r['floor cpu str']} | "
              f"{r['store floor wall str']} | {r['store floor cpu str']} | {r['figures floor cpu str']} | "
              f"{r['ratio']}x | {r['ratio cpu']}x | {r['figures cpu']}x | {r['over figures cpu']}x | {r['audit rss']:,.0f} | "
              f"{r['load']} |")
    if args.startup:
        help_s = sorted(run_side([sys.executable, "-m", "kvreport.runner", "audit", "--help"])["wall_s"] for _ in range(5))
        print(f"start-up: `kvreport audit --help` {help_s[2]:.2f} s (median of 5, {help_s[0]:.2f}-{help_s[-1]:.2f})")


if __name__ == "__main__":
    main()
