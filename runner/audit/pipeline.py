"""The audit's plan: its steps in the order they run (steps.py's kinds), and the parameters each stage runs with.

The stages, as runner/audit/engine.py runs them in one process (runner/audit/distributed.py runs READ per share
of the files, SESSION_FIGURES and TIME_PARTS per partition of the sessions, AUDIT_FIGURES and STORE once):
  SETUP            settings, macros, the scratch tables (everything temporary: see SCRATCH)
  INGEST[reader]   one file into _staged (valid calls and rejects, with their line numbers)
  READ_END         --since/--until, and what was read
  CALLS_LABELLED   each call's messages (prompt bloat), its price and its label
  STORE            the calls, their labels and the rejects
  CALLS_STORED     the calls read back from the DB's table; _staged dropped
  SESSION_SUMS     per-session figures (token_audit, token_bloat) and the *_parts the audit-wide ones sum
  TIME_PARTS       the leakage timeline's and TTL sweep's sums over segments
  AUDIT_FIGURES    the audit-wide tables (token_leakage, token_ttl_sweep, token_repeats, token_prices, audits)
Results are written into the DB's own tables once (inside the transaction BEGIN opens); the rest is scratch.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping

from . import dollars, prepare, prompt_bloat
from .sqlfiles import run_sql
from .steps import SLICE, PerSlice, Py, Sql, Statement, StepParams, negated
from .steps import run as run  # pipeline.run(con, STAGE, params): callers name the plan and its runner together

if TYPE_CHECKING:
    from .formats import Source
    from .prices_file import PriceBook
    from .tokenizer import Tokenizer

# Every scratch object (table, view, macro) lives in the connection's temporary catalog; DuckDB has no
# temporary schemas, so the temp catalog's one schema is the audit's scratch schema, and drop_scratch
# (sql/setup/drop_scratch.sql) drops all of it in one place: nothing is listed by hand.
SCRATCH = "temp.main"


# --- the parameters of each stage

@dataclass(frozen=True)
class SetupParams(StepParams):
    tmpdir: str
    memory_limit: str | None = None   # DuckDB memory_limit, e.g. "2GB"
    threads: int | None = None
    has_try: bool = True               # DuckDB has try() (1.3 on)


@dataclass(frozen=True)
class IngestParams(StepParams):
    path: str                          # the file DuckDB reads (the log, or a normalised copy)
    source: str                        # the log's label in the rows
    source_name: str
    delim: str
    max_line_size: int
    compression: str
    fmt: str = ""
    keys: bool = False                 # --session-key / --time-key given
    tmpdir: str = ""
    src: Source | None = None
    lines: list[int] | None = None     # the line numbers of a partial copy (None: the row order)
    after_rowid: int | None = None     # a partial copy's rows are those of _staged after this row
    session_keys: list[str] = field(default_factory=list)
    time_keys: list[str] = field(default_factory=list)
    has_session: bool = False
    has_time: bool = False
    time_label: str = "time"
    shape: str | None = None           # a bare API object's reader (formats.SHAPES)
    root: str | None = None
    format: str | None = None
    records: str | None = None         # a CSV's records as JSON lines (prepare.py)
    key_fields: str = "{}"             # the fast Anthropic reader's key fields, as JSON (fastread.py)


@dataclass(frozen=True)
class ReadEndParams(StepParams):
    window: bool
    since: _dt.datetime | None
    until: _dt.datetime | None


@dataclass(frozen=True)
class TimeParams(StepParams):
    buckets: int
    ttls: list[float]


@dataclass(frozen=True)
class StoreParams(StepParams):
    audit_id: str
    run_id: int | None
    one_label: bool
    by_hash: bool
    by_strings: bool


@dataclass(frozen=True)
class FigureParams(StepParams):
    """The figures' parameters (engine.figure_params), and what their Python steps find on the way."""
    audit_id: str = ""
    run_id: int | None = None
    curve: Mapping[str, float] = field(default_factory=dict)  # kv_pricing.curve(), each a parameter of its own
    tokenizer: Tokenizer | None = None
    has_tokens: bool = False
    content_calls: int = 0
    idle_timeout: float = 300.0
    t_log_end: float | None = None
    spor_max: float = 0.85
    kv_max_bytes: int = 0
    kv_max_basis: str = ""
    spor_reason: str = ""
    min_chars: int = 24
    max_rows: int = 200
    buckets: int = 120
    ttls: list[float] = field(default_factory=list)
    price_book: PriceBook | None = None
    price_rows: list[dict[str, Any]] | None = None
    n_price_keys: int | None = None
    gpu_hour_price: float | None = None
    # the audit-wide figures' (AUDIT_FIGURES)
    memory_bytes: int | None = None
    memory_source: str | None = None
    created_at: _dt.datetime | None = None
    sources: str | None = None
    format: str | None = None
    model: str | None = None
    kv_bytes_source: str | None = None
    kv_bytes_detail: str | None = None
    kv_bytes_per_token: float | None = None
    priced: bool = False
    tokenizer_name: str | None = None
    bloat_reason: str | None = None
    session_keys: str | None = None
    time_keys: str | None = None
    started: float = 0.0
    # found by the Python steps
    local_content: int = 0
    rest_slices: tuple[int, ...] = ()
    last_rid: int | None = None
    lcp_rest: bool = False
    token_ids: bool = False
    one_price_key: bool = False
    one_label: bool = False            # every call has the first call's label (dollars.price_keys)
    pricing_started: float = 0.0
    pricing_s: float | None = None
    duration_s: float | None = None

    def values(self) -> dict[str, Any]:
        out = super().values()
        out.update(out.pop("curve"))
        return out


