"""Passes over a log's bytes, line by line in C-level chunks: the line scan (longest line, lines too long, line
count), and the copies the readers need (normalised, some lines blanked, some lines picked out), each keeping
every line's number."""
from __future__ import annotations

import codecs
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .logfiles import compression, open_log

DEFAULT_LINE_BYTES = 2 * 1024 * 1024    # DuckDB's default: lets the reader split a file across threads
MAX_LINE_BYTES = 256 * 1024 * 1024      # one JSON line may carry a whole conversation
BLANK_CHARS = " \t\r\f\v\ufeff"  # a line of only these is blank (skipped and counted), as kv_blank in SQL
NUL = "\x00"  # the "delimiter" that makes read_csv return whole lines: valid JSON text never holds a raw NUL
_SUB_ERRORS = "kvreport_sub"


def _sub_errors() -> str:
    """The decoding error handler that turns bytes that are not UTF-8 into U+001A (SUB): registered when a copy
    is first made (a process-wide registry, so not as a side effect of importing this module)."""
    codecs.register_error(_SUB_ERRORS, lambda e: ("\x1a", e.end))  # type: ignore[attr-defined]
    return _SUB_ERRORS


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


def _sanitized_copy(path: Path, tmpdir: str) -> Path:
    """A copy of a file DuckDB's reader refused, fixed so each line keeps its number:
    - bytes that are not UTF-8 become U+001A (SUB), so that line fails JSON validation and is rejected
      with its number while every good line is kept;
    - \r\n endings become \n (the reader fails on a file that mixes both);
    - NUL bytes and lone \r become SUB too: NUL is the reader's "delimiter" (a line holding one reads as
      two fields) and a lone \r a line break, and either makes the reader refuse the whole file.
    Chunked C-level decoding, not a per-line loop."""
    out = Path(tempfile.mkstemp(prefix="clean-", suffix=".txt", dir=tmpdir)[1])
    dec = codecs.getincrementaldecoder("utf-8")(errors=_sub_errors())
    carry = ""
    with open_log(path) as src, open(out, "w", encoding="utf-8", newline="") as dst:
        while chunk := src.read(64 << 20):
            text = carry + dec.decode(chunk)
            carry = "\r" if text.endswith("\r") else ""  # its \n may start the next chunk
            dst.write(_normalise(text[:-1] if carry else text))
        dst.write(_normalise(carry + dec.decode(b"", final=True)))
    return out


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


def _normalise(text: str) -> str:
    # A lone \r is damage in JSON lines (encoders escape it in strings and never use it between tokens);
    # left alone it makes the reader refuse the file, read as a line break it would shift every number.
    return text.replace("\r\n", "\n").replace("\r", "\x1a").replace(NUL, "\x1a")


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
                    dst.write(_normalise(part.decode("utf-8", errors=_sub_errors())) + "\n")
                    target = next(wanted, None)
                line_no += 1
            pending = parts[-1]
        if target is not None and target == line_no and pending:  # the last line, with no newline
            dst.write(_normalise(pending.decode("utf-8", errors=_sub_errors())) + "\n")
    return out
