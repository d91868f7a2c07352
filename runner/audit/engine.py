"""One token audit, start to finish, on a DuckDB connection; the steps and their order are pipeline.py's.

The logs are read into scratch tables (pipeline.SCRATCH) with no transaction open, so a file that fails
half-way costs nothing. Then `begin_results` opens ONE transaction, every figure is written into its DB table
once (each row carries the audit's id; the readers filter on it), and `persist` commits: an audit is stored
whole or not at all. One process stores the calls and rejects in that transaction as soon as the calls are
priced and labelled, and computes the per-session figures from the stored calls (stored_session_figures);
Ray's driver stores them in `persist`. The demo audit inside `kvreport run` uses the same code
on an in-memory connection and hands its rows to the run's store (`fetch`).
"""
from __future__ import annotations

import datetime as _dt
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import duckdb

from ..core.errors import UserError
from ..core.connections import rollback_quietly
from ..core.untrusted import quoted
from . import pipeline, prompt_bloat
from .formats import Keys, Source, describe_sources, detect
from .guardrails import ARTICLE_BASIS, ARTICLE_KV_MAX_MB
from .ingest import ingest
from .kv_pricing import Memory, Pricing
from .prices_file import PriceBook
from .steps import Step
from .sqlfiles import rows, run_sql, the_row, value
from .tokenizer import Tokenizer

DEFAULT_TTLS_S = (60.0, 300.0, 900.0, 1800.0, 3600.0)
# The audit tables of the DB (their DDL is the store's: runner/core/schema/*.sql), in the order they are written.
TABLES = ("audits", "token_call_labels", "token_call_rows", "token_rejects", "token_audit", "token_leakage",
          "token_ttl_sweep", "token_bloat", "token_repeats", "token_prices")


class NothingValid(UserError):
    """Not one record could be used: the audit stores nothing and exits non-zero."""
    exit_code = 1


class StrictRejects(UserError):
    """--strict and some records were rejected: nothing stored, non-zero exit."""
    exit_code = 1


class CallsNotStored(Exception):
    """Writing the calls into the DB failed (a full disk, a read-only file); `cause` is DuckDB's or the OS's
    error. The caller names its DB file (api.py), as it does when the final COMMIT fails."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


@dataclass
class AuditOptions:
    fmt: str = "auto"
    idle_timeout_s: float = 300.0   # the providers' default prompt-cache lifetime is 5 minutes
    spor_max: float = 0.85          # the article's guardrails
    kv_max_mb: float = ARTICLE_KV_MAX_MB  # MB = 10^6 bytes; the command's default is guardrails.kv_limit's
    kv_max_basis: str | None = None  # what kv_max_mb is, in words (None: a fixed figure, named as such)
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
    price_book: PriceBook | None = None  # None: genai-prices' bundled snapshot, no overrides
    gpu_hour_price: float | None = None      # USD per GPU-hour: idle KV memory in dollars
    fast_read: bool = True          # let clean files take the fast reader (fastread.py); False: line-exact

    @property
    def kv_max_bytes(self) -> int:
        return int(self.kv_max_mb * 1_000_000)

    @property
    def kv_limit_basis(self) -> str:
        if self.kv_max_basis:
            return self.kv_max_basis
        if self.kv_max_mb == ARTICLE_KV_MAX_MB:
            return ARTICLE_BASIS
        return "a fixed figure"


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
    readers: dict[str, str] = field(default_factory=dict)  # each file's reader (ingest.ingest's answer)
    # True: the calls, their labels and the rejects are in the DB's tables already (run_audit stores them before
    # the per-session figures), so `persist` only commits
    calls_stored: bool = False


def setup(con, tmpdir: str, opts: AuditOptions, steps: tuple[Step, ...] = pipeline.SETUP) -> None:
    """Ready `con` for an audit: settings, the macros, an empty _staged (pipeline.SETUP; or only `steps`)."""
    pipeline.run(con, steps, pipeline.SetupParams(tmpdir=tmpdir, memory_limit=opts.memory_limit,
                                                  threads=int(opts.threads) if opts.threads else None,
                                                  has_try=_has_try(con)))


def _has_try(con) -> bool:
    try:
        pipeline.TRY_PROBE.run(con).fetchall()
        return True
    except Exception:  # noqa: BLE001 - DuckDB before 1.3
        return False


def begin_results(con) -> None:
    """Open the one transaction the audit's figures are written in (`persist` commits it)."""
    pipeline.BEGIN.run(con)