# --- conditions (plain functions of the parameters; the docstring says why, for --explain)

def memory_limit_given(p: SetupParams) -> bool:
    """--memory-limit given"""
    return bool(p.memory_limit)


def threads_given(p: SetupParams) -> bool:
    """--threads given"""
    return bool(p.threads)


def has_try(p: SetupParams) -> bool:
    """DuckDB has try()"""
    return p.has_try


def user_keys(p: IngestParams) -> bool:
    """--session-key / --time-key given"""
    return p.keys


def window(p: ReadEndParams) -> bool:
    """--since / --until given"""
    return p.window


def local_content(p: FigureParams) -> bool:
    """calls on this connection logged their messages"""
    return bool(p.local_content)


def lcp_rest(p: FigureParams) -> bool:
    """a prefix search ran past a message's line"""
    return p.lcp_rest


def token_ids(p: FigureParams) -> bool:
    """--tokenizer gave token ids"""
    return p.token_ids


def first_label_for_all(p: FigureParams) -> bool:
    """every call has the first call's label (key, file, format, system-token source, price row)"""
    return p.one_label


def one_price_key(p: FigureParams) -> bool:
    """every call has the same price key"""
    return p.one_price_key


def content_calls(p: FigureParams) -> bool:
    """the audit's calls logged their messages"""
    return bool(p.content_calls)


def tokenizer(p: FigureParams) -> bool:
    """--tokenizer given"""
    return p.tokenizer is not None


def priced(p: FigureParams) -> bool:
    """KV is priced (--model or --kv-bytes-per-token)"""
    return p.priced


def one_label(p: StoreParams) -> bool:
    """every call has the same label"""
    return p.one_label


def by_hash(p: StoreParams) -> bool:
    """no two labels share a hash"""
    return p.by_hash


def by_strings(p: StoreParams) -> bool:
    """two labels share a hash"""
    return p.by_strings


def rest_slices(p: FigureParams) -> tuple[int, ...]:
    """the slices holding calls bloat/content.sql left"""
    return p.rest_slices


def every_slice(p: FigureParams) -> range:
    """every slice of the call ids"""
    return range(0, (p.last_rid or 0) + 1, SLICE)


# --- Python steps of this module

def duration(con, p: FigureParams) -> FigureParams:
    """the audit's time so far"""
    return replace(p, duration_s=time.perf_counter() - p.started)


def start_pricing(con, p: FigureParams) -> FigureParams:
    """the pricing's start time"""
    return replace(p, pricing_started=time.perf_counter())


def pricing_time(con, p: FigureParams) -> FigureParams:
    """the pricing's time"""
    return replace(p, pricing_s=time.perf_counter() - p.pricing_started)


# --- the plan

BEGIN = Statement("BEGIN TRANSACTION")
COMMIT = Statement("COMMIT")
RESET_ORDER = Statement("RESET preserve_insertion_order")
TRY_PROBE = Statement("SELECT try(1)")

# The connection's settings alone (a Ray time task needs no more: runner/audit/distributed.py).
SETTINGS = (Statement("SET TimeZone = 'UTC'"), Statement("SET temp_directory = $tmpdir"),
            Statement("SET memory_limit = $memory_limit", when=memory_limit_given),
            Statement("SET threads = $threads", when=threads_given))
