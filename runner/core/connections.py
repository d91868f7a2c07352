"""Every DuckDB connection kvreport opens (`connect`: never an extension behind our back, sealed for files
from elsewhere) and the transaction helpers used on them."""
from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator

import duckdb

from .untrusted import seal

# Every DuckDB connection kvreport opens goes through `connect`: extensions are never installed or loaded
# behind our back (a SQLite file as --db would otherwise make DuckDB fetch sqlite_scanner over HTTP).
NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def connect(path: str | os.PathLike = ":memory:", read_only: bool = False, sealed: bool = False,
            writable: Iterable[str | os.PathLike] = ()):
    """A DuckDB connection that never installs or loads an extension by itself. `sealed` (for a connection
    that only reads): no file but the DB and the folders in `writable`, configuration locked
    (untrusted.seal)."""
    con = duckdb.connect(str(path), read_only=read_only, config=dict(NO_EXTENSIONS))
    if sealed:
        try:
            seal(con, [str(w) for w in writable])
        except BaseException:
            con.close()
            raise
    return con


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
