"""Sessions files prepared for their SQL readers: a CSV's records assembled from its physical lines (so each keeps
the line it starts on), a Parquet file's columns checked; and the pipeline hooks that call them."""
from __future__ import annotations

import collections
import contextlib
import csv
import io
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from ..core.errors import shown
from .formats import SESSION_COLUMNS, SESSION_OPTIONAL
from .linescan import BLANK_CHARS, MAX_LINE_BYTES
from .logfiles import AuditInputError, _plain_copy, open_log
from .sqlfiles import run_sql

if TYPE_CHECKING:
    from .pipeline import IngestParams


@contextlib.contextmanager
def _csv_cells_up_to(limit: int):
    """The csv module's cell limit (process-wide) raised while a log is read, then put back: one cell may hold a
    whole conversation."""
    before = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _csv_header(path: Path) -> list[str]:
    """The header's column names (lower case), checked for the required ones."""
    with io.TextIOWrapper(cast(BinaryIO, open_log(path)), encoding="utf-8-sig", errors="replace", newline="") as f:
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
    with _csv_cells_up_to(MAX_LINE_BYTES):
        return _write_csv_records(path, tmpdir)


def _write_csv_records(path: Path, tmpdir: str) -> Path:
    names = _csv_header(path)
    order = [names.index(c) if c in names else None for c in SESSION_COLUMNS + SESSION_OPTIONAL]
    width = len(names)
    out = Path(tempfile.mkstemp(prefix="csv-", suffix=".jsonl", dir=tmpdir)[1])
    with io.TextIOWrapper(cast(BinaryIO, open_log(path)), encoding="utf-8-sig", errors="replace", newline="") as f, \
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
            note: str | None
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


def parquet_check(con, p: IngestParams) -> None:
    """The Parquet file has the session columns."""
    assert p.src is not None
    _parquet_check(con, p.src.path)


def csv_records(con, p: IngestParams) -> IngestParams:
    """The CSV's records as JSON lines."""
    assert p.src is not None
    return replace(p, records=str(_csv_records(p.src.path, p.tmpdir)))


def plain_copy(con, p: IngestParams) -> IngestParams:
    """A decompressed copy (read_text does not decompress)."""
    if p.compression == "none" or p.src is None:
        return p
    return replace(p, path=str(_plain_copy(p.src.path, p.tmpdir)), compression="none")
