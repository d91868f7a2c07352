"""One token audit, start to finish, on a DuckDB connection.

Everything is computed in TEMPORARY tables named like the DB's own (temp tables shadow them), with no
transaction open, so a file that fails half-way costs nothing. Only then does `persist` copy the results
into the DB in ONE transaction: an audit is stored whole or not at all. The demo audit inside
`kvreport run` uses the same code on an in-memory connection and hands its rows to the run's store.
"""
from __future__ import annotations

import datetime as _dt
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ..core.errors import UserError
from ..core.store import rollback_quietly
from . import cost, prompt_bloat
from .ingest import Keys, Source, describe_sources, detect, ingest
from .pricing import Memory, Pricing
from .sqlfiles import run_sql
from .tokenizer import Tokenizer

DEFAULT_TTLS_S = (60.0, 300.0, 900.0, 1800.0, 3600.0)
_SCRATCH = ("_staged", "_lines", "_sess_raw", "_seg", "_call_labels", "_staged_stats", "_call_stats",
            "_seg_window_parts", "_seg_window", "_timeline_parts", "_ttl_parts", "_ttl_evicted", "_label_parts")
# The audit tables of the DB (their DDL is the store's: runner/core/schema/*.sql), in the order they are written.
TABLES = ("audits", "token_call_labels", "token_call_rows", "token_rejects", "token_audit", "token_leakage",
          "token_ttl_sweep", "token_bloat", "token_repeats", "token_prices")
# Views over _staged, not copies: this audit's calls and rejects (sql/move.sql), the calls with their costs and
# label (sql/call_labels.sql).
_VIEWS = ("token_calls", "token_rejects", "_calls_labelled", "_timed_calls")
# Written from those views when the audit is stored, so they have no TEMP twins (the DB's token_calls view
# reads the first two, and a TEMP table of the same name would shadow the DB's own).
_FROM_VIEWS = ("token_call_labels", "token_call_rows", "token_rejects")
# token_call_rows' own columns (the rest of token_calls is its label's): runner/core/schema/006_narrow_calls.sql.
ROW_COLUMNS = ("line", "session_id", "start_time", "end_time", "disconnected_at", "input_tokens",
                "cached_input_tokens", "cache_creation_input_tokens", "output_tokens", "system_tokens",
                "input_cost_usd", "cache_read_cost_usd", "cache_write_cost_usd", "output_cost_usd", "cost_usd")
_ANY_ORDER = ("token_call_rows", "token_audit")  # written in any order (see persist)
LABEL_COLUMNS = ("source", "format", "provider_name", "request_model", "response_model", "system_tokens_source",
                  "price_source", "price_snapshot_date")


class NothingValid(UserError):
    """Not one record could be used: the audit stores nothing and exits non-zero."""
    exit_code = 1


class StrictRejects(UserError):
    """--strict and some records were rejected: nothing stored, non-zero exit."""
    exit_code = 1


@dataclass
class AuditOptions:
    fmt: str = "auto"
    idle_timeout_s: float = 300.0   # the providers' default prompt-cache lifetime is 5 minutes
    spor_max: float = 0.85          # the article's guardrails
    kv_max_mb: float = 15.0         # MB = 10^6 bytes
    ttls_s: tuple[float, ...] = DEFAULT_TTLS_S
    buckets: int = 120
    memory_limit: str | None = None  # DuckDB memory_limit, e.g. "2GB"
    # Scratch folder (spilled blocks, normalised copies). It must outlive everything the connection does
    # with the audit's temp tables, `persist` included: DuckDB may have spilled them there. None: a folder
    # of run_audit's own, removed when it returns (fine where nothing is persisted from this connection).
    workdir: str | None = None
    since: _dt.datetime | None = None  # --since / --until: only calls in [since, until) (UTC) are audited
    until: _dt.datetime | None = None
    # Progress: (i, n, file, None, None) as file i of n starts, (i, n, file, lines, seconds) when it is read.
    on_file: Callable[[int, int, Source, int | None, float | None], None] | None = None
    keys: Keys = Keys()             # --session-key / --time-key (none: each format's own fields)
    threads: int | None = None
    min_repeat_chars: int = 24
    max_repeat_rows: int = 200
    price_book: cost.PriceBook | None = None  # None: genai-prices' bundled snapshot, no overrides
    gpu_hour_price: float | None = None      # USD per GPU-hour: idle KV memory in dollars

    @property
    def kv_max_bytes(self) -> int:
        return int(self.kv_max_mb * 1_000_000)


