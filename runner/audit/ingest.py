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
import glob
import gzip
import io
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from .sqlfiles import run_sql

@dataclass(frozen=True)
class Shape:
    """A JSON-lines log of API objects: read by sql/<sql>.sql into _shape, then sql/calls_from_usage.sql.
    The key paths are the defaults of --session-key / --time-key (the first non-null value wins; no session
    key found: the call is its own session). The SQL files say which documentation each one follows."""
    sql: str
    root: str                        # where the API object sits in the line
    session_keys: tuple[str, ...]
    time_keys: tuple[str, ...]


_STORED_META = ("$.metadata.session_id", "$.metadata.conversation_id")  # stored objects keep request metadata
SHAPES = {
    "openai-chat": Shape("ingest_openai_object", "$", _STORED_META, ("$.created",)),
    "openai-response": Shape("ingest_openai_object", "$", ("$.conversation.id",) + _STORED_META + ("$.user",),
                             ("$.created_at",)),
    "openai-batch": Shape("ingest_openai_object", "$.response.body", (),
                          ("$.response.body.created", "$.response.body.created_at")),
    "anthropic-message": Shape("ingest_anthropic_message", "$", (), ()),
    "anthropic-batch": Shape("ingest_anthropic_message", "$.result.message", (), ()),
    "litellm": Shape("ingest_litellm", "$", ("$.session_id", "$.trace_id"), ("$.startTime",)),
    "langfuse": Shape("ingest_langfuse", "$", ("$.sessionId", "$.traceId"), ("$.startTime",)),
}
FORMATS = ("auto", "sessions", "openai", "anthropic", "otel", *SHAPES)
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
class Keys:
    """--session-key / --time-key as DuckDB JSON paths into each record; the first non-null value wins."""
    session: tuple[str, ...] = ()
    time: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.session or self.time)


def json_keys(con, option: str, paths: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """User paths as DuckDB JSON paths: `metadata.conversation_id` and `$.metadata.conversation_id` are the
    same key (`request.headers."x-session-id"` quotes a name with dashes); a path DuckDB cannot parse is a
    UserError naming it."""
    out = []
    for raw in paths:
        path = raw.strip()
        if not path:
            raise UserError(f"{option} {raw!r}: empty; give a JSON path such as metadata.conversation_id")
        path = path if path.startswith(("$", "/")) else "$." + path
        try:
            con.execute("SELECT json_extract('{}', ?)", [path]).fetchall()
        except Exception as exc:  # noqa: BLE001 - DuckDB's message says where the path breaks
            raise UserError(f"{option} {raw!r}: not a JSON path ({str(exc).splitlines()[0]})") from None
        out.append(path)
    return tuple(out)


@dataclass(frozen=True)
class Source:
    path: Path
    fmt: str      # sessions | openai | anthropic | otel
    layout: str   # jsonl | csv | parquet | doc
    origin: str | None = None  # where `path` was copied from (an s3:// URL, remote.py): stored instead of it

    @property
    def label(self) -> str:
        return self.origin or str(self.path)


def expand_paths(args: list[str | Path], exclude: tuple[Path, ...] = ()) -> list[Path]:
    """The log files named on the command line, in order, each once: a file as given; a folder, every
    file under it (sorted; hidden ones skipped); a glob the shell did not expand (`'logs/2026-11-*.gz'`),
    its matches (sorted). A folder or glob with no file is an error naming it. `exclude`: the DB's own files."""
    out: dict[Path, None] = {}
    skip = {p.resolve() for p in exclude}
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = sorted(f for f in path.rglob("*") if f.is_file()
                           and not any(part.startswith(".") for part in f.relative_to(path).parts))
            if not found:
                raise AuditInputError(f"{path}: a folder with no log files in it")
        elif not path.exists() and any(c in str(arg) for c in "*?["):
            found = sorted(Path(f) for f in glob.glob(str(arg), recursive=True) if Path(f).is_file())
            if not found:
                raise AuditInputError(f"{arg}: no file matches")
        else:
            found = [path]
        out.update((f, None) for f in found if f.resolve() not in skip)
    return list(out)


def compression(path: Path) -> str:
    """gzip, zstd or none: from the file's first bytes, not its name (DuckDB's reader is told which)."""
    with open(path, "rb") as f:
        head = f.read(4)
    return "gzip" if head[:2] == b"\x1f\x8b" else "zstd" if head == b"\x28\xb5\x2f\xfd" else "none"


def open_log(path: Path) -> io.BufferedIOBase:
    """The file's bytes as DuckDB's reader sees them: gzip and zstd are decompressed as they are read."""
    kind = compression(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "zstd":
        try:
            import zstandard
        except ImportError:
            raise AuditInputError(f"{path}: zstd-compressed, and the zstandard package is not installed") from None
        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True))
    return open(path, "rb")


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
    with open_log(path) as f:
        for raw in f:
            text = raw.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
            if text:
                return text
    return None


