"""Reading traffic logs: which format a file is, and getting its records into `_staged`.

Format detection looks at the file itself (Parquet magic bytes, the first record's keys), never only the
extension. Reading is DuckDB's: each line goes through read_csv as one text column and the JSON work
(validation, field extraction, the provider's token convention) is SQL in sql/ingest_*.sql. Python only
decides which query to run, so there is no per-record Python on the main path.

File-level problems (no such file, unreadable, unknown format, a CSV header without the required
columns) raise AuditInputError before anything is written. Record-level problems become rejects.
"""
from __future__ import annotations

import codecs
import csv
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from .sqlfiles import run_sql

FORMATS = ("auto", "sessions", "openai", "anthropic", "otel")
SESSION_COLUMNS = ("session_id", "system_tokens", "user_tokens", "assistant_tokens", "cached_input_tokens")
SESSION_OPTIONAL = ("first_seen", "last_activity", "disconnected_at", "model")
DEFAULT_LINE_BYTES = 2 * 1024 * 1024    # DuckDB's default: lets the reader split a file across threads
MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSON line may carry a whole conversation
BLANK_CHARS = " \t\r\f\v\ufeff"  # a line of only these is blank (skipped and counted), as kv_blank in SQL
NUL = "\x00"  # the "delimiter" that makes read_csv return whole lines: valid JSON text never holds a raw NUL
_SNIFF_BYTES = 1 << 20


class AuditInputError(UserError):
    """A file the audit cannot read at all (the message names it and says why)."""


@dataclass(frozen=True)
class Source:
    path: Path
    fmt: str      # sessions | openai | anthropic | otel
    layout: str   # jsonl | csv | parquet | doc

    @property
    def label(self) -> str:
        return str(self.path)


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise AuditInputError(f"{path}: no such file")
    if path.is_dir():
        raise AuditInputError(f"{path}: is a folder; give the log files themselves")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise AuditInputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _first_line(path: Path) -> str | None:
    """The first non-blank line (whole, however long), or None for an empty file."""
    with open(path, "rb") as f:
        for raw in f:
            text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
            if text:
                return text
    return None


def _looks_like_doc(con, path: Path) -> dict | None:
    """A file that is one (pretty-printed) JSON document: its top-level object, else None."""
    if path.stat().st_size > 512 * 1024 * 1024:
        return None
    row = con.execute("SELECT json_valid(content), CASE WHEN json_valid(content) THEN json_keys(content) END "
                      "FROM read_text(?)", [str(path)]).fetchone()
    if row and row[0] and row[1] is not None:
        return {k: True for k in row[1]}
    return None


def _kind_of_record(rec: dict) -> str | None:
    if "resourceSpans" in rec:
        return "otel"
    response = rec.get("response")
    if isinstance(response, dict):
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        if response.get("type") == "message" or "cache_read_input_tokens" in usage \
                or "cache_creation_input_tokens" in usage:
            return "anthropic"
        if "prompt_tokens" in usage or "input_tokens_details" in usage \
                or response.get("object") in ("chat.completion", "response"):
            return "openai"
        return None
    if "session_id" in rec and any(k in rec for k in SESSION_COLUMNS[1:]):
        return "sessions"
    return None