SETUP = (*SETTINGS, Sql("setup/macros"), Sql("setup/parse_try", when=has_try),
         Sql("setup/parse_valid", when=negated(has_try)), Sql("setup/staged"), Sql("setup/calls_and_rejects"))

# Each reader, by what formats.reader() says the file is. Every one ends with INGEST_END.
INGEST = {
    # A bare API object per line (formats.SHAPES): the shape's reader fills _shape, then one step makes calls.
    "shape": (Sql("ingest/read_lines"), Sql("ingest/shape_lines"), Sql("ingest/{shape}"),
              Sql("ingest/calls_from_usage"), Sql("ingest/number_lines")),
    # The fast readers of a clean file of OpenAI objects or LiteLLM lines with the shape's default keys
    # (fastread.py checks it, and reads the lines it could not use again with "shape-lines", numbered by $lines).
    "shape-fast-openai": (Sql("ingest/openai_object_fast"), Sql("ingest/number_lines"),
                          Sql("ingest/shape_fast_need_raw")),
    "shape-fast-litellm": (Sql("ingest/litellm_fast"), Sql("ingest/number_lines"), Sql("ingest/shape_fast_need_raw")),
    "shape-fast-litellm-text": (Sql("ingest/litellm_fast_text"), Sql("ingest/number_lines"),
                                Sql("ingest/shape_fast_need_raw")),
    "shape-fast-anthropic": (Sql("ingest/anthropic_message_fast"), Sql("ingest/number_lines"),
                             Sql("ingest/shape_fast_need_raw")),
    "shape-lines": (Sql("ingest/read_lines"), Sql("ingest/shape_lines"), Sql("ingest/{shape}"),
                    Sql("ingest/calls_from_usage"), Sql("ingest/lines_of_copy"), Sql("ingest/number_lines")),
    # OpenAI / Anthropic envelopes: parsed straight from the reader (a file the reader refuses fails before
    # any INSERT: read first when the keys must look at the lines again).
    "envelope": (Sql("ingest/read_lines", when=user_keys), Sql("ingest/{fmt}"), Sql("ingest/number_lines"),
                 Sql("ingest/rekey", when=user_keys)),
    "envelope-openai": (Sql("ingest/openai_record"), Sql("ingest/read_lines", when=user_keys), Sql("ingest/openai"),
                        Sql("ingest/number_lines"), Sql("ingest/rekey", when=user_keys)),
    # The fast reader of a clean OpenAI envelope file (fastread.py checks it and reads its need_raw lines
    # again with "envelope-openai", numbered by $lines).
    "openai-fast": (Sql("ingest/openai_record"), Sql("ingest/openai_fast"), Sql("ingest/number_lines")),
    "sessions-parquet": (Py(prepare.parquet_check), Sql("ingest/sessions_format_table"),
                         Sql("ingest/sessions_format_parquet"), Sql("ingest/sessions_format")),
    "sessions-csv": (Py(prepare.csv_records), Sql("ingest/sessions_format_table"), Sql("ingest/sessions_format_csv"),
                     Sql("ingest/sessions_format")),
    "sessions-jsonl": (Sql("ingest/sessions_format_table"), Sql("ingest/read_lines"),
                       Sql("ingest/sessions_format_jsonl"), Sql("ingest/sessions_format")),
    "otel": (Sql("ingest/read_lines"), Sql("ingest/otel")),
    "otel-document": (Py(prepare.plain_copy), Sql("ingest/read_document"), Sql("ingest/otel")),
}
INGEST_END = (Statement("DROP TABLE IF EXISTS _lines"),)

READ_END = (Sql("ingest/since_until", when=window), Sql("ingest/staged_stats"))

# The rates of the audit's (provider, models) keys: looked up in Python (dollars.py), one row per period and tier.
PRICE_ROWS = (Py(dollars.price_keys), Sql("cost/price_rows"), Py(dollars.insert_price_rows))

# Prompt bloat, part 1: while _staged (every record read) exists, each call's messages into _content (token ids
# with --tokenizer, and system-prompt counts for calls whose log gave none).
BLOAT_EXTRACT = (Sql("bloat/ids_table"), Py(prompt_bloat.local_content), Sql("bloat/macros", when=local_content),
                 Sql("bloat/content", when=local_content), Py(prompt_bloat.content_rest_slices, when=local_content),
                 PerSlice("bloat/content_rest", rest_slices, when=local_content),
                 Py(prompt_bloat.tokenize, when=local_content))

