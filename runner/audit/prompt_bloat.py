"""Prompt-bloat analysis of the logged request messages: how much of each prompt a prefix cache could
have reused, where sessions break their own prefix, and instructions re-sent turn after turn.

Two phases around the audit's call tables (engine.py):
  extract  while _staged (every record read) still exists: each valid call's messages flattened into
           _content (with the call's token counts, so nothing later needs _staged), token ids with
           --tokenizer, and system-prompt counts for calls whose log gave none (tokenizer_update.sql);
  analyse  afterwards, from _content alone: token_bloat, and the repeated instructions of these sessions
           (_repeat_parts), of which `repeats` keeps the audit's first in token_repeats.
`rid` (the call's row in _staged at extract time) identifies a call in every table here.
"""
from __future__ import annotations

from .sqlfiles import run_sql
from .tokenizer import Tokenizer

# Calls whose texts one statement aggregates (bloat_content_rest, bloat_snippets, ...): per-call text
# aggregation cannot spill, so a slice bounds it.
SLICE = 100_000
SCRATCH = ("_content", "_ids", "_sys_counts", "_pairs", "_lcp_tokens", "_breaks", "_repeat_parts")


def _sliced(con, name: str, last: int | None) -> None:
    """sql/<name>.sql once per slice [lo, hi) of rids."""
    for lo in range(0, (last or 0) + 1, SLICE):
        run_sql(con, name, lo=lo, hi=lo + SLICE)


def _insert_ids(con, rows: list[tuple[int, list[int]]]) -> None:
    if not rows:
        return
    try:
        import pyarrow as pa
    except ImportError:
        con.executemany("INSERT INTO _ids VALUES (?, ?, ?)", [(r, ids, len(ids)) for r, ids in rows])
        return
    batch = pa.table({"rid": pa.array([r for r, _ in rows], pa.int64()),
                      "ids": pa.array([ids for _, ids in rows], pa.list_(pa.int32())),
                      "n_tokens": pa.array([len(ids) for _, ids in rows], pa.int64())})
    con.register("_ids_batch", batch)
    try:
        con.execute("INSERT INTO _ids SELECT rid, ids, n_tokens FROM _ids_batch")
    finally:
        con.unregister("_ids_batch")


# A page of prompts as text (content.sql keeps each as its messages' roles and texts).
_PAGE = """
WITH page AS (SELECT rid, roles, texts FROM _content WHERE rid > ? ORDER BY rid LIMIT ?),
parts AS (SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM page)
SELECT rid, kv_prompt_text(role, text, i) AS prompt_text FROM parts GROUP BY rid ORDER BY rid
"""


def _tokenize(con, tok: Tokenizer, chunk: int = 2000) -> None:
    """System-prompt counts (for SPOR) and prompt token ids (for the prefix analysis). The tokenizer's
    Rust batch encoder does the work; Python only moves batches."""
    texts = [r[0] for r in con.execute(
        "SELECT DISTINCT system_text FROM _content WHERE system_text IS NOT NULL").fetchall()]
    con.execute("CREATE OR REPLACE TEMP TABLE _sys_counts (system_text VARCHAR, n BIGINT)")
    if texts:
        con.executemany("INSERT INTO _sys_counts VALUES (?, ?)", list(zip(texts, tok.count(texts))))
    run_sql(con, "tokenizer_update")
    last = -1  # keyset pages: inserting on the same connection would discard an open cursor's rows
    while rows := con.execute(_PAGE, [last, chunk]).fetchall():
        ids = tok.ids([r[1] or "" for r in rows])
        _insert_ids(con, [(r[0], x) for r, x in zip(rows, ids)])
        last = rows[-1][0]


def extract(con, tokenizer: Tokenizer | None) -> int:
    """Fill _content (and _ids, and system counts in _staged, with a tokenizer) from _staged; returns
    the number of valid calls that logged messages (0: nothing to analyse)."""
    con.execute("CREATE OR REPLACE TEMP TABLE _ids (rid BIGINT, ids INTEGER[], n_tokens BIGINT)")
    content_calls = con.execute(
        "SELECT count(*) FROM _staged WHERE reason IS NULL AND NOT blank AND content IS NOT NULL").fetchone()[0]
    if content_calls:
        run_sql(con, "bloat_macros")
        run_sql(con, "content")  # every plain call, in one statement
        # the other calls, per slice, only where some are: content.sql left them NULL (not plain) or empty
        for (lo,) in con.execute(f"""SELECT DISTINCT rid // {SLICE} * {SLICE} FROM _content
                                     WHERE roles IS NULL OR len(roles) = 0 ORDER BY 1""").fetchall():
            run_sql(con, "bloat_content_rest", lo=lo, hi=lo + SLICE)
        if tokenizer is not None:
            _tokenize(con, tokenizer)
    return content_calls


def reason(tokenizer: Tokenizer | None, content_calls: int) -> str | None:
    """Why the audit has no achievable figures (`content_calls`: the whole audit's), or None."""
    if not content_calls:
        return "no message content in the log (request messages are needed for prompt-bloat analysis)"
    if tokenizer is None:
        return "achievable PCER needs --tokenizer; prefix breaks are shown in characters"
    return None


def analyse(con, ids: dict, tokenizer: Tokenizer | None, content_calls: int, *, min_repeat_chars: int,
            max_repeat_rows: int) -> None:
    """token_bloat and _repeat_parts (temp tables) from _content (and the macros `extract` defined), for the
    sessions whose calls are on `con`: every one of them is analysed on its own. `content_calls`: those calls'
    (0: nothing to analyse). `repeats` then picks the audit's most repeated instructions."""
    if not content_calls:
        return
    last = con.execute("SELECT max(rid) FROM _content").fetchone()[0]
    run_sql(con, "pairs")  # lcp_chars, but for the searches that ran past a message's line:
    if con.execute("SELECT count(*) FROM _pairs WHERE prev_rid IS NOT NULL AND lcp_chars IS NULL").fetchone()[0]:
        _sliced(con, "bloat_lcp_rest", last)
    if tokenizer is not None:
        run_sql(con, "lcp_tokens")
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE _lcp_tokens (rid BIGINT, lcp_tokens BIGINT)")
    run_sql(con, "bloat_breaks")
    _sliced(con, "bloat_snippets", last)
    run_sql(con, "bloat", **ids, has_tokens=tokenizer is not None)
    run_sql(con, "repeat_parts", min_chars=min_repeat_chars, max_rows=max_repeat_rows)


def repeats(con, ids: dict, tokenizer: Tokenizer | None, content_calls: int, *, max_repeat_rows: int) -> None:
    """token_repeats: the first of every share's _repeat_parts, with their tokens counted by --tokenizer.
    `content_calls`: the whole audit's (0: no share has any)."""
    if not content_calls:
        return
    run_sql(con, "repeats", **ids, max_rows=max_repeat_rows)
    if tokenizer is None:
        return
    rep = con.execute("SELECT rowid, instruction FROM temp.main.token_repeats").fetchall()
    if rep:
        counts = tokenizer.count([r[1] for r in rep])
        con.executemany("UPDATE temp.main.token_repeats SET tokens = ? WHERE rowid = ?",
                        [(n, r[0]) for r, n in zip(rep, counts)])


def cleanup(con) -> None:
    for name in SCRATCH:
        con.execute(f"DROP TABLE IF EXISTS temp.main.{name}")
