"""The audit's steps, in the order they run, written once, as data.

A step is one of:
  "STAGE/NAME"          the statements of runner/audit/sql/STAGE/NAME.sql (each takes the $parameters it names
                        from the audit's parameters);
  "py:NAME"             a Python step (the `hooks` given to `run`: what SQL cannot do, such as looking up prices
                        or calling the tokenizer);
  "... if PARAM"        only when the audit's parameter PARAM is true ("... if not PARAM": when it is false);
  "... per slice"       once per slice [$lo, $hi) of the call ids up to $last_rid (per-call text aggregation
                        cannot spill, so a slice bounds it); "... per PARAM": once per slice start PARAM lists.
A name may hold {param}: "ingest/{shape}" runs the reader of the file's shape (formats.SHAPES).

The stages, as runner/audit/engine.py runs them (runner/audit/distributed.py runs READ per share of the files,
SESSION_FIGURES and TIME_PARTS per partition of the sessions, AUDIT_FIGURES once):
  SETUP            settings, macros, the scratch tables (everything temporary: see SCRATCH)
  INGEST[reader]   one file into _staged (valid calls and rejects, with their line numbers)
  READ_END         --since/--until, and what was read
  SESSION_FIGURES  per-session figures (token_audit, token_bloat) and the *_parts the audit-wide ones sum
  TIME_PARTS       the leakage timeline's and TTL sweep's sums over segments
  AUDIT_FIGURES    the audit-wide tables (token_leakage, token_ttl_sweep, token_repeats, token_prices, audits)
  STORE            the calls, their labels and the rejects
Results are written into the DB's own tables once (inside the transaction that engine.begin_results opens);
everything else is scratch.
"""
from __future__ import annotations

from typing import Callable

from .sqlfiles import run_sql

# Every scratch object (table, view, macro) lives in the connection's temporary catalog; DuckDB has no
# temporary schemas, so the temp catalog's one schema is the audit's scratch schema, and drop_scratch
# (sql/setup/drop_scratch.sql) drops all of it in one place: nothing is listed by hand.
SCRATCH = "temp.main"

# The connection's settings alone (a Ray time task needs no more: runner/audit/distributed.py).
SETTINGS = ("setup/settings", "setup/memory_limit if memory_limit", "setup/threads if threads")
SETUP = (*SETTINGS, "setup/macros", "setup/parse_try if has_try", "setup/parse_valid if not has_try", "setup/staged",
         "setup/calls_and_rejects")

# Each reader, by what ingest.reader() says the file is. Every one ends with ingest/forget_lines.
INGEST = {
    # A bare API object per line (SHAPES in ingest.py): the shape's reader fills _shape, then one step makes calls.
    "shape": ("ingest/read_lines", "ingest/shape_lines", "ingest/{shape}", "ingest/calls_from_usage",
              "ingest/number_lines"),
    # OpenAI / Anthropic envelopes: parsed straight from the reader (a file the reader refuses fails before
    # any INSERT: read first when the keys must look at the lines again).
    "envelope": ("ingest/read_lines if keys", "ingest/{fmt}", "ingest/number_lines", "ingest/rekey if keys"),
    "envelope-openai": ("ingest/openai_record", "ingest/read_lines if keys", "ingest/openai", "ingest/number_lines",
                        "ingest/rekey if keys"),
    # The fast reader of a clean OpenAI envelope file (ingest.py checks it and reads its need_raw lines again
    # with "envelope-openai", numbered by $lines).
    "openai-fast": ("ingest/openai_record", "ingest/openai_fast", "ingest/number_lines"),
    "sessions-parquet": ("py:parquet_check", "ingest/sessions_format_table", "ingest/sessions_format_parquet",
                         "ingest/sessions_format"),
    "sessions-csv": ("py:csv_records", "ingest/sessions_format_table", "ingest/sessions_format_csv",
                     "ingest/sessions_format"),
    "sessions-jsonl": ("ingest/sessions_format_table", "ingest/read_lines", "ingest/sessions_format_jsonl",
                       "ingest/sessions_format"),
    "otel": ("ingest/read_lines", "ingest/otel"),
    "otel-document": ("py:plain_copy", "ingest/read_document", "ingest/otel"),
}
INGEST_END = ("ingest/forget_lines",)