def _looks_like_doc(con, path: Path) -> dict | None:
    """A file that is one (pretty-printed) JSON document: its top-level object, else None."""
    if path.stat().st_size > 512 * 1024 * 1024:
        return None
    if compression(path) != "none":  # read_text does not decompress
        with open_log(path) as f:
            try:
                doc = json.loads(f.read(512 * 1024 * 1024))
            except (ValueError, RecursionError, EOFError, OSError):
                return None
        return doc if isinstance(doc, dict) else None
    row = con.execute("SELECT json_valid(content), CASE WHEN json_valid(content) THEN json_keys(content) END "
                      "FROM read_text(?)", [str(path)]).fetchone()
    if row and row[0] and row[1] is not None:
        return {k: True for k in row[1]}
    return None


def _envelope(rec: dict) -> str | None:
    """openai / anthropic for a {"response": <API response with usage>} envelope, else None."""
    response = rec.get("response")
    if not isinstance(response, dict):
        return None
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    if response.get("type") == "message" or "cache_read_input_tokens" in usage \
            or "cache_creation_input_tokens" in usage:
        return "anthropic"
    if "prompt_tokens" in usage or "input_tokens_details" in usage \
            or response.get("object") in ("chat.completion", "response"):
        return "openai"
    return None


def _batch_response(rec: dict) -> bool:
    response = rec.get("response", False)
    return response is None or isinstance(response, dict) and ("status_code" in response or "body" in response)


# What a first record of each format looks like. Detection is exact: a record that two of these accept
# is an error naming both, never a guess.
_LOOKS_LIKE = {
    "otel": lambda r: "resourceSpans" in r,
    "openai": lambda r: _envelope(r) == "openai",
    "anthropic": lambda r: _envelope(r) == "anthropic",
    "sessions": lambda r: "session_id" in r and any(k in r for k in SESSION_COLUMNS[1:]),
    "openai-chat": lambda r: r.get("object") == "chat.completion",
    "openai-response": lambda r: r.get("object") == "response",
    "anthropic-message": lambda r: r.get("type") == "message",
    "openai-batch": lambda r: "custom_id" in r and _batch_response(r),
    "anthropic-batch": lambda r: "custom_id" in r and isinstance(r.get("result"), dict) and "type" in r["result"],
    "litellm": lambda r: "call_type" in r and "prompt_tokens" in r,
    "langfuse": lambda r: "traceId" in r and "type" in r and ("usageDetails" in r or "startTime" in r),
}


def _kinds_of_record(rec: dict) -> list[str]:
    return [fmt for fmt, looks in _LOOKS_LIKE.items() if looks(rec)]


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
    if fmt == "auto":
        kinds = _kinds_of_record(rec)
        if not kinds:
            keys = ", ".join(sorted(rec)[:8])
            raise AuditInputError(f"{path}: cannot tell the format from the first record (keys: {keys}); "
                                  f"give --format ({', '.join(FORMATS[1:])})")
        if len(kinds) > 1:
            raise AuditInputError(f"{path}: the first record matches more than one format ({' and '.join(kinds)}); "
                                  "give --format")
        fmt = kinds[0]
    if layout == "doc" and fmt != "otel":
        raise AuditInputError(f"{path}: one JSON document, not JSON lines; only OpenTelemetry exports may be "
                              "a single document")
    return Source(path, fmt, layout)