def detect(con, path: Path, fmt: str = "auto") -> Source:
    """Decide how to read `path`. With fmt != auto only the layout (JSONL, CSV, Parquet, document) is
    sniffed; the format is what the user said."""
    if fmt not in FORMATS:
        raise AuditInputError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    _check_readable(path)
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"PAR1":
        if fmt not in ("auto", "sessions"):
            raise AuditInputError(f"{path}: a Parquet file; only the sessions format can be Parquet")
        return Source(path, "sessions", "parquet")
    line = _first_line(path)
    if line is None:
        if fmt == "auto":
            raise AuditInputError(f"{path}: empty file; nothing to audit")
        return Source(path, fmt, "csv" if fmt == "sessions" and path.suffix.lower() == ".csv" else "jsonl")
    if not line.startswith("{"):
        if fmt in ("auto", "sessions") and "session_id" in line and "," in line:
            return Source(path, "sessions", "csv")
        if fmt == "sessions" and path.suffix.lower() == ".csv":
            return Source(path, "sessions", "csv")
        raise AuditInputError(f"{path}: not JSON lines, a sessions CSV (header with session_id, ...) or Parquet"
                              + ("" if fmt == "auto" else f"; cannot read it as --format {fmt}"))
    try:
        rec = json.loads(line)
    except ValueError:
        rec = None
    layout = "jsonl"
    if not isinstance(rec, dict):
        doc = _looks_like_doc(con, path)
        if doc is None:
            if fmt == "auto":
                raise AuditInputError(f"{path}: the first line is not a JSON object, so the format cannot be "
                                      "told; fix the file or give --format")
            return Source(path, fmt, "jsonl")  # every bad line will be rejected with its line number
        rec, layout = doc, "doc"
    kind = _kind_of_record(rec)
    if fmt == "auto":
        if kind is None:
            keys = ", ".join(sorted(rec)[:8])
            raise AuditInputError(f"{path}: cannot tell the format from the first record (keys: {keys}); "
                                  f"give --format ({', '.join(FORMATS[1:])})")
        fmt = kind
    if layout == "doc" and fmt != "otel":
        raise AuditInputError(f"{path}: one JSON document, not JSON lines; only OpenTelemetry exports may be "
                              "a single document")
    return Source(path, fmt, layout)


def _csv_header(path: Path) -> list[str]:
    """The header's column names (lower case), checked for the required ones."""
    with open(path, "r", encoding="utf-8-sig", errors="replace", newline="") as f:
        header = next(csv.reader(io.StringIO(f.readline())), [])
    names = [h.strip().lower() for h in header]
    missing = [c for c in SESSION_COLUMNS if c not in names]
    if missing:
        raise AuditInputError(f"{path}: the CSV header lacks {', '.join(missing)} "
                              f"(a sessions file needs {', '.join(SESSION_COLUMNS)})")
    return names


def _csv_records(path: Path, tmpdir: str) -> Path:
    """The records of a sessions CSV as JSON lines {"l": line, "v": [cells in SESSION order], "x": extra}.

    Python's csv module reads the file because only it says where each record starts: a quoted cell may
    span lines, and DuckDB's reader neither reports line numbers nor keeps empty lines, so its row number
    drifts from the file's after the first blank line. `l` is the record's first line (as an editor
    numbers it); blank and whitespace-only records are written with `b`: true and skipped later. Cells stay
    text; sql/sessions_csv.sql converts them (kv_cell), so a bad cell is a reject, never a failed file."""
    names = _csv_header(path)
    order = [names.index(c) if c in names else None for c in SESSION_COLUMNS + SESSION_OPTIONAL]
    width = len(names)
    out = Path(tempfile.mkstemp(prefix="csv-", suffix=".jsonl", dir=tmpdir)[1])
    csv.field_size_limit(MAX_LINE_BYTES)
    with open(path, "r", encoding="utf-8-sig", errors="replace", newline="") as f, \
            open(out, "w", encoding="utf-8") as dst:
        reader = csv.reader(f, strict=False)
        next(reader, None)
        start = reader.line_num + 1
        write, dumps = dst.write, json.dumps
        for row in reader:
            blank = not "".join(row).strip(BLANK_CHARS) and len(row) <= 1
            cells = [row[i] if i is not None and i < len(row) else None for i in order]
            write(dumps({"l": start, "b": blank, "v": cells, "x": len(row) > width}) + "\n")
            start = reader.line_num + 1
    return out


def _parquet_check(con, path: Path) -> None:
    try:
        names = {r[0] for r in con.execute("SELECT name FROM parquet_schema(?)", [str(path)]).fetchall()}
    except Exception as exc:  # noqa: BLE001 - DuckDB's own message names the problem
        raise AuditInputError(f"{path}: cannot read Parquet ({str(exc).splitlines()[0]})") from None
    missing = [c for c in SESSION_COLUMNS if c not in names]
    if missing:
        raise AuditInputError(f"{path}: the Parquet file lacks {', '.join(missing)} "
                              f"(a sessions file needs {', '.join(SESSION_COLUMNS)})")


