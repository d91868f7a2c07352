"""Where the OpenAI envelope fast reader's step goes (runner/audit/sql/ingest/openai_fast.sql), part by part, on
one log of OpenAI envelopes (bench_audit.py's iso and epoch shapes):

    python benchmarks/ingest_parts.py LOG [--runs 3] [--memory-limit 350MB]

Each part runs in a child process of its own (a new DuckDB file, the audit's settings and macros), --runs times
in alternating order, timed around its statements alone (wall and CPU seconds of every thread); medians (min-max):
  read      DuckDB's JSON reader parsing every line into the reader's record (kv_openai_record), every leaf used;
  checked   the step's whole SELECT (every check, conversion and reject reason) with every output column used,
            nothing written;
  staged    the step itself: that SELECT inserted into _staged;
  numbered  ingest/number_lines.sql after it (each row's line number);
  written   another design, for comparison: the same SELECT written once, straight into a table of the DB file
            (CREATE TABLE AS, in file order: each row's line is its rowid + 1, no UPDATE), with only the
            columns token_call_rows stores, the reject reason and the two model names a label needs.
So `checked - read` is what the checks and conversions cost, `staged - checked` what keeping the rows costs, and
`written` against `staged` + `numbered` + the audit's store step (profile_audit.py's store/call_rows_*) what
writing each call once would save.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTS = ("read", "checked", "staged", "written")
# The columns `written` keeps: token_call_rows' own (runner/core/schema/012_call_costs_from_labels.sql) but its ids
# and line, the reject reason and the model names.
WRITTEN = ("reason, session_id, start_time, end_time, disconnected_at, input_tokens, cached_input_tokens, "
           "cache_creation_input_tokens, output_tokens, system_tokens, request_model, response_model")


def _leaves(record: dict, prefix: str) -> list[str]:
    """The SQL paths of a record type's leaves (`j.request.model`, ...)."""
    out: list[str] = []
    for name, typ in record.items():
        path = f'{prefix}."{name}"'
        out += _leaves(typ, path) if isinstance(typ, dict) else [path]
    return out


def _timed(con, queries: list[str], params: dict) -> dict:
    """Run `queries` in order, timed; the first value of the last one's first row as "rows"."""
    t, c = time.perf_counter(), time.process_time()
    for q in queries:
        row = con.execute(q, {k: v for k, v in params.items() if f"${k}" in q}).fetchone()
    return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "rows": row[0] if row else None}


def child(part: str, log: str, memory_limit: str) -> dict:
    """One part, in this process: the audit's connection set-up, then the part's statements, timed."""
    import duckdb

    from kvreport.runner.audit import engine, sqlfiles
    from kvreport.runner.audit.engine import AuditOptions

    tmp = tempfile.mkdtemp(prefix="kvreport-ingest-parts-")
    con = duckdb.connect(str(Path(tmp) / "audit.duckdb"))
    engine.setup(con, tmp, AuditOptions(memory_limit=memory_limit))
    sqlfiles.run_sql(con, "ingest/openai_record")
    (insert,) = sqlfiles.statements("ingest/openai_fast")
    params = {"path": log, "source": log, "compression": "none"}
    if part == "read":
        record = json.loads(con.execute("SELECT kv_openai_record()").fetchone()[0])
        counts = ", ".join(f"count({leaf})" for leaf in _leaves(record, "j"))
        return _timed(con, [f"""
            SELECT count(*), {counts}
            FROM read_json($path, format = 'newline_delimited', records = false, ignore_errors = true,
                           compression = $compression,
                           columns = {{'j': typeof(json_transform('{{}}', kv_openai_record()))}})"""], params)
    select = insert.query.split("INSERT INTO _staged BY NAME", 1)[1].strip().rstrip(";")
    if part == "checked":
        return _timed(con, [f"SELECT count(*), count(COLUMNS(*)) FROM ({select})"], params)
    if part == "written":
        written = _timed(con, [f"CREATE TABLE calls AS SELECT {WRITTEN} FROM ({select})", "SELECT count(*) FROM calls"],
                         params)
        rejects = [r[0] for r in con.execute("SELECT rowid + 1 FROM calls WHERE reason IS NOT NULL").fetchall()]
        return {**written, "rejects": rejects}
    staged = _timed(con, [insert.query], params)
    numbered = _timed(con, [s.query for s in sqlfiles.statements("ingest/number_lines")],
                      {"lines": None, "source": log, "source_name": Path(log).name})
    lines = con.execute("SELECT count(*), count(DISTINCT line), min(line), max(line) FROM _staged").fetchone()
    if lines != (lines[0], lines[0], 1, lines[0]):
        raise SystemExit(f"_staged's line numbers are not 1..{lines[0]}: {lines}")
    rejects = [r[0] for r in con.execute("SELECT line FROM _staged WHERE reason IS NOT NULL ORDER BY line").fetchall()]
    return {**staged, "rows": lines[0], "rejects": rejects, "numbered_wall_s": numbered["wall_s"],
            "numbered_cpu_s": numbered["cpu_s"]}


def _spread(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"{xs[len(xs) // 2]:.2f}" + (f" ({xs[0]:.2f}-{xs[-1]:.2f})" if len(xs) > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memory-limit", default="350MB", help="DuckDB's, as the audit's --memory-limit (default 350MB)")
    ap.add_argument("--child", choices=PARTS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, str(args.log.resolve()), args.memory_limit)))
        return
    times: dict[str, list[dict]] = {p: [] for p in PARTS}
    for run in range(args.runs):
        for part in PARTS if run % 2 == 0 else PARTS[::-1]:
            out = subprocess.run([sys.executable, __file__, str(args.log), "--memory-limit", args.memory_limit,
                                  "--child", part], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"{part} failed:\n{out.stderr[-3000:]}")
            times[part].append(json.loads(out.stdout.strip().splitlines()[-1]))
    counted = {t["rows"] for ts in times.values() for t in ts}
    if len(counted) != 1:
        raise SystemExit(f"the parts read different numbers of rows: {sorted(counted)}")
    if times["written"][0]["rejects"] != times["staged"][0]["rejects"]:
        raise SystemExit(f"`written` numbers the rejects {times['written'][0]['rejects'][:5]}, the audit's step "
                         f"{times['staged'][0]['rejects'][:5]}: the rowid is not the line")
    rows = [(p, [t["wall_s"] for t in times[p]], [t["cpu_s"] for t in times[p]]) for p in PARTS]
    rows.append(("numbered", [t["numbered_wall_s"] for t in times["staged"]],
                 [t["numbered_cpu_s"] for t in times["staged"]]))
    print(f"{args.log} ({args.log.stat().st_size / 1e6:,.0f} MB, {counted.pop():,} lines), DuckDB memory_limit {args.memory_limit}; "
          f"median (min-max) of {args.runs} alternating runs\n")
    print("| part | wall s | CPU s |\n| --- | --- | --- |")
    for part, wall, cpu in rows:
        print(f"| {part} | {_spread(wall)} | {_spread(cpu)} |")


if __name__ == "__main__":
    main()
