"""Prompt-bloat analysis of the logged request messages: how much of each prompt a prefix cache could
have reused, where sessions break their own prefix, and instructions re-sent turn after turn.

The steps are SQL (runner/audit/sql/bloat/), in the order pipeline.SESSION_FIGURES and AUDIT_FIGURES give:
  while _staged (every record read) still exists: each valid call's messages flattened into _content (with
  the call's token counts, so nothing later needs _staged), token ids with --tokenizer, and system-prompt
  counts for calls whose log gave none (bloat/system_tokens_counted.sql);
  afterwards, from _content alone: token_bloat, and the repeated instructions of these sessions
  (_repeat_parts), of which bloat/repeats.sql keeps the audit's first in token_repeats.
`rid` (the call's row in _staged at extract time) identifies a call in every table here. This module holds
the Python steps: what needs the tokenizer, and which slices the sliced steps run over.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .sqlfiles import run_sql, value
from .steps import SLICE
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .pipeline import FigureParams

PAGE_ROWS = 2000  # prompts tokenized per batch


def _insert_ids(con, rows: list[tuple[int, list[int]]]) -> None:
    if not rows:
        return
    try:
        import pyarrow as pa  # optional (the [test] and [ray] extras): a batch insert instead of row by row
    except ImportError:
        for r, ids in rows:
            run_sql(con, "bloat/ids_row", rid=r, ids=ids, n_tokens=len(ids))
        return
    batch = pa.table({"rid": pa.array([r for r, _ in rows], pa.int64()),
                      "ids": pa.array([ids for _, ids in rows], pa.list_(pa.int32())),
                      "n_tokens": pa.array([len(ids) for _, ids in rows], pa.int64())})
    con.register("_ids_batch", batch)
    try:
        run_sql(con, "bloat/ids_page")
    finally:
        con.unregister("_ids_batch")


def tokenize(con, p: FigureParams) -> FigureParams:
    """System-prompt counts (for SPOR) and prompt token ids (for the prefix analysis), with --tokenizer. The
    tokenizer's Rust batch encoder does the work; Python only moves batches."""
    tok = p.tokenizer
    if tok is None:
        return p
    texts = [r[0] for r in run_sql(con, "bloat/system_texts").fetchall()]
    for text, n in zip(texts, tok.count(texts)):
        run_sql(con, "bloat/system_count", system_text=text, n=n)
    run_sql(con, "bloat/system_tokens_counted")
    last = -1  # keyset pages: inserting on the same connection would discard an open cursor's rows
    while rows := run_sql(con, "bloat/prompt_page", after=last, page_rows=PAGE_ROWS).fetchall():
        ids = tok.ids([r[1] or "" for r in rows])
        _insert_ids(con, [(r[0], x) for r, x in zip(rows, ids)])
        last = rows[-1][0]
    return replace(p, token_ids=True)


def local_content(con, p: FigureParams) -> FigureParams:
    """The valid calls on this connection that logged messages (0: nothing to analyse here)."""
    return replace(p, local_content=value(con, "bloat/local_content"))


def content_rest_slices(con, p: FigureParams) -> FigureParams:
    """The slices holding calls bloat/content.sql left to bloat/content_rest.sql (not plain, or empty)."""
    found = tuple(r[0] for r in run_sql(con, "bloat/content_rest_slices", slice=SLICE).fetchall())
    return replace(p, rest_slices=found)


def last_rid(con, p: FigureParams) -> FigureParams:
    """The last call id (the sliced steps' end)."""
    return replace(p, last_rid=value(con, "bloat/last_rid"))


def lcp_rest_needed(con, p: FigureParams) -> FigureParams:
    """Whether any pair's character search ran past a message's line (bloat/lcp_rest.sql finishes those)."""
    return replace(p, lcp_rest=bool(value(con, "bloat/lcp_rest_needed")))


def count_repeats(con, p: FigureParams) -> None:
    """The repeated instructions' tokens, counted by --tokenizer."""
    if p.tokenizer is None:
        return
    rep = run_sql(con, "bloat/repeats_to_count", audit_id=p.audit_id).fetchall()
    for (row, _), n in zip(rep, p.tokenizer.count([r[1] for r in rep]) if rep else []):
        run_sql(con, "bloat/repeat_tokens", tokens=n, row=row)


def reason(tokenizer: Tokenizer | None, content_calls: int) -> str | None:
    """Why the audit has no achievable figures (`content_calls`: the whole audit's), or None."""
    if not content_calls:
        return "no message content in the log (request messages are needed for prompt-bloat analysis)"
    if tokenizer is None:
        return "achievable PCER needs --tokenizer; prefix breaks are shown in characters"
    return None
