"""Reading traffic logs: which format a file is, and getting its records into `_staged`.

Format detection looks at the file itself (Parquet magic bytes, the first record's keys), never only the
extension. Reading is DuckDB's: each line goes through read_csv as one text column and the JSON work
(validation, field extraction, the provider's token convention) is SQL in sql/ingest/*.sql. Python only
decides which query to run (pipeline.INGEST), so there is no per-record Python on the main path.

File-level problems (no such file, unreadable, unknown format, a CSV header without the required
columns) raise AuditInputError before anything is written. Record-level problems become rejects.
"""
from __future__ import annotations

import codecs
import collections
import csv
import glob
import gzip
import io
import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError, is_interrupt
from ..core.store import shown
from . import pipeline
from .sqlfiles import run_sql, value

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
DEFAULT_LINE_BYTES = 2 * 1024 * 1024    # DuckDB's default: lets the reader split a file across threads
MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSON line may carry a whole conversation
BLANK_CHARS = " \t\r\f\v\ufeff"  # a line of only these is blank (skipped and counted), as kv_blank in SQL
NUL = "\x00"  # the "delimiter" that makes read_csv return whole lines: valid JSON text never holds a raw NUL
_SNIFF_BYTES = 1 << 20

# Process-wide settings of the modules the readers use, set once here rather than on every file: the csv
# module's cell limit (one cell may hold a whole conversation), and the decoding error handler that turns
# bytes that are not UTF-8 into U+001A (SUB) in _sanitized_copy.
csv.field_size_limit(MAX_LINE_BYTES)
codecs.register_error("kvreport_sub", lambda e: ("\x1a", e.end))


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


def expand_paths(args: list[str | Path], exclude: tuple[Path, ...] = ()) -> list[Path]:
    """The log files named on the command line, in order, each once: a file as given; a folder, every
    file under it (sorted; hidden ones skipped); a glob the shell did not expand (`'logs/2026-11-*.gz'`),
    its matches (sorted). A folder or glob with no file is an error naming it. `exclude`: the DB's own files.

    A file is counted once however it is reached (two spellings, a symlink): files are told apart by their
    resolved path. Folders are walked following symlinks, each real folder once, so a symlink loop is
    followed once and never recursed into again."""
    out: dict[str, Path] = {}
    skip = {os.path.realpath(p) for p in exclude}
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            found = _walk(path)
            if not found:
                raise AuditInputError(f"{shown(path)}: a folder with no log files in it")
        elif not os.path.lexists(path) and any(c in str(arg) for c in "*?["):
            found = _glob(str(arg))
            if not found:
                raise AuditInputError(f"{shown(arg)}: no file matches")
        else:
            found = [path]
        for f in found:
            real = os.path.realpath(f)  # never raises, loops included (detect names a looping one)
            if real not in skip and real not in out:
                out[real] = f
    return list(out.values())


def _walk(top: Path) -> list[Path]:
    """Every non-hidden file under `top`, sorted; each real folder visited once (symlink loops end)."""
    seen: set[tuple[int, int]] = set()
    found = []
    for root, dirs, files in os.walk(top, followlinks=True):
        try:
            st = os.stat(root)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if not name.startswith(".") and os.path.isfile(os.path.join(root, name)):
                found.append(Path(root) / name)
    return sorted(found)


def _glob(pattern: str) -> list[Path]:
    """A glob's files. Without `**` the standard glob; with it, our own walk from the part before the
    first wildcard (glob's `**` follows symlink loops until the path is too long: exponential)."""
    if "**" not in pattern:
        return sorted(Path(f) for f in glob.glob(pattern) if os.path.isfile(f))
    parts = Path(pattern).parts
    base_parts = []
    for part in parts:
        if any(c in part for c in "*?["):
            break
        base_parts.append(part)
    base = Path(*base_parts) if base_parts else Path(".")
    if not base.is_dir():
        return []
    regex = re.compile(_glob_regex(pattern))
    return sorted(f for f in _walk(base) if regex.fullmatch(str(f) if base_parts else os.path.normpath(f)))