def cleanup(con) -> None:
    """Undo an audit that was not stored (its open transaction, if any) and drop all its scratch state."""
    rollback_quietly(con)
    pipeline.drop_scratch(con)


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

def read_logs(con, sources: list[Source], tmpdir: str, opts: AuditOptions,
              readers: dict[str, str] | None = None) -> dict:
    """Phase 1: every record of `sources` into _staged (valid or with its reject reason), --since/--until
    applied, and _staged_stats (ingest/staged_stats.sql), returned as a dict. `readers` gets which reader read
    each file."""
    for i, src in enumerate(sources, 1):
        t_file, rows_before = time.perf_counter(), value(con, "ingest/staged_rows")
        if opts.on_file:
            opts.on_file(i, len(sources), src, None, None)
        how = ingest(con, src, tmpdir, opts.keys, fast=opts.fast_read)
        if readers is not None:
            readers[src.label] = how
        if opts.on_file:
            opts.on_file(i, len(sources), src, value(con, "ingest/staged_rows") - rows_before,
                         time.perf_counter() - t_file)
    pipeline.run(con, pipeline.READ_END, pipeline.ReadEndParams(window=bool(opts.since or opts.until),
                                                                since=opts.since, until=opts.until))
    return the_row(con, "ingest/staged_stats")


def first_rejects(con, limit: int = 20) -> list[dict]:
    """The first rejects (by file and line), for the command's output."""
    return rows(con, "store/first_rejects", limit=limit)


def check_records(paths: Sequence, n_calls: int, n_rejects: int, rejects: list[dict], strict: bool) -> None:
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
    curve: dict                    # kv_pricing.curve(): the KV bytes of a session at each length (SQL parameters)
    content_calls: int             # the audit's valid calls with logged messages
    tokenizer: Tokenizer | None = None
    price_rows: list[dict] | None = None  # dollars.price_table's rows for the whole audit (None: these calls')
    n_price_keys: int | None = None
    t_log_end: float | None = None  # the audit's last activity, epoch s (`log_end`; None: these calls' own)


def figure_params(opts: AuditOptions, fig: Figures, **more) -> pipeline.FigureParams:
    """The audit's parameters, as the figures' steps of pipeline.py see them (each statement takes those it
    names)."""
    return pipeline.FigureParams(
        **fig.ids, curve=fig.curve, tokenizer=fig.tokenizer, has_tokens=fig.tokenizer is not None,
        content_calls=fig.content_calls, idle_timeout=float(opts.idle_timeout_s), t_log_end=fig.t_log_end,
        spor_max=opts.spor_max, kv_max_bytes=opts.kv_max_bytes, kv_max_basis=opts.kv_limit_basis,
        spor_reason=spor_reason(fig.tokenizer, fig.content_calls), min_chars=opts.min_repeat_chars,
        max_rows=opts.max_repeat_rows, buckets=opts.buckets, ttls=[float(t) for t in opts.ttls_s],
        price_book=opts.price_book, price_rows=fig.price_rows, n_price_keys=fig.n_price_keys,
        gpu_hour_price=opts.gpu_hour_price, **more)


def session_figures(con, opts: AuditOptions, fig: Figures) -> None:
    """Phase 2, from the calls (_calls over _staged): every per-session figure (token_audit, token_bloat, _seg
    and the costs) and the *_parts tables the audit-wide figures are summed from (pipeline.SESSION_FIGURES).
    Needs only the calls of whole sessions."""
    pipeline.run(con, pipeline.SESSION_FIGURES, figure_params(opts, fig), store_columns(con))


