"""Which format a log is: the file itself is looked at (Parquet magic bytes, the first record's keys), never only
its name; detection is exact (a record two formats accept is an error naming both). Also the formats' facts the
readers share: the API-object shapes (SHAPES), the sessions columns, and --session-key / --time-key (Keys)."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..core.errors import shown
from .logfiles import AuditInputError, _check_readable, compression, open_log
from .sqlfiles import run_sql

@dataclass(frozen=True)
class Shape:
    """A JSON-lines log of API objects: read by sql/ingest/<sql>.sql into _shape, then sql/ingest/calls_from_usage.sql.
    The key paths are the defaults of --session-key / --time-key (the first non-null value wins; no session
    key found: the call is its own session). The SQL files say which documentation each one follows."""
    sql: str
    root: str                        # where the API object sits in the line
    session_keys: tuple[str, ...]
    time_keys: tuple[str, ...]


_STORED_META = ("$.metadata.session_id", "$.metadata.conversation_id")  # stored objects keep request metadata
SHAPES = {
    "openai-chat": Shape("openai_object", "$", _STORED_META, ("$.created",)),
    "openai-response": Shape("openai_object", "$", ("$.conversation.id",) + _STORED_META + ("$.user",),
                             ("$.created_at",)),
    "openai-batch": Shape("openai_object", "$.response.body", (),
                          ("$.response.body.created", "$.response.body.created_at")),
    "anthropic-message": Shape("anthropic_message", "$", (), ()),
    "anthropic-batch": Shape("anthropic_message", "$.result.message", (), ()),
    "litellm": Shape("litellm", "$", ("$.session_id", "$.trace_id"), ("$.startTime",)),
    "langfuse": Shape("langfuse", "$", ("$.sessionId", "$.traceId"), ("$.startTime",)),
}
FORMATS = ("auto", "sessions", "openai", "anthropic", "otel", *SHAPES)
SESSION_COLUMNS = ("session_id", "system_tokens", "user_tokens", "assistant_tokens", "cached_input_tokens")
SESSION_OPTIONAL = ("first_seen", "last_activity", "disconnected_at", "model")


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
            run_sql(con, "ingest/json_path_check", path=path).fetchall()
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


FIRST_LINE_BYTES = 64 << 20  # format detection parses the first record; a longer one cannot be told apart


def first_line(path: Path) -> tuple[str | None, bool]:
    """The first non-blank line (up to FIRST_LINE_BYTES) and whether it is whole, or (None, True) for an
    empty file. Bounded: a file with no newline (a sparse file, a bomb) is not read into memory whole."""
    with open_log(path) as f:
        while raw := f.readline(FIRST_LINE_BYTES + 1):
            whole = len(raw) <= FIRST_LINE_BYTES or raw.endswith(b"\n")
            text = raw[:FIRST_LINE_BYTES].decode("utf-8", errors="replace").lstrip("\ufeff").strip()
            if text:
                return text, whole
    return None, True


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
    row = run_sql(con, "ingest/document_keys", path=str(path)).fetchone()
    if row and row[0] and row[1] is not None:
        return {k: True for k in row[1]}
    return None


def _envelope(rec: dict) -> str | None:
    """openai / anthropic for a {"response": <API response with usage>} envelope, else None."""
    response = rec.get("response")
    if not isinstance(response, dict):
        return None
    usage: dict = response["usage"] if isinstance(response.get("usage"), dict) else {}
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
            raise AuditInputError(f"{shown(path)}: a Parquet file; only the sessions format can be Parquet")
        return Source(path, "sessions", "parquet")
    line, whole = first_line(path)
    if not whole and fmt == "auto":
        raise AuditInputError(f"{shown(path)}: the first line is longer than {FIRST_LINE_BYTES >> 20} MB, so its "
                              "format cannot be told; give --format")
    if line is None:
        if fmt == "auto":
            raise AuditInputError(f"{shown(path)}: empty file; nothing to audit")
        return Source(path, fmt, "csv" if fmt == "sessions" and path.suffix.lower() == ".csv" else "jsonl")
    if not line.startswith("{"):
        if fmt in ("auto", "sessions") and "session_id" in line and "," in line:
            return Source(path, "sessions", "csv")
        if fmt == "sessions" and path.suffix.lower() == ".csv":
            return Source(path, "sessions", "csv")
        raise AuditInputError(f"{shown(path)}: not JSON lines, a sessions CSV (header with session_id, ...) or Parquet"
                              + ("" if fmt == "auto" else f"; cannot read it as --format {fmt}"))
    try:
        rec = json.loads(line) if whole else None
    except RecursionError:
        raise AuditInputError(f"{shown(path)}: the first line nests JSON too deeply to read "
                              f"(over {sys.getrecursionlimit():,} levels)") from None
    except ValueError:
        rec = None
    layout = "jsonl"
    if not isinstance(rec, dict):
        doc = _looks_like_doc(con, path)
        if doc is None:
            if fmt == "auto":
                raise AuditInputError(f"{shown(path)}: the first line is not a JSON object, so the format cannot be "
                                      "told; fix the file or give --format")
            return Source(path, fmt, "jsonl")  # every bad line will be rejected with its line number
        rec, layout = doc, "doc"
    if fmt == "auto":
        kinds = _kinds_of_record(rec)
        if not kinds:
            keys = ", ".join(sorted(rec)[:8])
            raise AuditInputError(f"{shown(path)}: cannot tell the format from the first record (keys: {keys}); "
                                  f"give --format ({', '.join(FORMATS[1:])})")
        if len(kinds) > 1:
            raise AuditInputError(f"{shown(path)}: the first record matches more than one format "
                                  f"({' and '.join(kinds)}); give --format")
        fmt = kinds[0]
    if layout == "doc" and fmt != "otel":
        raise AuditInputError(f"{shown(path)}: one JSON document, not JSON lines; only OpenTelemetry exports may be "
                              "a single document")
    return Source(path, fmt, layout)


def reader(src: Source) -> str:
    """Which of pipeline.INGEST's line-exact readers reads `src` (the fast one: _fast_path)."""
    if src.fmt == "openai":
        return "envelope-openai"
    if src.fmt in SHAPES:
        return "shape"
    if src.fmt == "sessions":
        return f"sessions-{src.layout}"
    if src.fmt == "otel":
        return "otel-document" if src.layout == "doc" else "otel"
    return "envelope"


def describe_sources(sources: list[Source]) -> tuple[str, str]:
    """(sources, format) as stored in the audits table."""
    fmts = sorted({s.fmt for s in sources})
    return "; ".join(s.label for s in sources), fmts[0] if len(fmts) == 1 else "mixed: " + ", ".join(fmts)