def _csv_header(path: Path) -> list[str]:
    """The header's column names (lower case), checked for the required ones."""
    with io.TextIOWrapper(open_log(path), encoding="utf-8-sig", errors="replace", newline="") as f:
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
    with io.TextIOWrapper(open_log(path), encoding="utf-8-sig", errors="replace", newline="") as f, \
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
    - NUL bytes and lone \r become SUB too: NUL is the reader's "delimiter" (a line holding one reads as
      two fields) and a lone \r a line break, and either makes the reader refuse the whole file.
    Chunked C-level decoding, not a per-line loop."""
    codecs.register_error("kvreport_sub", lambda e: ("\x1a", e.end))
    out = Path(tempfile.mkstemp(prefix="clean-", suffix=".txt", dir=tmpdir)[1])
    dec = codecs.getincrementaldecoder("utf-8")(errors="kvreport_sub")
    carry = ""
    with open_log(path) as src, open(out, "w", encoding="utf-8", newline="") as dst:
        while chunk := src.read(64 << 20):
            text = carry + dec.decode(chunk)
            carry = "\r" if text.endswith("\r") else ""  # its \n may start the next chunk
            dst.write(_normalise(text[:-1] if carry else text))
        dst.write(_normalise(carry + dec.decode(b"", final=True)))
    return out


def _plain_copy(path: Path, tmpdir: str) -> Path:
    """A decompressed copy of a compressed file, for the readers that do not decompress (read_text)."""
    out = Path(tempfile.mkstemp(prefix="plain-", dir=tmpdir)[1])
    with open_log(path) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 16 << 20)
    return out


def _normalise(text: str) -> str:
    # A lone \r is damage in JSON lines (encoders escape it in strings and never use it between tokens);
    # left alone it makes the reader refuse the file, read as a line break it would shift every number.
    return text.replace("\r\n", "\n").replace("\r", "\x1a").replace(NUL, "\x1a")


def _needs_sanitizing(exc: Exception) -> bool:
    msg = str(exc).lower()
    return any(k in msg for k in ("unicode", "utf-8", "utf8", "invalid state", "number of columns"))


def ingest(con, src: Source, tmpdir: str, keys: Keys | None = None) -> None:
    """Append every record of `src` to _staged (valid or with its reject reason). `keys`: the user's
    --session-key / --time-key, which replace the format's own session and time.

    Retried, never half-done (each attempt is one statement per table, outside any transaction):
    a line longer than the reader's default buffer -> again with room for MAX_LINE_BYTES (a large
    buffer reads a file on one thread, so it is not the default); a file that is not clean UTF-8 or
    mixes line endings -> again from a normalised copy."""
    params = dict(path=str(src.path), source=src.label, source_name=src.path.name, delim=NUL,
                  max_line_size=DEFAULT_LINE_BYTES, compression=compression(src.path))
    for _attempt in range(3):
        try:
            _ingest_once(con, src, params, tmpdir, keys or Keys())
            return
        except Exception as exc:  # noqa: BLE001 - known reader limits are retried; others become one message
            msg = str(exc).lower()
            if src.layout in ("jsonl", "csv") and "line size" in msg and params["max_line_size"] < MAX_LINE_BYTES:
                params["max_line_size"] = MAX_LINE_BYTES
            elif src.layout in ("jsonl", "csv") and _needs_sanitizing(exc) and params["path"] == str(src.path):
                params.update(path=str(_sanitized_copy(src.path, tmpdir)), compression="none")
            elif isinstance(exc, UserError):
                raise
            else:
                raise AuditInputError(f"{src.path}: cannot read as {src.fmt} ({src.layout}): "
                                      f"{str(exc).splitlines()[0]}") from None
    raise AuditInputError(f"{src.path}: cannot read as {src.fmt} ({src.layout})")


def _ingest_once(con, src: Source, params: dict, tmpdir: str, keys: Keys) -> None:
    if keys and src.fmt in ("sessions", "otel"):
        raise AuditInputError(f"{src.path}: --session-key / --time-key apply to JSON-lines call logs; this is "
                              f"{src.fmt} input, whose sessions and times are its own fields")
    if src.fmt in SHAPES:
        shape = SHAPES[src.fmt]
        time_keys = keys.time or shape.time_keys
        run_sql(con, "lines", **params)
        run_sql(con, "shape_lines")
        run_sql(con, shape.sql, root=shape.root, session_keys=list(keys.session or shape.session_keys),
                time_keys=list(time_keys))
        run_sql(con, "calls_from_usage", format=src.fmt, time_label=" or ".join(time_keys) or "time", **params)
        run_sql(con, "number_lines", **params)
    elif src.fmt == "sessions":
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
        if src.layout == "doc" and params["compression"] != "none":  # read_text does not decompress
            params = dict(params, path=str(_plain_copy(src.path, tmpdir)), compression="none")
        run_sql(con, "lines_doc" if src.layout == "doc" else "lines", **params)
        run_sql(con, "ingest_otel", **params)
    else:  # one row per line: parsed straight from the reader, numbered afterwards
        if keys:
            run_sql(con, "lines", **params)  # read first: a file the reader refuses fails before any INSERT
        run_sql(con, f"ingest_{src.fmt}", **params)
        run_sql(con, "number_lines", **params)
        if keys:
            run_sql(con, "rekey", session_keys=list(keys.session), time_keys=list(keys.time),
                    has_session=bool(keys.session), has_time=bool(keys.time),
                    time_label=" or ".join(keys.time) or "time", **params)
    con.execute("DROP TABLE IF EXISTS _lines")


def describe_sources(sources: list[Source]) -> tuple[str, str]:
    """(sources, format) as stored in the audits table."""
    fmts = sorted({s.fmt for s in sources})
    return "; ".join(s.label for s in sources), fmts[0] if len(fmts) == 1 else "mixed: " + ", ".join(fmts)