@dataclass
class AuditResult:
    audit_id: str
    summary: dict                   # the audits row
    sources: list[Source]
    rejects: list[dict] = field(default_factory=list)  # the first few, for the command's output
    # How each call finds its label when stored: "one" (every call has label 1, nothing to look up), "hash"
    # (by label_hash), "strings" (two labels share a hash, so by the strings themselves)
    label_lookup: str = "hash"
    unnamed_calls: int = 0          # calls that named no session (each is its own)


def setup(con, tmpdir: str, opts: AuditOptions) -> None:
    """Ready `con` for an audit: settings, the TEMP twins of the audit tables, the macros, an empty _staged."""
    con.execute("SET TimeZone = 'UTC'")  # naive timestamps are UTC; offsets in logs are converted
    con.execute("SET temp_directory = ?", [tmpdir])  # where DuckDB spills when over memory_limit
    if opts.memory_limit:
        con.execute("SET memory_limit = ?", [opts.memory_limit])
    if opts.threads:
        con.execute(f"SET threads = {int(opts.threads)}")
    catalog = _catalog(con)
    for name in TABLES:  # the audit works in TEMP twins of the DB's own tables (same columns, no rows)
        if name not in _FROM_VIEWS:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {catalog}.main.{name} LIMIT 0")
    run_sql(con, "macros")
    run_sql(con, "parse_try" if _has_try(con) else "parse_valid")
    run_sql(con, "staged")
    run_sql(con, "move")


def _catalog(con) -> str:
    """The DB file's catalog, quoted (TEMP tables of the same names shadow its tables)."""
    db = con.execute("SELECT current_database()").fetchone()[0]
    return '"' + db.replace('"', '""') + '"'


def _n_staged(con) -> int:
    return con.execute("SELECT count(*) FROM _staged").fetchone()[0]


def _has_try(con) -> bool:
    try:
        con.execute("SELECT try(1)").fetchall()
        return True
    except Exception:  # noqa: BLE001 - DuckDB before 1.3
        return False


def cleanup(con) -> None:
    cost.cleanup(con)
    prompt_bloat.cleanup(con)
    for name in _VIEWS:
        con.execute(f"DROP VIEW IF EXISTS temp.main.{name}")
    for name in [t for t in TABLES if t not in _FROM_VIEWS] + list(_SCRATCH):
        con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")


def spor_reason(tok: Tokenizer | None, content_calls: int) -> str:
    """Why a session has no SPOR when none of its calls logged a system-token count (`content_calls`: the
    whole audit's calls with logged messages)."""
    if tok is None and content_calls:
        return "no system-token counts in the log, and no --tokenizer to count the logged system prompts"
    if tok is None:
        return "no system-token counts in the log and no message content (with --tokenizer) to count them from"
    return "no system-token counts in the log and no logged message content for --tokenizer to count"


# --- the phases. One process runs them all on one connection (run_audit); runner/audit/distributed.py runs
# read_logs per share of the files, session_figures and time_parts per partition of the sessions, and
# audit_figures once, on the shares' *_parts tables (sums, extremes, firsts: each phase's SQL says which).

def read_logs(con, sources: list[Source], tmpdir: str, opts: AuditOptions) -> dict:
    """Phase 1: every record of `sources` into _staged (valid or with its reject reason), --since/--until
    applied, and _staged_stats (staged_stats.sql), returned as a dict."""
    for i, src in enumerate(sources, 1):
        t_file, rows_before = time.perf_counter(), _n_staged(con)
        if opts.on_file:
            opts.on_file(i, len(sources), src, None, None)
        ingest(con, src, tmpdir, opts.keys)
        if opts.on_file:
            opts.on_file(i, len(sources), src, _n_staged(con) - rows_before, time.perf_counter() - t_file)
    if opts.since or opts.until:
        run_sql(con, "window", since=opts.since, until=opts.until)
    run_sql(con, "staged_stats")
    return _row(con, "SELECT * FROM _staged_stats")