def _sanitized_copy(path: Path, tmpdir: str) -> Path:
    """A copy of a file DuckDB's reader refused, fixed so each line keeps its number:
    - bytes that are not UTF-8 become U+001A (SUB), so that line fails JSON validation and is rejected
      with its number while every good line is kept;
    - \r\n endings become \n (the reader fails on a file that mixes both);
    - NUL bytes become SUB too: NUL is the reader's "delimiter", so a line holding one reads as two
      fields and the reader refuses the whole file.
    Chunked C-level decoding, not a per-line loop."""
    codecs.register_error("kvreport_sub", lambda e: ("\x1a", e.end))
    out = Path(tempfile.mkstemp(prefix="clean-", suffix=".txt", dir=tmpdir)[1])
    dec = codecs.getincrementaldecoder("utf-8")(errors="kvreport_sub")
    carry = ""
    with open(path, "rb") as src, open(out, "w", encoding="utf-8", newline="") as dst:
        while chunk := src.read(64 << 20):
            text = carry + dec.decode(chunk)
            carry = "\r" if text.endswith("\r") else ""  # its \n may start the next chunk
            dst.write(_normalise(text[:-1] if carry else text))
        dst.write(_normalise(carry + dec.decode(b"", final=True)))
    return out


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace(NUL, "\x1a")


def _needs_sanitizing(exc: Exception) -> bool:
    msg = str(exc).lower()
    return any(k in msg for k in ("unicode", "utf-8", "utf8", "invalid state", "number of columns"))


def ingest(con, src: Source, tmpdir: str) -> None:
    """Append every record of `src` to _staged (valid or with its reject reason).

    Retried, never half-done (each attempt is one statement per table, outside any transaction):
    a line longer than the reader's default buffer -> again with room for MAX_LINE_BYTES (a large
    buffer reads a file on one thread, so it is not the default); a file that is not clean UTF-8 or
    mixes line endings -> again from a normalised copy."""
    params = dict(path=str(src.path), source=src.label, source_name=src.path.name, delim=NUL,
                  max_line_size=DEFAULT_LINE_BYTES)
    for _attempt in range(3):
        try:
            _ingest_once(con, src, params, tmpdir)
            return
        except Exception as exc:  # noqa: BLE001 - known reader limits are retried; others become one message
            msg = str(exc).lower()
            if src.layout in ("jsonl", "csv") and "line size" in msg and params["max_line_size"] < MAX_LINE_BYTES:
                params["max_line_size"] = MAX_LINE_BYTES
            elif src.layout in ("jsonl", "csv") and _needs_sanitizing(exc) and params["path"] == str(src.path):
                params["path"] = str(_sanitized_copy(src.path, tmpdir))
            elif isinstance(exc, UserError):
                raise
            else:
                raise AuditInputError(f"{src.path}: cannot read as {src.fmt} ({src.layout}): "
                                      f"{str(exc).splitlines()[0]}") from None
    raise AuditInputError(f"{src.path}: cannot read as {src.fmt} ({src.layout})")


def _ingest_once(con, src: Source, params: dict, tmpdir: str) -> None:
    if src.fmt == "sessions":
        run_sql(con, "sessions_raw")
        if src.layout == "parquet":
            _parquet_check(con, src.path)
            run_sql(con, "sessions_parquet", **params)
        elif src.layout == "csv":
            run_sql(con, "sessions_csv", records=str(_csv_records(src.path, tmpdir)), **params)
        else:
            run_sql(con, "lines", **params)
            run_sql(con, "sessions_jsonl", **params)
        run_sql(con, "ingest_sessions", **params)
    elif src.fmt == "otel":
        run_sql(con, "lines_doc" if src.layout == "doc" else "lines", **params)
        run_sql(con, "ingest_otel", **params)
    else:  # one row per line: parsed straight from the reader, numbered afterwards
        run_sql(con, f"ingest_{src.fmt}", **params)
        run_sql(con, "number_lines", **params)
    con.execute("DROP TABLE IF EXISTS _lines")


def describe_sources(sources: list[Source]) -> tuple[str, str]:
    """(sources, format) as stored in the audits table."""
    fmts = sorted({s.fmt for s in sources})
    return "; ".join(s.label for s in sources), fmts[0] if len(fmts) == 1 else "mixed: " + ", ".join(fmts)