READ_END = ("ingest/since_until if window", "ingest/staged_stats")

# The rates of the audit's (provider, models) keys: looked up in Python (dollars.py), one row per period and tier.
PRICE_ROWS = ("py:price_keys", "cost/price_rows", "py:insert_price_rows")

# Prompt bloat, part 1: while _staged (every record read) exists, each call's messages into _content (token ids
# with --tokenizer, and system-prompt counts for calls whose log gave none).
BLOAT_EXTRACT = ("bloat/ids_table", "py:local_content", "bloat/macros if local_content",
                 "bloat/content if local_content", "py:content_rest_slices if local_content",
                 "bloat/content_rest per rest_slices if local_content", "py:tokenize if local_content")

# Prompt bloat, part 2: from _content alone, token_bloat and the repeated instructions (_repeat_parts).
BLOAT_ANALYSE = ("py:last_rid if local_content", "bloat/pairs if local_content",
                 "py:lcp_rest_needed if local_content", "bloat/lcp_rest per slice if lcp_rest",
                 "bloat/lcp_tokens if token_ids", "bloat/lcp_tokens_none if not token_ids",
                 "bloat/breaks if local_content", "bloat/snippets per slice if local_content",
                 "bloat/per_session if local_content", "bloat/repeat_parts if local_content")

SESSION_FIGURES = (
    *BLOAT_EXTRACT,
    # prices (looked up once per model), then the calls with their costs
    *PRICE_ROWS, "cost/keyed", "cost/keyed_one_model if one_price_key", "cost/rated_calls",
    # per-session figures
    "metrics/timed_calls", "metrics/segments", "metrics/per_session", "metrics/seg_window_parts",
    *BLOAT_ANALYSE,
    # what the audit-wide figures sum
    "metrics/call_stats", "cost/price_parts", "cost/whatif_parts", "store/calls_labelled", "store/label_parts",
)

TIME_PARTS = ("metrics/leakage_timeline_parts", "metrics/ttl_sweep_parts")

# "metrics/unpriced": an audit without KV pricing drops its byte figures once everything is summed from them.
AUDIT_FIGURES = ("metrics/leakage_timeline", "metrics/ttl_sweep", "bloat/repeats if content_calls",
                 "py:count_repeats if tokenizer", "py:duration", "metrics/audit_summary", "py:start_pricing",
                 "cost/prices", "py:pricing_time", "cost/audit_cost", "metrics/unpriced if not priced",
                 "store/labels")

STORE = ("store/call_labels", "store/call_rows_one_label if one_label", "store/call_rows_by_hash if by_hash",
         "store/call_rows_by_strings if by_strings", "store/rejects")

SLICE = 100_000


def run(con, steps: tuple[str, ...], params: dict, hooks: dict[str, Callable] | None = None,
        columns: dict[str, str] | None = None) -> None:
    """Run `steps` in order on `con` with `params` (which Python steps may add to: later steps see it);
    `columns`: the column lists the statements' {placeholders} take (sqlfiles.run_sql)."""
    for step in steps:
        name, _, cond = step.partition(" if ")
        name, _, over = name.partition(" per ")
        if cond and bool(params.get(cond.removeprefix("not "))) == cond.startswith("not "):
            continue
        if name.startswith("py:"):
            (hooks or {})[name[3:]](con, params)
            continue
        name = name.format(**params)
        if not over:
            run_sql(con, name, columns, **params)
            continue
        starts = params[over] if over != "slice" else range(0, (params.get("last_rid") or 0) + 1, SLICE)
        for lo in starts:
            run_sql(con, name, columns, **dict(params, lo=lo, hi=lo + SLICE))


def drop_scratch(con) -> None:
    """Drop every scratch table, view and macro of the audit (everything in SCRATCH): the one place."""
    for (statement,) in run_sql(con, "setup/drop_scratch").fetchall():
        con.execute(statement)