def _row(con, sql: str) -> dict:
    cur = con.execute(sql)
    return dict(zip([d[0] for d in cur.description], cur.fetchone()))


def first_rejects(con, limit: int = 20) -> list[dict]:
    """The first rejects (by file and line) of token_rejects, for the command's output."""
    return [dict(source=r[0], line=r[1], reason=r[2]) for r in con.execute(
        "SELECT source, line, reason FROM temp.main.token_rejects ORDER BY source, line LIMIT ?", [limit]).fetchall()]


def check_records(paths: list, n_calls: int, n_rejects: int, rejects: list[dict], strict: bool) -> None:
    """Stop the audit, storing nothing, when no record was valid or (`strict`) any was rejected."""
    if n_calls == 0:
        shown = "; ".join(f"{r['source']}:{r['line']}: {r['reason']}" for r in rejects[:5])
        raise NothingValid(f"no valid records in {', '.join(str(p) for p in paths)}"
                           + (f" ({n_rejects} rejected, e.g. {shown})" if n_rejects else " (no records)"))
    if strict and n_rejects:
        shown = "\n  ".join(f"{r['source']}:{r['line']}: {r['reason']}" for r in rejects[:10])
        raise StrictRejects(f"--strict: {n_rejects} record(s) rejected, nothing stored:\n  {shown}")


@dataclass
class Figures:
    """What the per-session phases need to know of the whole audit, besides their own calls."""
    ids: dict                      # audit_id, run_id
    curve: dict                    # pricing.curve(): the KV bytes of a session at each length (SQL parameters)
    content_calls: int             # the audit's valid calls with logged messages
    tokenizer: Tokenizer | None = None
    price_rows: list[tuple] | None = None  # cost.price_table's rows for the whole audit (None: these calls')
    n_price_keys: int | None = None
    t_log_end: float | None = None  # the audit's last activity, epoch s (`log_end`; None: these calls' own)


def session_figures(con, opts: AuditOptions, fig: Figures) -> None:
    """Phase 2, from _staged: every per-session figure (token_audit, token_bloat, _seg and the costs) and the
    *_parts tables the audit-wide figures are summed from (_call_stats, _seg_window_parts, _price_parts,
    _whatif_parts, _label_parts, _repeat_parts). Needs only the calls of whole sessions."""
    local_content = prompt_bloat.extract(con, fig.tokenizer)
    cost.prepare(con, opts.price_book, rows=fig.price_rows, n_keys=fig.n_price_keys)
    ids = fig.ids
    run_sql(con, "timed_calls")
    run_sql(con, "segments", **fig.curve, idle_timeout=float(opts.idle_timeout_s), t_log_end=fig.t_log_end)
    run_sql(con, "sessions", **ids, **fig.curve, spor_reason=spor_reason(fig.tokenizer, fig.content_calls),
            spor_max=opts.spor_max, kv_max_bytes=opts.kv_max_bytes)
    run_sql(con, "seg_window_parts")
    prompt_bloat.analyse(con, ids, fig.tokenizer, local_content, min_repeat_chars=opts.min_repeat_chars,
                         max_repeat_rows=opts.max_repeat_rows)
    run_sql(con, "call_stats")
    run_sql(con, "cost_price_parts")
    run_sql(con, "cost_whatif_parts")
    run_sql(con, "calls_labelled")
    run_sql(con, "call_labels")


def log_end(con) -> float | None:
    """The last activity or disconnect of the calls on `con` (epoch s), None where none has a time."""
    run_sql(con, "timed_calls")
    return con.execute("SELECT t_log_end FROM kv_log_end()").fetchone()[0]


def time_parts(con, opts: AuditOptions) -> None:
    """Phase 3, from _seg and the whole audit's _seg_window: the leakage timeline's and the TTL sweep's sums
    (_timeline_parts, _ttl_parts, _ttl_evicted)."""
    run_sql(con, "timeline_parts", buckets=opts.buckets)
    run_sql(con, "ttl_parts", buckets=opts.buckets, ttls=[float(t) for t in opts.ttls_s])