def _glob_regex(pattern: str) -> str:
    """A glob pattern as a regex on paths: `**/` any folders (none too), `*` and `?` within one name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:j]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
                i = j + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def compression(path: Path) -> str:
    """gzip, zstd or none: from the file's first bytes, not its name (DuckDB's reader is told which)."""
    with open(path, "rb") as f:
        head = f.read(4)
    return "gzip" if head[:2] == b"\x1f\x8b" else "zstd" if head == b"\x28\xb5\x2f\xfd" else "none"


class _ZstdStream(io.RawIOBase):
    """zstd frames decompressed one small piece of input at a time (a bomb cannot fill memory), with a
    truncated last frame an error: zstandard's stream reader ends quietly where the data stops."""

    def __init__(self, path: Path):
        import zstandard  # optional: only a .zst log needs it (open_log says so when it is missing)

        self._zstd = zstandard
        self._f = open(path, "rb")
        self._obj = None        # the decompressor of the frame being read
        self._pending = b""     # decompressed, not yet returned
        self._started = False   # input of the current frame seen

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._pending:
            data = self._f.read(4096)
            if not data:
                if self._started:
                    raise EOFError("the last zstd frame is truncated")
                return 0
            while data:
                if self._obj is None:
                    self._obj = self._zstd.ZstdDecompressor().decompressobj()
                self._started = True
                self._pending += self._obj.decompress(data)
                if not self._obj.eof:
                    break
                data, self._obj, self._started = self._obj.unused_data, None, False
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._f.close()
        super().close()


class _Checked(io.RawIOBase):
    """A decompressing stream whose damage (a bad CRC, a truncated end, a broken frame) is an
    AuditInputError naming the file, never a partial read."""

    def __init__(self, inner, path: Path, kind: str):
        self._inner, self._path, self._kind = inner, path, kind

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        try:
            data = self._inner.read(len(buf))
        except AuditInputError:
            raise
        except (OSError, EOFError, ValueError, zlib.error) as exc:
            raise AuditInputError(f"{shown(self._path)}: corrupt or truncated {self._kind} data "
                                  f"({_first(exc)}); nothing of it was audited") from None
        except Exception as exc:  # noqa: BLE001 - zstandard.ZstdError and kin
            if type(exc).__module__.split(".")[0] != "zstandard":
                raise
            raise AuditInputError(f"{shown(self._path)}: corrupt {self._kind} data ({_first(exc)}); nothing of "
                                  "it was audited") from None
        n = len(data)
        buf[:n] = data
        return n

    def close(self) -> None:
        self._inner.close()
        super().close()


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else type(exc).__name__


def open_log(path: Path) -> io.BufferedIOBase:
    """The file's bytes as DuckDB's reader sees them: gzip and zstd are decompressed as they are read, and
    damaged compressed data raises AuditInputError naming the file."""
    kind = compression(path)
    if kind == "gzip":
        return io.BufferedReader(_Checked(gzip.open(path, "rb"), path, kind), 1 << 20)
    if kind == "zstd":
        try:
            import zstandard  # noqa: F401
        except ImportError:
            raise AuditInputError(f"{shown(path)}: zstd-compressed, and the zstandard package is not installed") \
                from None
        return io.BufferedReader(_Checked(_ZstdStream(path), path, kind), 1 << 20)
    return open(path, "rb")


@dataclass
class LineScan:
    """What one pass over a file's bytes (decompressed) found: the longest line it audits (an upper bound
    under DEFAULT_LINE_BYTES, exact above it), and the lines too long to audit (line number -> bytes)."""
    longest: int = 0
    too_long: dict[int, int] = field(default_factory=dict)
    long: dict[int, int] = field(default_factory=dict)  # every line over DEFAULT_LINE_BYTES -> bytes
    lines: int = 0              # lines in the file (as the line-exact reader numbers them)
    plain: bool = True          # no \r and no NUL byte anywhere (what the fast reader needs: see _fast_path)
    chunk_lines: list[int] = field(default_factory=list)  # the line each _SCAN_CHUNK-byte chunk starts in


_SCAN_CHUNK = 8 << 20
_BLOCK = 1 << 20


