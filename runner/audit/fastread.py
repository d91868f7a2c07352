"""The fast readers: DuckDB's JSON reader parses each line of a clean file straight into the record the line-exact
reader would make of it (line numbers from the row order), and the lines whose result needs their raw text are
read again line-exactly. Used only where that gives exactly what the line-exact reader gives."""
from __future__ import annotations

import json
import re
from collections.abc import Callable

from ..core.errors import is_interrupt
from . import pipeline
from .formats import SHAPES, Keys, Source, first_line
from .linescan import LineScan, _lines_copy
from .sqlfiles import run_sql, value

# The API-object shapes the fast reader reads (with their default keys only: a user's key paths are never put
# into a reader's SQL), and the plan of each.
FAST_SHAPES = {"openai-chat": "shape-fast-openai", "openai-response": "shape-fast-openai",
               "litellm": "shape-fast-litellm"}
# LiteLLM's fast reader types the usage object's figures inside `metadata`; a file whose first line keeps its
# metadata as JSON text (a LiteLLM_SpendLogs row) or without a usage object takes the reader that parses it as
# text, as the line-exact reader does (either gives the line-exact audit: this only decides which is faster).
LITELLM_TEXT_METADATA = "shape-fast-litellm-text"

# Anthropic Messages carry no session or time of their own: the fast reader takes the user's keys where each is
# a plain top-level name (at most one of each), read as fields of the record (anthropic_message_fast.sql), never
# one that is already a field of it (kv_anthropic_message_record). Other keys keep the line-exact reader.
ANTHROPIC_FAST = {"anthropic-message": "shape-fast-anthropic"}
_PLAIN_KEY = re.compile(r"\$\.([A-Za-z_][A-Za-z0-9_]*)")
_ANTHROPIC_FIELDS = frozenset({"type", "model", "error", "usage", "custom_id", "result"})

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
    if src.layout != "jsonl" or not scan.plain or scan.long or not scan.lines:
        return None
    if src.fmt in ANTHROPIC_FAST:
        return _fast_anthropic(con, src, params, tmpdir, scan, keys)
    if keys:
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
        con, src, scan, tmpdir, pipeline.INGEST[_shape_plan(src)], pipeline.IngestParams(**p),
        pipeline.INGEST["shape-lines"],
        lambda copy, again: pipeline.IngestParams(**dict(p, path=copy, compression="none", lines=again,
                                                         after_rowid=value(con, "ingest/last_rowid"))))


def _shape_plan(src: Source) -> str:
    """The fast reader of a file of FAST_SHAPES: the shape's, or for LiteLLM lines whose first keeps its metadata
    as text or without a usage object, LITELLM_TEXT_METADATA."""
    plan = FAST_SHAPES[src.fmt]
    if src.fmt == "litellm" and not _typed_usage_fits(first_line(src.path)[0]):
        return LITELLM_TEXT_METADATA
    return plan


def _typed_usage_fits(line: str | None) -> bool:
    """Whether a LiteLLM line's metadata is absent, null, or an object holding a usage object (what the typed
    record reads)."""
    try:
        metadata = json.loads(line or "").get("metadata")
    except (ValueError, AttributeError, RecursionError):
        return False
    return metadata is None or (isinstance(metadata, dict) and isinstance(metadata.get("usage_object"), dict))


def _key_fields(keys: Keys) -> dict | None:
    """The fast Anthropic reader's key fields: {session name: "VARCHAR", time name: "VARCHAR"} in that order
    (a key the user did not give has a placeholder name the reader never reads), or None where a key is not one
    plain top-level name, or names a field of the record, or both keys are one."""
    if len(keys.session) > 1 or len(keys.time) > 1:
        return None
    names = []
    for path, unused in ((keys.session[:1], " session"), (keys.time[:1], " time")):
        m = _PLAIN_KEY.fullmatch(path[0]) if path else None
        if path and (m is None or m.group(1) in _ANTHROPIC_FIELDS):
            return None
        names.append(m.group(1) if m else unused)  # a name no plain key has (a space): a field never read
    if names[0] == names[1]:  # one key for both: left to the line-exact reader
        return None
    return {names[0]: "VARCHAR", names[1]: "VARCHAR"}


def _fast_anthropic(con, src: Source, params: dict, tmpdir: str, scan: LineScan, keys: Keys) -> str | None:
    """fast_path for a file of bare Anthropic Messages (ANTHROPIC_FAST), with the user's keys where _key_fields
    can read them: DuckDB's JSON reader parses each line into the record with the keys' fields in front; the lines
    it could not judge are read again by the line-exact reader, with the same keys."""
    fields = _key_fields(keys)
    if fields is None:
        return None
    shape = SHAPES[src.fmt]
    p = dict(params, fmt=src.fmt, tmpdir=tmpdir, src=src, lines=None, shape=shape.sql, root=shape.root,
             keys=bool(keys), session_keys=list(keys.session), time_keys=list(keys.time),
             has_session=bool(keys.session), has_time=bool(keys.time), format=src.fmt,
             time_label=" or ".join(keys.time) or "time", key_fields=json.dumps(fields))
    return _fast_then_exact(
        con, src, scan, tmpdir, pipeline.INGEST[ANTHROPIC_FAST[src.fmt]], pipeline.IngestParams(**p),
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
