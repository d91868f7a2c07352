"""Getting one log file's records into `_staged` (valid calls and rejects, each with its line number).

Reading is DuckDB's: each line goes through read_csv as one text column and the JSON work (validation, field
extraction, the provider's token convention) is SQL in sql/ingest/*.sql; Python only decides which query runs
(pipeline.INGEST), retries what DuckDB's reader refuses (a long line, bytes that are not UTF-8), and lets a
clean file take a fast reader (fastread.py). File-level problems raise AuditInputError before anything is
written; record-level problems become rejects. The format itself is formats.py's (detect).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.errors import UserError, is_interrupt
from ..core.errors import shown
from . import pipeline
from .fastread import fast_path
from .formats import SHAPES, Keys, Source, reader
from .linescan import DEFAULT_LINE_BYTES, MAX_LINE_BYTES, NUL, _sanitized_copy, _without_lines, scan_lines
from .logfiles import AuditInputError, compression
from .sqlfiles import run_sql, value

_SETTING_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGT]i?B|bytes?)?\s*$", re.IGNORECASE)


def line_limit(con) -> int:
    """The longest line an audit reads: 1/48 of DuckDB's memory limit, at most MAX_LINE_BYTES. DuckDB's
    JSON parser grows its arena by doubling: measured (DuckDB 2.0, this VM), a line of 8 MB parses in a
    350MB limit and one of 12 MB does not; 40 MB in 1GB, not 60 MB. 1/48 leaves room for the rest of the
    audit."""
    try:
        text = value(con, "setup/memory_limit_now")
        m = _SETTING_SIZE.match(str(text))
        assert m is not None  # caught below: an unreadable setting
        unit = (m.group(2) or "B").upper()
        scale = {"B": 1, "BYTE": 1, "BYTES": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}[unit]
        memory = float(m.group(1)) * scale
    except Exception:  # noqa: BLE001 - an unreadable setting: the fixed ceiling
        return MAX_LINE_BYTES
    return int(max(DEFAULT_LINE_BYTES, min(MAX_LINE_BYTES, memory / 48)))


def _needs_sanitizing(exc: Exception) -> bool:
    msg = str(exc).lower()
    return any(k in msg for k in ("unicode", "utf-8", "utf8", "invalid state", "number of columns"))


def ingest(con, src: Source, tmpdir: str, keys: Keys | None = None, fast: bool = True) -> str:
    """Append every record of `src` to _staged (valid or with its reject reason). `keys`: the user's
    --session-key / --time-key, which replace the format's own session and time. `fast`: let a clean file
    take the fast reader (_fast_path). Returns which reader read it: "fast" (with ", N lines line-exact" where
    lines were read again) or "line-exact".

    Retried, never half-done (each attempt is one statement per table, outside any transaction):
    a line longer than the reader's default buffer -> again with room for MAX_LINE_BYTES (a large
    buffer reads a file on one thread, so it is not the default); a file that is not clean UTF-8 or
    mixes line endings -> again from a normalised copy."""
    params: dict[str, Any] = dict(path=str(src.path), source=src.label, source_name=src.path.name, delim=NUL,
                  max_line_size=DEFAULT_LINE_BYTES, compression=compression(src.path))
    too_long: dict[int, int] = {}
    limit = line_limit(con)
    why = f"longer than the {limit:,} bytes this audit can hold"
    scan = None
    if src.layout in ("jsonl", "csv", "doc"):
        # One pass first: damaged compression fails here, naming the file, before DuckDB reads a byte (its
        # reader stops quietly at a truncated end), and the reader is sized for the longest line (its
        # default silently drops a last line over its buffer and fails one mid-file).
        scan = scan_lines(src.path, limit)
        if src.layout == "jsonl":
            too_long = scan.too_long
            if too_long:  # each becomes one reject with its size; the lines around it are audited
                params.update(path=str(_without_lines(src.path, tmpdir, set(too_long))), compression="none")
            if scan.longest >= DEFAULT_LINE_BYTES:
                params["max_line_size"] = min(MAX_LINE_BYTES, scan.longest + (1 << 16))
    if fast and scan is not None and (how := fast_path(con, src, params, tmpdir, scan, keys or Keys())):
        return how
    for _attempt in range(4):
        try:
            _ingest_once(con, src, params, tmpdir, keys or Keys())
            for line, size in sorted(too_long.items()):
                run_sql(con, "ingest/too_long", source=src.label, line=line,
                        reason=f"line of {size:,} bytes is {why} (raise --memory-limit to audit it); nothing of "
                               "it was read")
            return "line-exact"
        except Exception as exc:  # noqa: BLE001 - known reader limits are retried; others become one message
            if is_interrupt(exc):  # Ctrl-C inside DuckDB: an interrupt, not bad input
                raise KeyboardInterrupt from None
            msg = str(exc).lower()
            if "out of memory" in msg and scan is not None and src.layout == "jsonl" \
                    and set(scan.long) - set(too_long):
                # Lines that each fit, but not together (DuckDB parses a vector of lines in one arena): every
                # line over DEFAULT_LINE_BYTES becomes a reject with its size; the rest of the file is audited.
                run_sql(con, "ingest/drop_rows_of", source=src.label)
                too_long = dict(scan.long)
                why = (f"one of {len(too_long):,} lines over {DEFAULT_LINE_BYTES >> 20} MB in this file, more "
                       "than this audit can hold together")
                params.update(path=str(_without_lines(src.path, tmpdir, set(too_long))), compression="none",
                              max_line_size=DEFAULT_LINE_BYTES)
                continue
            if src.layout in ("jsonl", "csv") and "line size" in msg and params["max_line_size"] < MAX_LINE_BYTES:
                params["max_line_size"] = MAX_LINE_BYTES
            elif src.layout in ("jsonl", "csv") and _needs_sanitizing(exc) and "clean-" not in params["path"]:
                params.update(path=str(_sanitized_copy(Path(params["path"]), tmpdir)), compression="none")
            elif isinstance(exc, UserError):
                raise
            else:
                raise AuditInputError(f"{shown(src.path)}: cannot read as {src.fmt} ({src.layout}): "
                                      f"{str(exc).splitlines()[0]}") from None
    raise AuditInputError(f"{shown(src.path)}: cannot read as {src.fmt} ({src.layout})")


def _ingest_once(con, src: Source, params: dict, tmpdir: str, keys: Keys) -> None:
    if keys and src.fmt in ("sessions", "otel"):
        raise AuditInputError(f"{shown(src.path)}: --session-key / --time-key apply to JSON-lines call logs; this is "
                              f"{src.fmt} input, whose sessions and times are its own fields")
    p = dict(params, fmt=src.fmt, keys=bool(keys), tmpdir=tmpdir, src=src, lines=None,
             session_keys=list(keys.session), time_keys=list(keys.time), has_session=bool(keys.session),
             has_time=bool(keys.time), time_label=" or ".join(keys.time) or "time")
    if src.fmt in SHAPES:
        shape = SHAPES[src.fmt]
        time_keys = keys.time or shape.time_keys
        p.update(shape=shape.sql, root=shape.root, session_keys=list(keys.session or shape.session_keys),
                 time_keys=list(time_keys), format=src.fmt, time_label=" or ".join(time_keys) or "time")
    pipeline.run(con, pipeline.INGEST[reader(src)] + pipeline.INGEST_END, pipeline.IngestParams(**p))