def scan_lines(path: Path, limit: int) -> LineScan:
    """Read the whole file once: a compressed one is checked whole (damage is an error naming the file, so
    DuckDB never audits a partial file), and the longest line and every line over `limit` bytes are found.
    Fast where it matters: a line over 2 blocks contains a whole block without a newline, so only blocks
    without one (memchr) are looked at closely."""
    scan = LineScan()
    line_no, cur = 1, 0  # the line being read and its bytes so far
    with open_log(path) as f:
        while chunk := f.read(_SCAN_CHUNK):
            scan.chunk_lines.append(line_no)
            if scan.plain and (b"\r" in chunk or b"\x00" in chunk):
                scan.plain = False
            first = chunk.find(b"\n")
            if first < 0:
                cur += len(chunk)
                continue
            _end_line(scan, line_no, cur + first, limit)
            last = chunk.rfind(b"\n")
            if last > first:
                _long_lines_between(scan, chunk, first, last, line_no + 1, limit)
                scan.longest = max(scan.longest, min(last - first - 1, _BLOCK * 2))
            line_no += chunk.count(b"\n")
            cur = len(chunk) - last - 1
    if cur:
        _end_line(scan, line_no, cur, limit)
    scan.lines = line_no if cur else line_no - 1
    return scan


def _end_line(scan: LineScan, line_no: int, size: int, limit: int) -> None:
    if size > DEFAULT_LINE_BYTES:
        scan.long[line_no] = size
    if size > limit:
        scan.too_long[line_no] = size
    else:
        scan.longest = max(scan.longest, size)


def _long_lines_between(scan: LineScan, chunk: bytes, first: int, last: int, line_no: int, limit: int) -> None:
    """Lines of chunk[first+1 : last] (newline-terminated; the first is number `line_no`) longer than two
    blocks: each holds a whole block with no newline, so only such blocks are measured exactly."""
    pos = first + 1
    while pos + _BLOCK <= last:
        if chunk.find(b"\n", pos, pos + _BLOCK) >= 0:
            pos += _BLOCK
            continue
        start = chunk.rfind(b"\n", first, pos) + 1
        end = chunk.find(b"\n", pos, last + 1)
        _end_line(scan, line_no + chunk.count(b"\n", first + 1, start), end - start, limit)
        pos = end + 1
    # Lines under two blocks only matter as the longest, which is then at most 2 blocks (set by the caller).


