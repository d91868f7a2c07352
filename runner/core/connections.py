"""Every DuckDB connection kvreport opens (`connect`: never an extension behind our back, bounded memory for a
DB file, sealed for files from elsewhere) and the transaction helpers used on them."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterable, Iterator

import duckdb

from .scratch import process_scratch_dir
from .untrusted import seal

# Every DuckDB connection kvreport opens goes through `connect`: extensions are never installed or loaded
# behind our back (a SQLite file as --db would otherwise make DuckDB fetch sqlite_scanner over HTTP).
NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
# DuckDB's own default is 80% of the machine's memory, so a DB of a million runs grew `build` to gigabytes.
# With a limit DuckDB spills to temp_directory instead. The audit sets its own (--memory-limit) on the same
# connection (runner/audit/sql/setup/settings.sql); this is every other reader's and writer's.
FILE_MEMORY_LIMIT = "400MB"


def connect(path: str | os.PathLike = ":memory:", read_only: bool = False, sealed: bool = False,
            writable: Iterable[str | os.PathLike] = ()):
    """A DuckDB connection that never installs or loads an extension by itself. `sealed` (for a connection
    that only reads): no file but the DB and the folders in `writable`, configuration locked
    (untrusted.seal). A DB file's connection holds at most FILE_MEMORY_LIMIT and spills beyond it into a
    folder of its own inside this process's scratch folder (removed at exit), never beside the user's DB."""
    config: dict[str, str | bool | int | float | list[str]] = dict(NO_EXTENSIONS)
    if str(path) != ":memory:":
        config.update(memory_limit=FILE_MEMORY_LIMIT, temp_directory=_spill_folder(path))
    con = duckdb.connect(str(path), read_only=read_only, config=config)
    if sealed:
        try:
            seal(con, [str(w) for w in writable])
        except BaseException:
            con.close()
            raise
    return con


_SPILL_FOLDERS: dict[tuple[int, str], str] = {}


def _spill_folder(path: str | os.PathLike) -> str:
    """The spill folder of one DB file in this process. One per file: two open DBs (merge's output and an
    input) never share spill files. The same one each time for a file: DuckDB refuses a second connection to
    an open file whose configuration differs."""
    key = (os.getpid(), os.path.realpath(path))
    if key not in _SPILL_FOLDERS or not os.path.isdir(_SPILL_FOLDERS[key]):
        _SPILL_FOLDERS[key] = tempfile.mkdtemp(prefix="db-", dir=process_scratch_dir("spill"))
    return _SPILL_FOLDERS[key]


def rollback_quietly(con) -> None:
    """ROLLBACK after a failed statement or COMMIT. A failed COMMIT has already ended the transaction, and
    ROLLBACK's own "no transaction is active" must not replace the error that matters (disk full, ...)."""
    try:
        con.execute("ROLLBACK")
    except Exception:  # noqa: BLE001 - the original error is the one raised
        pass


@contextlib.contextmanager
def transaction(con) -> Iterator[None]:
    """BEGIN ... COMMIT, rolled back (quietly: see rollback_quietly) if anything in it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        rollback_quietly(con)
        raise