def stored_session_figures(con, opts: AuditOptions, fig: Figures) -> str:
    """Phase 2 in one process: the calls priced, labelled and stored with the rejects (pipeline.CALLS_LABELLED,
    pipeline.STORE), then read back from the DB's tables for every per-session figure (pipeline.CALLS_STORED,
    pipeline.SESSION_SUMS) and the label parts. Returns how each call found its label (label_lookup); raises
    CallsNotStored when the calls cannot be written."""
    columns = store_columns(con)
    params = pipeline.run(con, pipeline.CALLS_LABELLED, figure_params(opts, fig), columns)
    lookup = label_lookup(con)
    try:
        _store_calls(con, params.audit_id, params.run_id, lookup, columns)
    except duckdb.InterruptException:
        raise
    except (duckdb.Error, OSError) as exc:
        raise CallsNotStored(exc) from exc
    pipeline.run(con, pipeline.CALLS_STORED, params)
    pipeline.run(con, pipeline.SESSION_SUMS, params, columns)
    return lookup


def log_end(con) -> float | None:
    """The last activity or disconnect of the calls on `con` (epoch s), None where none has a time."""
    run_sql(con, "metrics/timed_calls")
    return value(con, "metrics/log_end")


def time_parts(con, opts: AuditOptions) -> None:
    """Phase 3, from _seg and the whole audit's _seg_window: the leakage timeline's and the TTL sweep's sums
    (_timeline_parts, _ttl_parts, _ttl_evicted)."""
    pipeline.run(con, pipeline.TIME_PARTS, pipeline.TimeParams(buckets=opts.buckets,
                                                               ttls=[float(t) for t in opts.ttls_s]))


def audit_figures(con, opts: AuditOptions, fig: Figures, *, sources: list[Source], model: str, pricing: Pricing,
                  memory: Memory, started: float) -> dict:
    """Phase 4, from the *_parts tables and token_audit / token_bloat: the audit-wide tables (token_leakage,
    token_ttl_sweep, token_repeats, token_prices, audits, _call_labels); returns the audits row."""
    tok = fig.tokenizer
    sources_text, fmt_text = describe_sources(sources)
    params = figure_params(opts, fig, memory_bytes=memory.bytes, memory_source=memory.source,
                     created_at=_dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None), sources=sources_text,
                     format=fmt_text, model=model, kv_bytes_source=pricing.source, kv_bytes_detail=pricing.detail,
                     kv_bytes_per_token=pricing.stored_bytes_per_token, priced=pricing.priced,
                     tokenizer_name=tok.name if tok else None,
                     bloat_reason=prompt_bloat.reason(tok, fig.content_calls),
                     session_keys=" | ".join(opts.keys.session) or None,
                     time_keys=" | ".join(opts.keys.time) or None, started=started)
    pipeline.run(con, pipeline.AUDIT_FIGURES, params, store_columns(con))
    return the_row(con, "metrics/audit_row", audit_id=fig.ids["audit_id"])


def detect_all(con, paths: Sequence[str | Path], fmt: str, origins: dict[Path, str] | None = None) -> list[Source]:
    """Every file's Source, checked before any is read: a bad path fails fast, with nothing written.
    `origins`: the s3:// URL of each file that is a copy of one (remote.py)."""
    origins = origins or {}
    return [replace(detect(con, Path(p), fmt), origin=origins.get(Path(p))) for p in paths]


def run_audit(con, paths: Sequence[str | Path], opts: AuditOptions, *, audit_id: str, run_id: int | None,
              model: str, pricing: Pricing, memory: Memory, tokenizer: Tokenizer | None = None,
              strict: bool = False, origins: dict[Path, str] | None = None) -> AuditResult:
    """Read `paths` and write every audit figure into the DB's tables on `con`, in the transaction
    `begin_results` opens (`persist` stores the calls and commits). Raises (and leaves nothing behind but
    scratch state and that transaction, which `cleanup` drops) when nothing valid was read or, with `strict`,
    when anything was rejected."""
    started = time.perf_counter()
    tmpdir = opts.workdir or tempfile.mkdtemp(prefix="kvreport-audit-")
    try:
        setup(con, tmpdir, opts)
        sources = detect_all(con, paths, opts.fmt, origins)
        readers: dict[str, str] = {}
        counts = read_logs(con, sources, tmpdir, opts, readers)
        rejects = first_rejects(con)
        check_records(paths, counts["n_calls"], counts["n_rejects"], rejects, strict)
        fig = Figures(dict(audit_id=audit_id, run_id=run_id), pricing.curve(),
                      counts["content_calls"], tokenizer)
        begin_results(con)
        lookup = stored_session_figures(con, opts, fig)
        run_sql(con, "metrics/seg_window")  # one share: the whole audit's span is its own
        time_parts(con, opts)
        summary = audit_figures(con, opts, fig, sources=sources, model=model, pricing=pricing, memory=memory,
                                started=started)
        return AuditResult(audit_id, summary, sources, rejects, label_lookup=lookup,
                           unnamed_calls=unnamed_calls(con), readers=readers, calls_stored=True)
    finally:
        if not opts.workdir:
            shutil.rmtree(tmpdir, ignore_errors=True)