def _check_readable(path: Path) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise AuditInputError(f"{shown(path)}: a symlink to a file that does not exist") from None
        raise AuditInputError(f"{shown(path)}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AuditInputError(f"{shown(path)}: a symlink loop (it points back at itself)") from None
        raise AuditInputError(f"{shown(path)}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise AuditInputError(f"{shown(path)}: is a folder; give the log files themselves")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a pipe or FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        # Read once by detection, once by the audit: a stream cannot be read twice, and a device never ends.
        raise AuditInputError(f"{shown(path)}: {kind}, not a regular file; save the log to a file and audit that")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise AuditInputError(f"{shown(path)}: cannot read ({exc.strerror or exc})") from None


FIRST_LINE_BYTES = 64 << 20  # format detection parses the first record; a longer one cannot be told apart


def _first_line(path: Path) -> tuple[str | None, bool]:
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
            raise AuditInputError(f"{shown(path)}: a Parquet file; only the sessions format can be Parquet")
        return Source(path, "sessions", "parquet")
    line, whole = _first_line(path)
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
            raise AuditInputError(f"{shown(path)}: the first record matches more than one format ({' and '.join(kinds)}); "
                                  "give --format")
        fmt = kinds[0]
    if layout == "doc" and fmt != "otel":
        raise AuditInputError(f"{shown(path)}: one JSON document, not JSON lines; only OpenTelemetry exports may be "
                              "a single document")
    return Source(path, fmt, layout)


def _csv_header(path: Path) -> list[str]:
    """The header's column names (lower case), checked for the required ones."""
    with io.TextIOWrapper(open_log(path), encoding="utf-8-sig", errors="replace", newline="") as f:
        header = next(csv.reader(io.StringIO(f.readline())), [])
    names = [h.strip().lower() for h in header]
    missing = [c for c in SESSION_COLUMNS if c not in names]
    if missing:
        raise AuditInputError(f"{shown(path)}: the CSV header lacks {', '.join(missing)} "
                              f"(a sessions file needs {', '.join(SESSION_COLUMNS)})")
    return names


QUOTED_CELL_BYTES = 16 << 20  # a quoted cell may span lines; one that never closes stops being read here


def _csv_records(path: Path, tmpdir: str) -> Path:
    """The records of a sessions CSV as JSON lines {"l": line, "b": blank, "v": [cells in SESSION order],
    "x": extra fields, "q": why the record could not be read, or null}.

    Records are assembled from physical lines here, not by the csv module alone, because only that says
    where each record starts: a quoted cell may span lines, and DuckDB's reader neither reports line numbers
    nor keeps empty lines. `l` is the record's first line (as an editor numbers it). A quote that never
    closes (by the end of the file, or within QUOTED_CELL_BYTES) is a reject on the line where it opens, and
    reading goes on from the next line: one bad cell never swallows the records after it. Blank records
    are written with `b`: true and skipped later. Cells stay text; sql/ingest/sessions_format_csv.sql converts them
    (kv_cell), so a bad cell is a reject, never a failed file."""
    names = _csv_header(path)
    order = [names.index(c) if c in names else None for c in SESSION_COLUMNS + SESSION_OPTIONAL]
    width = len(names)
    out = Path(tempfile.mkstemp(prefix="csv-", suffix=".jsonl", dir=tmpdir)[1])
    with io.TextIOWrapper(open_log(path), encoding="utf-8-sig", errors="replace", newline="") as f, \
            open(out, "w", encoding="utf-8") as dst:
        write, dumps = dst.write, json.dumps
        pending: collections.deque[str] = collections.deque()  # lines read ahead, to be read again

        def next_line() -> str | None:
            return pending.popleft() if pending else f.readline() or None

        next_line()  # the header (checked by _csv_header)
        line_no = 2
        while (first := next_line()) is not None:
            used, quotes, size = [first], first.count('"'), len(first)
            while quotes % 2 and size <= QUOTED_CELL_BYTES:
                more = next_line()
                if more is None:
                    break
                used.append(more)
                quotes, size = quotes + more.count('"'), size + len(more)
            try:
                rows = [] if quotes % 2 else list(csv.reader(used, strict=False)) or [[]]
            except csv.Error as exc:
                rows, note = [[]], f"not a CSV record ({exc})"
            else:
                note = None
            # A record that spans lines is not believed when a line inside its quoted cell is itself a whole
            # record (the header's number of fields, no quote): that is a stray quote swallowing the records
            # after it into one cell.
            if quotes % 2 or any('"' not in inner and inner.count(",") == width - 1 for inner in used[1:-1]):
                write(dumps({"l": line_no, "b": False, "v": [None] * len(order), "x": False,
                             "q": "a quoted cell opens on this line and does not close where a record could end "
                                  "(unterminated quote); the lines after it are read as records of their own"})
                      + "\n")
                pending.extendleft(reversed(used[1:]))
                line_no += 1
                continue
            for row in rows:
                blank = note is None and not "".join(row).strip(BLANK_CHARS) and len(row) <= 1
                cells = [row[i] if i is not None and i < len(row) else None for i in order]
                write(dumps({"l": line_no, "b": blank, "v": cells, "x": len(row) > width, "q": note}) + "\n")
            line_no += len(used)
    return out


def _parquet_check(con, path: Path) -> None:
    try:
        names = {r[0] for r in run_sql(con, "ingest/parquet_columns", path=str(path)).fetchall()}
    except Exception as exc:  # noqa: BLE001 - DuckDB's own message names the problem
        raise AuditInputError(f"{shown(path)}: cannot read Parquet ({str(exc).splitlines()[0]})") from None
    missing = [c for c in SESSION_COLUMNS if c not in names]
    if missing:
        raise AuditInputError(f"{shown(path)}: the Parquet file lacks {', '.join(missing)} "
                              f"(a sessions file needs {', '.join(SESSION_COLUMNS)})")


def _sanitized_copy(path: Path, tmpdir: str) -> Path:
    """A copy of a file DuckDB's reader refused, fixed so each line keeps its number:
    - bytes that are not UTF-8 become U+001A (SUB), so that line fails JSON validation and is rejected
      with its number while every good line is kept;
    - \r\n endings become \n (the reader fails on a file that mixes both);
    - NUL bytes and lone \r become SUB too: NUL is the reader's "delimiter" (a line holding one reads as
      two fields) and a lone \r a line break, and either makes the reader refuse the whole file.
    Chunked C-level decoding, not a per-line loop."""
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


def _drop_rows_of(con, src: Source) -> None:
    """Whatever a failed attempt at `src` left in _staged (nothing, unless a later statement failed)."""
    run_sql(con, "ingest/drop_rows_of", source=src.label)


def _without_lines(path: Path, tmpdir: str, lines: set[int]) -> Path:
    """A copy of the file with each of `lines` replaced by one SUB byte (not JSON: that line is rejected at
    its own number, and ingest names its size); every other byte as it was."""
    out = Path(tempfile.mkstemp(prefix="short-", suffix=".txt", dir=tmpdir)[1])
    line_no, dropping = 1, 1 in lines
    with open_log(path) as src, open(out, "wb") as dst:
        if dropping:
            dst.write(b"\x1a")
        while chunk := src.read(_SCAN_CHUNK):
            pos = 0
            while pos < len(chunk):
                nl = chunk.find(b"\n", pos)
                end = len(chunk) if nl < 0 else nl + 1
                if not dropping:
                    dst.write(chunk[pos:end])
                elif nl >= 0:
                    dst.write(b"\n")
                if nl < 0:
                    break
                line_no += 1
                dropping = line_no in lines
                if dropping:
                    dst.write(b"\x1a")
                pos = end
    return out


_SETTING_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGT]i?B|bytes?)?\s*$", re.IGNORECASE)


