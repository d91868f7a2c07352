"""The fast readers: DuckDB's JSON reader parses each line of a clean file straight into the record the line-exact
reader would make of it (line numbers from the row order), and the lines whose result needs their raw text are
read again line-exactly. Used only where that gives exactly what the line-exact reader gives."""
from __future__ import annotations

from collections.abc import Callable

from ..core.errors import is_interrupt
from . import pipeline
from .formats import SHAPES, Keys, Source
from .linescan import LineScan, _lines_copy
from .sqlfiles import run_sql, value

# The API-object shapes the fast reader reads (with their default keys only: a user's key paths are never put
# into a reader's SQL), and the plan of each.
FAST_SHAPES = {"openai-chat": "shape-fast-openai", "openai-response": "shape-fast-openai",
               "litellm": "shape-fast-litellm"}

# The fast reader gives up on a file (the line-exact one reads it all) when more than one line in this many
# needs its raw text (a log whose calls name no session or time: reading those lines again would cost more).
FAST_PATH_RAW_SHARE = 20


def fast_path(con, src: Source, params: dict, tmpdir: str, scan: LineScan, keys: Keys) -> str | None:
    """Read `src` with the fast reader (pipeline.INGEST["openai-fast"]: DuckDB's JSON reader, line numbers from
    the row order) when that gives exactly what the line-exact reader would; what it did, or None (nothing read).

    Only a file the line scan found clean of what the two readers number or decode differently: no blank line
    (the JSON reader skips them: checked by one row per line), no \r or NUL byte, no line over the reader's
    default buffer. Rows whose result depends on the raw line (ingest/openai_calls.sql need_raw: a line that is
    not a JSON object, an unreadable one, a call without usage, session or time) are then read again, line-
    exactly, at their own line numbers; if there are many, the whole file is read line-exactly instead."""
    if src.layout != "jsonl" or keys or not scan.plain or scan.long or not scan.lines:
        return None
    if src.fmt in FAST_SHAPES:
        return _fast_shape(con, src, params, tmpdir, scan)
    if src.fmt != "openai":
        return None
    return _fast_then_exact(
        con, src, scan, tmpdir, pipeline.INGEST["openai-fast"], pipeline.IngestParams(**dict(params, lines=None)),
        pipeline.INGEST["envelope-openai"],
        lambda copy, again: pipeline.IngestParams(**dict(params, path=copy, compression="none", lines=again,
                                                         keys=False, fmt=src.fmt)))

def _fast_shape(con, src: Source, params: dict, tmpdir: str, scan: LineScan) -> str | None:
    """fast_path for a file of API objects (FAST_SHAPES) read with its shape's default keys: DuckDB's JSON reader
    parses each line into the shape's record; the lines it could not (ingest/shape_fast_need_raw.sql) are read
    again line-exactly, at their own line numbers, by the shape's line-exact reader."""
    shape = SHAPES[src.fmt]
    p = dict(params, fmt=src.fmt, tmpdir=tmpdir, src=src, lines=None, shape=shape.sql, root=shape.root,
             session_keys=list(shape.session_keys), time_keys=list(shape.time_keys), format=src.fmt,
             time_label=" or ".join(shape.time_keys) or "time")
    return _fast_then_exact(
        con, src, scan, tmpdir, pipeline.INGEST[FAST_SHAPES[src.fmt]], pipeline.IngestParams(**p),
        pipeline.INGEST["shape-lines"],
        lambda copy, again: pipeline.IngestParams(**dict(p, path=copy, compression="none", lines=again,
                                                         after_rowid=value(con, "ingest/last_rowid"))))


def _fast_then_exact(con, src: Source, scan: LineScan, tmpdir: str, fast: tuple, fast_params: pipeline.IngestParams,
                     exact: tuple, exact_params: Callable[[str, list[int]], pipeline.IngestParams]) -> str | None:
    """Run the fast reader `fast`; the rows that need their raw line are dropped and those lines read again by
    `exact`, at their own line numbers. None, with nothing of the file kept, where the fast reader fails, its
    rows do not match the line count, or too many lines need reading again."""
    before = value(con, "ingest/staged_rows")
    try:
        pipeline.run(con, fast, fast_params)
    except Exception as exc:  # noqa: BLE001 - whatever the fast reader cannot do, the line-exact one does
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        run_sql(con, "ingest/drop_rows_of", source=src.label)
        return None
    rows = value(con, "ingest/staged_rows") - before
    again = [r[0] for r in run_sql(con, "ingest/need_raw_lines", source=src.label).fetchall()]
    if rows != scan.lines or len(again) * FAST_PATH_RAW_SHARE > rows:
        run_sql(con, "ingest/drop_rows_of", source=src.label)
        return None
    if again:
        run_sql(con, "ingest/drop_need_raw", source=src.label)
        copy = _lines_copy(src.path, tmpdir, again, scan.chunk_lines)
        pipeline.run(con, exact + pipeline.INGEST_END, exact_params(str(copy), again))
    return f"fast, {len(again):,} lines line-exact" if again else "fast"
