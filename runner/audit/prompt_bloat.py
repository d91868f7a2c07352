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

from .sqlfiles import run_sql
from .steps import SLICE, Statement
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .pipeline import FigureParams

PAGE_ROWS = 2000  # prompts tokenized per batch

# Each call's prompt as token ids (with --tokenizer), by rid: a page at a time from pyarrow, else row by row.
IDS_TABLE_ROW = Statement("INSERT INTO _ids VALUES ($rid, $ids, $n_tokens)")
IDS_TABLE_PAGE = Statement("INSERT INTO _ids SELECT rid, ids, n_tokens FROM _ids_batch")
# The distinct system prompts of the logged messages, counted by --tokenizer into _sys_counts.
SYS_COUNTS = Statement("CREATE OR REPLACE TEMP TABLE _sys_counts (system_text VARCHAR, n BIGINT)")
SYS_TEXTS = Statement("SELECT DISTINCT system_text FROM _content WHERE system_text IS NOT NULL")
SYS_COUNT = Statement("INSERT INTO _sys_counts VALUES ($system_text, $n)")
# Valid calls on this connection that logged messages (0: nothing for the prompt-bloat analysis).
LOCAL_CONTENT = Statement("SELECT count(*) FROM _staged WHERE reason IS NULL AND NOT blank AND content IS NOT NULL")
# The slices of rids that hold calls bloat/content.sql left to bloat/content_rest.sql (NULL or no roles).
REST_SLICES = Statement("SELECT DISTINCT rid // $slice * $slice FROM _content "
                        "WHERE roles IS NULL OR len(roles) = 0 ORDER BY 1")
LAST_RID = Statement("SELECT max(rid) FROM _content")
# Pairs whose character search ran past a message's line (bloat/pairs.sql): bloat/lcp_rest.sql finishes them.
LCP_REST_NEEDED = Statement("SELECT count(*) > 0 FROM _pairs WHERE prev_rid IS NOT NULL AND lcp_chars IS NULL")
# This audit's repeated instructions, for --tokenizer to count, and one's count.
REPEATS_TO_COUNT = Statement("SELECT rowid, instruction FROM token_repeats WHERE audit_id = $audit_id")
REPEAT_TOKENS = Statement("UPDATE token_repeats SET tokens = $tokens WHERE rowid = $row")


def _insert_ids(con, rows: list[tuple[int, list[int]]]) -> None:
    if not rows:
        return
    try:
        import pyarrow as pa  # optional (the [test] and [ray] extras): a batch insert instead of row by row
    except ImportError:
        for r, ids in rows:
            IDS_TABLE_ROW.run(con, rid=r, ids=ids, n_tokens=len(ids))
        return
    batch = pa.table({"rid": pa.array([r for r, _ in rows], pa.int64()),
                      "ids": pa.array([ids for _, ids in rows], pa.list_(pa.int32())),
                      "n_tokens": pa.array([len(ids) for _, ids in rows], pa.int64())})
    con.register("_ids_batch", batch)
    try:
        IDS_TABLE_PAGE.run(con)
    finally:
        con.unregister("_ids_batch")


def tokenize(con, p: FigureParams) -> FigureParams:
    """System-prompt counts (for SPOR) and prompt token ids (for the prefix analysis), with --tokenizer. The
    tokenizer's Rust batch encoder does the work; Python only moves batches."""
    tok = p.tokenizer
    if tok is None:
        return p
    SYS_COUNTS.run(con)
    texts = [r[0] for r in SYS_TEXTS.run(con).fetchall()]
    for text, n in zip(texts, tok.count(texts)):
        SYS_COUNT.run(con, system_text=text, n=n)
    run_sql(con, "bloat/system_tokens_counted")
    last = -1  # keyset pages: inserting on the same connection would discard an open cursor's rows
    while rows := run_sql(con, "bloat/prompt_page", after=last, page_rows=PAGE_ROWS).fetchall():
        ids = tok.ids([r[1] or "" for r in rows])
        _insert_ids(con, [(r[0], x) for r, x in zip(rows, ids)])
        last = rows[-1][0]
    return replace(p, token_ids=True)


def local_content(con, p: FigureParams) -> FigureParams:
    """The valid calls on this connection that logged messages (0: nothing to analyse here)."""
    return replace(p, local_content=LOCAL_CONTENT.value(con))


def content_rest_slices(con, p: FigureParams) -> FigureParams:
    """The slices holding calls bloat/content.sql left to bloat/content_rest.sql (not plain, or empty)."""
    found = tuple(r[0] for r in REST_SLICES.run(con, slice=SLICE).fetchall())
    return replace(p, rest_slices=found)


def last_rid(con, p: FigureParams) -> FigureParams:
    """The last call id (the sliced steps' end)."""
    return replace(p, last_rid=LAST_RID.value(con))


def lcp_rest_needed(con, p: FigureParams) -> FigureParams:
    """Whether any pair's character search ran past a message's line (bloat/lcp_rest.sql finishes those)."""
    return replace(p, lcp_rest=bool(LCP_REST_NEEDED.value(con)))


def count_repeats(con, p: FigureParams) -> None:
    """The repeated instructions' tokens, counted by --tokenizer."""
    if p.tokenizer is None:
        return
    rep = REPEATS_TO_COUNT.run(con, audit_id=p.audit_id).fetchall()
    for (row, _), n in zip(rep, p.tokenizer.count([r[1] for r in rep]) if rep else []):
        REPEAT_TOKENS.run(con, tokens=n, row=row)


def reason(tokenizer: Tokenizer | None, content_calls: int) -> str | None:
    """Why the audit has no achievable figures (`content_calls`: the whole audit's), or None."""
    if not content_calls:
        return "no message content in the log (request messages are needed for prompt-bloat analysis)"
    if tokenizer is None:
        return "achievable PCER needs --tokenizer; prefix breaks are shown in characters"
    return None