def line_limit(con) -> int:
    """The longest line an audit reads: 1/48 of DuckDB's memory limit, at most MAX_LINE_BYTES. DuckDB's
    JSON parser grows its arena by doubling: measured (DuckDB 2.0, this VM), a line of 8 MB parses in a
    350MB limit and one of 12 MB does not; 40 MB in 1GB, not 60 MB. 1/48 leaves room for the rest of the
    audit."""
    try:
        text = value(con, "setup/memory_limit_now")
        m = _SETTING_SIZE.match(str(text))
        unit = (m.group(2) or "B").upper()
        scale = {"B": 1, "BYTE": 1, "BYTES": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
                 "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}[unit]
        memory = float(m.group(1)) * scale
    except Exception:  # noqa: BLE001 - an unreadable setting: the fixed ceiling
        return MAX_LINE_BYTES
    return int(max(DEFAULT_LINE_BYTES, min(MAX_LINE_BYTES, memory / 48)))


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


def ingest(con, src: Source, tmpdir: str, keys: Keys | None = None, fast: bool = True) -> str:
    """Append every record of `src` to _staged (valid or with its reject reason). `keys`: the user's
    --session-key / --time-key, which replace the format's own session and time. `fast`: let a clean file
    take the fast reader (_fast_path). Returns which reader read it: "fast" (with ", N lines line-exact" where
    lines were read again) or "line-exact".

    Retried, never half-done (each attempt is one statement per table, outside any transaction):
    a line longer than the reader's default buffer -> again with room for MAX_LINE_BYTES (a large
    buffer reads a file on one thread, so it is not the default); a file that is not clean UTF-8 or
    mixes line endings -> again from a normalised copy."""
    params = dict(path=str(src.path), source=src.label, source_name=src.path.name, delim=NUL,
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
    if fast and scan is not None and (how := _fast_path(con, src, params, tmpdir, scan, keys or Keys())):
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
                _drop_rows_of(con, src)
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


# The fast reader gives up on a file (the line-exact one reads it all) when more than one line in this many
# needs its raw text (a log whose calls name no session or time: reading those lines again would cost more).
FAST_PATH_RAW_SHARE = 20


def _fast_path(con, src: Source, params: dict, tmpdir: str, scan: LineScan, keys: Keys) -> str | None:
    """Read `src` with the fast reader (pipeline.INGEST["openai-fast"]: DuckDB's JSON reader, line numbers from
    the row order) when that gives exactly what the line-exact reader would; what it did, or None (nothing read).

    Only a file the line scan found clean of what the two readers number or decode differently: no blank line
    (the JSON reader skips them: checked by one row per line), no \r or NUL byte, no line over the reader's
    default buffer. Rows whose result depends on the raw line (ingest/openai_calls.sql need_raw: a line that is
    not a JSON object, an unreadable one, a call without usage, session or time) are then read again, line-
    exactly, at their own line numbers; if there are many, the whole file is read line-exactly instead."""
    if src.fmt != "openai" or src.layout != "jsonl" or keys or not scan.plain or scan.long or not scan.lines:
        return None
    before = value(con, "ingest/staged_rows")
    try:
        pipeline.run(con, pipeline.INGEST["openai-fast"], dict(params, lines=None))
    except Exception as exc:  # noqa: BLE001 - whatever the fast reader cannot do, the line-exact one does
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        _drop_rows_of(con, src)
        return None
    rows = value(con, "ingest/staged_rows") - before
    again = [r[0] for r in run_sql(con, "ingest/need_raw_lines", source=src.label).fetchall()]
    if rows != scan.lines or len(again) * FAST_PATH_RAW_SHARE > rows:
        _drop_rows_of(con, src)
        return None
    if again:
        run_sql(con, "ingest/drop_need_raw", source=src.label)
        copy = _lines_copy(src.path, tmpdir, again, scan.chunk_lines)
        pipeline.run(con, pipeline.INGEST["envelope-openai"] + pipeline.INGEST_END,
                     dict(params, path=str(copy), compression="none", lines=again, keys=False, fmt=src.fmt))
    return f"fast, {len(again):,} lines line-exact" if again else "fast"


def _lines_copy(path: Path, tmpdir: str, lines: list[int], chunk_lines: list[int] | tuple = ()) -> Path:
    """A file of the given lines of `path` (ascending numbers), one per line, as the line-exact reader would
    read them: bytes that are not UTF-8 become U+001A (SUB), as in _sanitized_copy. `chunk_lines` (the line
    scan's): an uncompressed file is read from the chunk the first wanted line is in, not from its start."""
    out = Path(tempfile.mkstemp(prefix="lines-", suffix=".jsonl", dir=tmpdir)[1])
    wanted = iter(lines)
    target = next(wanted, None)
    start = 0  # the last chunk that starts before the first wanted line (its first line is not wanted)
    if chunk_lines and target is not None and compression(path) == "none":
        start = max((i for i, first in enumerate(chunk_lines) if first < target), default=0)
    line_no, pending = (chunk_lines[start] if chunk_lines else 1), b""  # the line `pending` (its start) is in
    with open_log(path) as src, open(out, "w", encoding="utf-8", newline="") as dst:
        src.seek(start * _SCAN_CHUNK)
        while target is not None and (chunk := src.read(_SCAN_CHUNK)):
            n = chunk.count(b"\n")
            if line_no + n < target:  # every line this chunk ends or starts is before the next one wanted
                line_no, pending = line_no + n, b""
                continue
            parts = (pending + chunk).split(b"\n")
            for part in parts[:-1]:
                if line_no == target:
                    dst.write(_normalise(part.decode("utf-8", errors="kvreport_sub")) + "\n")
                    target = next(wanted, None)
                line_no += 1
            pending = parts[-1]
        if target is not None and target == line_no and pending:  # the last line, with no newline
            dst.write(_normalise(pending.decode("utf-8", errors="kvreport_sub")) + "\n")
    return out


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
    pipeline.run(con, pipeline.INGEST[reader(src)] + pipeline.INGEST_END, p, HOOKS)


def _parquet_step(con, p: dict) -> None:
    _parquet_check(con, p["src"].path)


def _csv_step(con, p: dict) -> None:
    p["records"] = str(_csv_records(p["src"].path, p["tmpdir"]))


def _plain_copy_step(con, p: dict) -> None:
    if p["compression"] != "none":  # read_text does not decompress
        p.update(path=str(_plain_copy(p["src"].path, p["tmpdir"])), compression="none")


HOOKS = {"parquet_check": _parquet_step, "csv_records": _csv_step, "plain_copy": _plain_copy_step}


def describe_sources(sources: list[Source]) -> tuple[str, str]:
    """(sources, format) as stored in the audits table."""
    fmts = sorted({s.fmt for s in sources})
    return "; ".join(s.label for s in sources), fmts[0] if len(fmts) == 1 else "mixed: " + ", ".join(fmts)