def audit_figures(con, opts: AuditOptions, fig: Figures, *, sources: list[Source], model: str, pricing: Pricing,
                  memory: Memory, started: float) -> dict:
    """Phase 4, from the *_parts tables and token_audit / token_bloat: the audit-wide tables (token_leakage,
    token_ttl_sweep, token_repeats, token_prices, audits, _call_labels); returns the audits row."""
    ids, bpt, tok = fig.ids, float(fig.curve["bytes_per_token"]), fig.tokenizer
    run_sql(con, "timeline", **ids, buckets=opts.buckets)
    run_sql(con, "ttl", **ids, buckets=opts.buckets, ttls=[float(t) for t in opts.ttls_s],
            memory_bytes=memory.bytes, memory_source=memory.source)
    prompt_bloat.repeats(con, ids, tok, fig.content_calls, max_repeat_rows=opts.max_repeat_rows)
    sources_text, fmt_text = describe_sources(sources)
    run_sql(con, "summary", **ids, created_at=_dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None),
            sources=sources_text, format=fmt_text, model=model, bytes_per_token=bpt,
            kv_bytes_source=pricing.source, kv_bytes_detail=pricing.detail,
            spor_reason=spor_reason(tok, fig.content_calls), idle_timeout=float(opts.idle_timeout_s),
            memory_bytes=memory.bytes, memory_source=memory.source, tokenizer=tok.name if tok else None,
            spor_max=opts.spor_max, kv_max_bytes=opts.kv_max_bytes, content_calls=fig.content_calls,
            bloat_reason=prompt_bloat.reason(tok, fig.content_calls), duration_s=time.perf_counter() - started,
            session_keys=" | ".join(opts.keys.session) or None, time_keys=" | ".join(opts.keys.time) or None)
    cost.price_calls(con, **ids, gpu_hour_price=opts.gpu_hour_price)
    run_sql(con, "call_label_ids")
    return _row(con, "SELECT * FROM temp.main.audits")


def detect_all(con, paths: list[str | Path], fmt: str, origins: dict[Path, str] | None = None) -> list[Source]:
    """Every file's Source, checked before any is read: a bad path fails fast, with nothing written.
    `origins`: the s3:// URL of each file that is a copy of one (remote.py)."""
    origins = origins or {}
    return [replace(detect(con, Path(p), fmt), origin=origins.get(Path(p))) for p in paths]


def run_audit(con, paths: list[str | Path], opts: AuditOptions, *, audit_id: str, run_id: int | None,
              model: str, pricing: Pricing, memory: Memory, tokenizer: Tokenizer | None = None,
              strict: bool = False, origins: dict[Path, str] | None = None) -> AuditResult:
    """Read `paths`, compute every audit table in temp tables on `con`. Raises (and leaves nothing
    behind but scratch temp tables, which `cleanup` drops) when nothing valid was read or, with
    `strict`, when anything was rejected."""
    started = time.perf_counter()
    tmpdir = opts.workdir or tempfile.mkdtemp(prefix="kvreport-audit-")
    try:
        setup(con, tmpdir, opts)
        sources = detect_all(con, paths, opts.fmt, origins)
        counts = read_logs(con, sources, tmpdir, opts)
        rejects = first_rejects(con)
        check_records(paths, counts["n_calls"], counts["n_rejects"], rejects, strict)
        fig = Figures(dict(audit_id=audit_id, run_id=run_id), pricing.curve(),
                      counts["content_calls"], tokenizer)
        session_figures(con, opts, fig)
        run_sql(con, "seg_window")  # one share: the whole audit's span is its own
        time_parts(con, opts)
        summary = audit_figures(con, opts, fig, sources=sources, model=model, pricing=pricing, memory=memory,
                                started=started)
        return AuditResult(audit_id, summary, sources, rejects, label_lookup=label_lookup(con),
                           unnamed_calls=unnamed_calls(con))
    finally:
        if not opts.workdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def unnamed_calls(con) -> int:
    return int(con.execute("SELECT coalesce(sum(n_unnamed), 0) FROM _call_stats").fetchone()[0])