# Prompt bloat, part 2: from _content alone, token_bloat and the repeated instructions (_repeat_parts).
BLOAT_ANALYSE = (Py(prompt_bloat.last_rid, when=local_content), Sql("bloat/pairs", when=local_content),
                 Py(prompt_bloat.lcp_rest_needed, when=local_content),
                 PerSlice("bloat/lcp_rest", every_slice, when=lcp_rest),
                 Sql("bloat/lcp_tokens", when=token_ids), Sql("bloat/lcp_tokens_none", when=negated(token_ids)),
                 Sql("bloat/breaks", when=local_content), PerSlice("bloat/snippets", every_slice, when=local_content),
                 Sql("bloat/per_session", when=local_content), Sql("bloat/repeat_parts", when=local_content))

# Each call with its price row's rates and its costs (_calls_rated: cost/rated_calls.sql), prices looked up once
# per model.
PRICED_CALLS = (*PRICE_ROWS, Sql("cost/keyed"), Sql("cost/keyed_one_model", when=one_price_key),
                Sql("cost/rated_calls"))

# The per-session figures and the sums the audit-wide figures are made of, from the priced calls.
SESSION_SUMS = (
    Sql("metrics/timed_calls"), Sql("metrics/segments"), Sql("metrics/per_session"), Sql("metrics/seg_window_parts"),
    *BLOAT_ANALYSE,
    Sql("metrics/call_stats"), Sql("cost/price_parts"), Sql("cost/whatif_parts"),
)

# The distinct labels of the calls (what the store numbers).
LABEL_PARTS = (Sql("store/calls_labelled"), Sql("store/label_parts", when=negated(first_label_for_all)),
               Sql("store/label_parts_first", when=first_label_for_all))

# A share of the sessions (runner/audit/distributed.py's reduce task): every per-session figure, then the label
# parts; its calls are stored by the driver.
SESSION_FIGURES = (*BLOAT_EXTRACT, *PRICED_CALLS, *SESSION_SUMS, *LABEL_PARTS)

# One process (engine.run_audit) stores the calls as soon as they are priced and labelled (CALLS_LABELLED, then
# STORE), and reads them back from the DB's table (CALLS_STORED) for SESSION_SUMS: nothing reads _staged after
# that, so its blocks are not read back and written out again by every pass over the calls.
CALLS_LABELLED = (*BLOAT_EXTRACT, *PRICED_CALLS, *LABEL_PARTS, Sql("store/labels"))
CALLS_STORED = (Sql("store/calls_stored"),)

TIME_PARTS = (Sql("metrics/leakage_timeline_parts"), Sql("metrics/ttl_sweep_parts"))

# "metrics/unpriced": an audit without KV pricing drops its byte figures once everything is summed from them.
AUDIT_FIGURES = (Sql("metrics/leakage_timeline"), Sql("metrics/ttl_sweep"), Sql("bloat/repeats", when=content_calls),
                 Py(prompt_bloat.count_repeats, when=tokenizer), Py(duration), Sql("metrics/audit_summary"),
                 Py(start_pricing), Sql("cost/prices"), Py(pricing_time), Sql("cost/audit_cost"),
                 Sql("metrics/unpriced", when=negated(priced)), Sql("store/labels"))

STORE = (Sql("store/call_labels"), Sql("store/call_rows_one_label", when=one_label),
         Sql("store/call_rows_by_hash", when=by_hash), Sql("store/call_rows_by_strings", when=by_strings),
         Sql("store/rejects"))

# Every plan, by the name --explain gives it.
STAGES = {"setup": SETUP, "read_end": READ_END, "session_figures": SESSION_FIGURES, "calls_labelled": CALLS_LABELLED,
          "calls_stored": CALLS_STORED, "session_sums": SESSION_SUMS, "time_parts": TIME_PARTS,
          "audit_figures": AUDIT_FIGURES, "store": STORE,
          **{f"ingest {name}": (*steps, *INGEST_END) for name, steps in INGEST.items()}}


def drop_scratch(con) -> None:
    """Drop every scratch table, view and macro of the audit (everything in SCRATCH): the one place."""
    for (statement,) in run_sql(con, "setup/drop_scratch").fetchall():
        con.execute(statement)