def unnamed_calls(con) -> int:
    return int(value(con, "metrics/unnamed_calls"))


def label_lookup(con) -> str:
    """How each call finds its label when stored: "one", "hash" or "strings" (see AuditResult)."""
    if the_row(con, "store/label_counts")["labels"] == 1:
        return "one"
    return "hash" if labels_hash_apart(con) else "strings"


def labels_hash_apart(con) -> bool:
    """True when no two of this audit's call labels share a label_hash (so a call finds its label by it)."""
    counts = the_row(con, "store/label_counts")
    return counts["labels"] == counts["hashes"]


def own_columns(con, table: str) -> list[str]:
    """A DB table's columns but the audit's ids and label number, from the schema (store/own_columns.sql)."""
    return [r["column_name"] for r in rows(con, "store/own_columns", table=table)]


def store_columns(con) -> dict[str, str]:
    """The column lists the store/*.sql statements take, from the schema (token_call_rows, token_call_labels)."""
    # Quoted (untrusted.quoted): a name is the DB file's, and never becomes SQL of its own.
    labels = [quoted(c) for c in own_columns(con, "token_call_labels")]
    return dict(row_columns=", ".join(f"c.{quoted(c)}" for c in own_columns(con, "token_call_rows")),
                label_columns=", ".join(labels), label_order=", ".join(f"{c} NULLS FIRST" for c in labels),
                label_match=" AND ".join(f"l.{c} IS NOT DISTINCT FROM c.{c}" for c in labels))


def _store_calls(con, audit_id: str, run_id: int | None, lookup: str, columns: dict[str, str]) -> None:
    """The calls, their labels and the rejects into the DB's tables (pipeline.STORE); `lookup`: how each call
    finds its label (label_lookup)."""
    params = pipeline.StoreParams(audit_id=audit_id, run_id=run_id, one_label=lookup == "one",
                                  by_hash=lookup == "hash", by_strings=lookup == "strings")
    try:
        pipeline.run(con, pipeline.STORE, params, columns=columns)
    finally:
        pipeline.RESET_ORDER.run(con)


def _store(con, result: AuditResult) -> None:
    """The audit's calls, labels and rejects into the DB's tables, unless run_audit stored them already."""
    if not result.calls_stored:
        _store_calls(con, result.audit_id, result.summary["run_id"], result.label_lookup, store_columns(con))


def persist(con, result: AuditResult) -> None:
    """Store the calls and rejects, and commit the transaction the audit's figures were written in."""
    try:
        _store(con, result)
        pipeline.COMMIT.run(con)
    except BaseException:
        rollback_quietly(con)  # a failed COMMIT (disk full) ended the transaction: its error is the one to show
        raise


def fetch(con, result: AuditResult) -> dict[str, list[dict]]:
    """The audit's rows per table (for an experiment's Result), the calls in file order."""
    _store(con, result)
    out = {}
    for name in TABLES:
        cur = run_sql(con, "store/fetch_call_rows" if name == "token_call_rows" else "store/fetch",
                      dict(table=name), audit_id=result.audit_id)
        cols = [d[0] for d in cur.description]
        out[name] = [dict(zip(cols, row)) for row in cur.fetchall()]
    return out


def next_audit_id(con) -> str:
    """audit-N for standalone audits, N one more than any stored."""
    n = the_row(con, "store/audit_ids", candidate=None)["n"]
    while the_row(con, "store/audit_ids", candidate=f"audit-{n + 1}")["taken"]:
        n += 1
    return f"audit-{n + 1}"