def label_lookup(con) -> str:
    if con.execute("SELECT count(*) FROM _call_labels").fetchone()[0] == 1:
        return "one"
    return "hash" if labels_hash_apart(con) else "strings"


def labels_hash_apart(con) -> bool:
    """True when no two of this audit's call labels share a label_hash (so a call finds its label by it)."""
    labels, hashes = con.execute("SELECT count(*), count(DISTINCT label_hash) FROM _call_labels").fetchone()
    return labels == hashes


def _select(name: str, result: AuditResult, ordered: bool = False) -> str:
    """SELECT of one audit table, with the audit's ids as the parameters $audit_id and $run_id. `ordered`:
    the calls in file order too (a big audit writes them in any order, each with its line)."""
    ids = "CAST($audit_id AS VARCHAR) AS audit_id, CAST($run_id AS INTEGER) AS run_id"
    if name == "token_call_labels":
        return f"SELECT {ids}, label_id, {', '.join(LABEL_COLUMNS)} FROM _call_labels ORDER BY label_id"
    if name == "token_call_rows":
        columns = ", ".join("c." + c for c in ROW_COLUMNS)
        if result.label_lookup == "one":  # one big log of one model, the common case: no hash, no join
            return (f"SELECT {ids}, 1 AS label_id, {columns} FROM _calls_priced c"
                    + (" ORDER BY c.line" if ordered else ""))
        on = ("l.label_hash = c.label_hash" if result.label_lookup == "hash" else
              " AND ".join(f"l.{c} IS NOT DISTINCT FROM c.{c}" for c in LABEL_COLUMNS))
        return (f"SELECT {ids}, l.label_id, {columns} FROM _calls_labelled c JOIN _call_labels l ON {on}"
                + (" ORDER BY l.source, c.line" if ordered else ""))
    if name == "token_rejects":
        return f"SELECT * REPLACE ({ids}) FROM temp.main.token_rejects"
    return f"SELECT * FROM temp.main.{name}"


def _params(sql: str, ids: dict) -> dict | None:
    return {k: v for k, v in ids.items() if f"${k}" in sql} or None


def persist(con, result: AuditResult) -> None:
    """Copy the audit's temp tables into the DB, all in one transaction."""
    catalog = _catalog(con)
    ids = {"audit_id": result.audit_id, "run_id": result.summary["run_id"]}
    con.execute("BEGIN TRANSACTION")
    try:
        for name in TABLES:
            sql = _select(name, result)
            # The calls and the sessions are the big tables, and each row carries its key (line, session):
            # written in parallel, in any order (preserving the order costs a third of the time and memory;
            # every reader sorts). The other tables keep the order their SQL gave them.
            con.execute(f"SET preserve_insertion_order = {'false' if name in _ANY_ORDER else 'true'}")
            con.execute(f"INSERT INTO {catalog}.main.{name} BY NAME {sql}", _params(sql, ids))
        con.execute("COMMIT")
    except BaseException:
        rollback_quietly(con)  # a failed COMMIT (disk full) ended the transaction: its error is the one to show
        raise
    finally:
        con.execute("RESET preserve_insertion_order")


def fetch(con, result: AuditResult) -> dict[str, list[dict]]:
    """The audit's rows per table (for an experiment's Result)."""
    ids = {"audit_id": result.audit_id, "run_id": result.summary["run_id"]}
    out = {}
    for name in TABLES:
        sql = _select(name, result, ordered=True)
        cur = con.execute(sql, _params(sql, ids))
        cols = [d[0] for d in cur.description]
        out[name] = [dict(zip(cols, row)) for row in cur.fetchall()]
    return out


def next_audit_id(con) -> str:
    """audit-N for standalone audits, N one more than any stored."""
    n = con.execute("SELECT count(*) FROM audits WHERE audit_id LIKE 'audit-%'").fetchone()[0]
    while con.execute("SELECT count(*) FROM audits WHERE audit_id = ?", [f"audit-{n + 1}"]).fetchone()[0]:
        n += 1
    return f"audit-{n + 1}"
