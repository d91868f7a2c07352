"""The DuckDB file that is the single source of truth between `kvreport run` and `kvreport build` (`Store`).
Writers migrate an older file in place (a backup first, every schema step of runner/core/migrations.py in one
transaction) and write each experiment's rows with its status row in one transaction; readers (`build`,
`findings`, `export`) read a migrated temporary copy (`current_schema_copy`). A file from a newer kvreport is
refused. Nothing here imports torch."""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import uuid
from pathlib import Path
from typing import Iterable, Iterator

import duckdb

from .connections import connect, transaction
from .csv_cells import csv_safe_sql
from .errors import StoreError, UserError, shown
from .migrations import (SCHEMA_VERSION, SchemaStep, apply_steps, create_schema, refuse_foreign_objects,
                         schema_steps)
from .scratch import SCRATCH_PREFIX, DBAppeared, new_db_file, scratch_dir
from .untrusted import quoted

_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB file
RUN_STATUSES = ("running", "complete", "failed", "interrupted")
EXPERIMENT_STATUSES = ("ok", "skipped", "failed")
# Tables read through a view (schema steps 006 and 012: the token_calls view reads them): exports give the view.
STORAGE_ONLY = ("token_call_rows", "token_call_labels", "token_call_rows_with_costs")


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def is_damage(exc: BaseException) -> bool:
    """A DuckDB error that says the DB file itself is damaged (a block that fails its checksum)."""
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb") and "corrupt database file" in str(exc).lower()


def _open_problem(exc: BaseException) -> str:
    """Why DuckDB could not open a file, in words (its lock message, its damaged-header message)."""
    msg = _first_line(exc)
    low = msg.lower()
    if "could not set lock" in low or "conflicting lock" in low:
        return f"the DB is in use by another process ({msg})"
    if "permission denied" in low:
        return f"permission denied ({msg})"
    return f"not a usable DuckDB file: damaged, or written by an incompatible DuckDB ({msg})"


def backup_path(path: Path, version: int) -> Path:
    return path.with_name(f"{path.name}.schema{version}.bak")


class Store:
    def __init__(self, path: str | os.PathLike, read_only: bool = False, allow_older: bool = False,
                 steps: list[SchemaStep] | None = None, writable: Iterable[str | os.PathLike] = ()):
        """`steps`: the schema steps this store migrates with, kvreport's own unless given (a test passes an
        older or a broken list). A read-only store's connection is sealed (untrusted.seal): it reads no
        file but the DB and writes only under the folders in `writable` (export_tables' output). Any store
        refuses a file holding an object kvreport's schema does not (refuse_foreign_objects)."""
        self.path = Path(path)
        self.steps = schema_steps() if steps is None else steps
        self.own_steps = steps is None  # kvreport's own: a new file is created from schema/fresh.sql
        self.target_version = self.steps[-1].version
        self.read_only = read_only
        self.allow_older = allow_older  # read-only check of an older file (for current_schema_copy)
        self.backup: Path | None = None  # set when opening migrated the file
        if read_only and not self.path.exists():
            raise StoreError(f"{shown(self.path)}: no such DB file (run `kvreport run --db {self.path}` first)")
        if not read_only:
            parent = self.path.parent if str(self.path.parent) else Path(".")
            if not parent.exists():
                raise StoreError(f"{shown(self.path)}: folder {parent} does not exist")
            if not parent.is_dir():
                raise StoreError(f"{shown(self.path)}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
                raise StoreError(f"{shown(self.path)}: cannot write here (permission denied)")
        created = not read_only and not self.path.exists() and self._create()
        self._check_magic()
        try:
            self.con = connect(self.path, read_only=read_only, sealed=read_only,
                               writable=[os.path.abspath(w) for w in writable])
        except duckdb.Error as exc:
            raise StoreError(f"{shown(self.path)}: {_open_problem(exc)}") from None
        try:
            if not created:  # a file this process has just made holds kvreport's schema and nothing else
                refuse_foreign_objects(self.con, self.path, self.target_version,
                                       None if self.own_steps else self.steps)
            self._check_and_migrate()
        except duckdb.Error as exc:  # a damaged block shows only when a table is read
            self.con.close()
            raise StoreError(f"{shown(self.path)}: the DB file is damaged ({_first_line(exc)})") from None
        except BaseException:
            self.con.close()
            raise

    def _create(self) -> bool:
        """A new DB file appears whole (every schema step applied) or not at all, and two processes
        creating the same path never remove each other's file (new_db_file). False if another process
        made the file first (it is then opened, and checked, as theirs)."""
        tmp = None
        try:
            with new_db_file(self.path) as tmp:
                con = connect(tmp)
                try:
                    with transaction(con):
                        create_schema(con, None if self.own_steps else self.steps)
                    con.execute("CHECKPOINT")
                finally:
                    con.close()
        except DBAppeared:
            return False  # another process made it first: open theirs
        except Exception as exc:  # noqa: BLE001 - duckdb's errors (a full disk): one line naming the file
            if isinstance(exc, UserError) or type(exc).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
                raise
            why = _first_line(exc).replace(str(tmp), str(self.path)) if tmp else _first_line(exc)
            raise StoreError(f"{shown(self.path)}: cannot create the DB file ({why})") from None
        return True

    def _check_magic(self) -> None:
        """A file that is not DuckDB's is named for what it is, before DuckDB guesses (it would hand a
        SQLite file to an extension)."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(16)
        except FileNotFoundError:
            return
        except IsADirectoryError:
            raise StoreError(f"{shown(self.path)}: is a folder, not a DB file") from None
        except OSError as exc:
            raise StoreError(f"{shown(self.path)}: cannot read the DB file ({exc.strerror or exc})") from None
        if not head:
            raise StoreError(f"{shown(self.path)}: an empty file, not a DuckDB file (remove it, or give another "
                             "--db path, and kvreport creates the DB)")
        if head.startswith(b"SQLite format 3"):
            raise StoreError(f"{shown(self.path)}: a SQLite database, not a kvreport (DuckDB) file")
        if head[8:12] != _DUCKDB_MAGIC:
            raise StoreError(f"{shown(self.path)}: not a DuckDB file (no DuckDB header)")

    # --- schema -------------------------------------------------------------------------------
    def _existing_tables(self) -> set[str]:
        rows = self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_catalog = current_database()").fetchall()
        return {r[0] for r in rows}

    def _check_and_migrate(self) -> None:
        existing = self._existing_tables()
        if "kvreport_meta" not in existing:
            if existing:
                raise StoreError(f"{shown(self.path)}: a DuckDB file, but not a kvreport DB "
                                 f"(it has tables {', '.join(sorted(existing)[:5])} and no kvreport_meta)")
            if self.read_only:
                raise StoreError(f"{shown(self.path)}: empty DB; run `kvreport run --db {self.path}` first")
            self._migrate(0)
            return
        version = self.schema_version()
        if version > self.target_version:
            raise StoreError(f"{shown(self.path)}: written by a newer kvreport (schema {version}; this one reads up "
                             f"to {self.target_version}); upgrade kvreport")
        if version < self.target_version:
            if self.read_only and self.allow_older:
                return
            if self.read_only:
                raise StoreError(f"{shown(self.path)}: schema {version} is older than {self.target_version}; run "
                                 f"`kvreport migrate {self.path}` to upgrade it (a backup is kept)")
            self._backup(version)
            self._migrate(version)

    def schema_version(self) -> int:
        row = self.con.execute("SELECT value FROM kvreport_meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _backup(self, version: int) -> None:
        """A copy of the file as it was, before a migration touches it."""
        self.con.execute("CHECKPOINT")  # fold the WAL into the file so the copy is complete
        target = backup_path(self.path, version)
        # Copied to a temporary name, then renamed: a full disk leaves no truncated file that looks like a
        # good backup, only an error.
        tmp = target.with_name(f".{SCRATCH_PREFIX}bak-{os.getpid()}-{target.name}")
        try:
            shutil.copyfile(self.path, tmp)
            os.replace(tmp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(f"{shown(target)}: cannot write the backup before migrating "
                             f"({exc.strerror or exc}); the DB was not changed") from None
        self.backup = target

    def _migrate(self, version: int) -> None:
        with transaction(self.con):
            apply_steps(self.con, version, self.steps)

    # --- runs ---------------------------------------------------------------------------------
    def begin_run(self, meta: dict) -> int:
        # DuckDB holds a file lock, so no other process can be writing: any run still 'running' died.
        self.con.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
        run_id = self.con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        # run_uid names the run across DB files (kvreport merge); run_id is only this file's number.
        row = {"run_uid": uuid.uuid4().hex, **meta, "run_id": run_id, "status": "running", "started_at": _now()}
        self._insert("runs", [row])
        return int(run_id)

    def finish_run(self, run_id: int, status: str) -> None:
        assert status in RUN_STATUSES, status
        self.con.execute("UPDATE runs SET status = ?, finished_at = ? WHERE run_id = ?",
                         [status, _now(), run_id])

    def record_experiment(self, run_id: int, experiment: str, status: str, reason: str | None,
                          tables: dict[str, list[dict]] | None = None, started_at=None,
                          duration_s: float | None = None) -> None:
        """Rows of every table plus the status row, all or nothing."""
        assert status in EXPERIMENT_STATUSES, status
        with transaction(self.con):
            for table, rows in (tables or {}).items():
                self._insert(table, [{"run_id": run_id, **r} for r in rows])
            self._insert("experiments", [{
                "run_id": run_id, "experiment": experiment, "status": status, "reason": reason,
                "started_at": started_at, "finished_at": _now(), "duration_s": duration_s}])

    def _insert(self, table: str, rows: Iterable[dict]) -> None:
        rows = list(rows)
        if not rows:
            return
        # Every key any row carries (first-seen order): a key only later rows have must not be dropped.
        cols = list(dict.fromkeys(k for r in rows for k in r))
        # Column names come from our own code, quoted all the same; values always travel as parameters.
        sql = f"INSERT INTO {quoted(table)} ({', '.join(map(quoted, cols))}) VALUES ({', '.join('?' for _ in cols)})"
        self.con.executemany(sql, [[r.get(c) for c in cols] for r in rows])

    # --- reading ------------------------------------------------------------------------------
    def query(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def tables(self) -> list[str]:
        return sorted(self._existing_tables())

    def data_tables(self) -> list[str]:
        """What a reader of the results sees: every table and view but the schema's own bookkeeping and
        the tables a view reads for them."""
        return [t for t in self.tables() if t not in ("kvreport_meta", *STORAGE_ONLY)]

    def export_tables(self, out: Path, fmt: str = "csv", file_names: dict[str, str] | None = None) -> list[Path]:
        """Every data table (and view) as out/<table>.<fmt>, or under the name `file_names` gives it, rows in a
        stable order (the same DB gives the same bytes). CSV text cells are spreadsheet-safe (csv_safe_sql). All
        or nothing: the files are written into a scratch folder inside `out` and renamed into place only when
        every one is whole."""
        if fmt not in ("csv", "parquet"):
            raise UserError(f"--format {fmt}: expected csv or parquet")
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise UserError(f"{shown(out)}: is a file, not a folder")
        try:
            out.mkdir(parents=True, exist_ok=True)
            work = scratch_dir("export", out, hidden=True)
        except OSError as exc:
            raise UserError(f"{shown(out)}: cannot create output folder ({exc.strerror or exc})") from None
        opts = "(HEADER, DELIMITER ',')" if fmt == "csv" else "(FORMAT PARQUET)"
        try:
            staged = []
            for table in self.data_tables():
                path = work / f"{(file_names or {}).get(table, table)}.{fmt}"
                # COPY cannot take a bound parameter for its target, so the path is quoted here; table names
                # come from the schema files, not from users.
                target = str(path.absolute()).replace("'", "''")
                columns = "*" if fmt != "csv" else ", ".join(
                    csv_safe_sql(name) if kind == "VARCHAR" else quoted(name)
                    for name, kind, *_ in self.con.execute(f"DESCRIBE SELECT * FROM {quoted(table)}").fetchall())
                try:
                    self.con.execute(f"COPY (SELECT {columns} FROM {quoted(table)} ORDER BY ALL) TO '{target}' {opts}")
                except Exception as exc:  # noqa: BLE001 - a full disk or a vanished folder: name the output
                    if is_damage(exc):  # the DB is at fault, not the output
                        raise StoreError(f"{shown(self.path)}: the DB file is damaged ({_first_line(exc)}); "
                                         "nothing was exported") from None
                    raise UserError(f"{shown(out)}: cannot write {table}.{fmt} ({_first_line(exc)}); "
                                    "nothing was exported") from None
                staged.append(path)
            written = []
            for path in staged:
                os.replace(path, out / path.name)
                written.append(out / path.name)
            return written
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def current_schema_copy(path: str | os.PathLike) -> Iterator[Path]:
    """The path of `path` at the current schema, for readers. A current file is yielded as it is; an older
    one is copied to a temporary folder and migrated there, so the original is never touched."""
    path = Path(path)
    if _is_current(path):
        yield path
        return
    tmp = scratch_dir("migrated")
    try:
        copy = tmp / "kvreport.duckdb"  # not the file's own name: it may be too long or odd
        try:
            shutil.copyfile(path, copy)
            wal = Path(str(path) + ".wal")
            if wal.exists():
                shutil.copyfile(wal, Path(str(copy) + ".wal"))
        except OSError as exc:
            raise StoreError(f"{shown(path)}: cannot copy it to migrate it for reading, in {tmp.parent} "
                             f"({exc.strerror or exc})") from None
        try:
            Store(copy).close()  # migrates the copy (its backup lands in tmp too)
        except StoreError as exc:
            raise StoreError(str(exc).replace(str(copy), shown(path))) from None
        try:
            yield copy
        except UserError as exc:  # a reader's message names the user's file, not our copy
            if str(copy) not in str(exc):
                raise
            raise type(exc)(str(exc).replace(str(copy), shown(path))) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _is_current(path: Path) -> bool:
    """True for a kvreport DB at this schema; raises StoreError for anything unusable or newer."""
    with Store(path, read_only=True, allow_older=True) as store:
        return store.schema_version() == SCHEMA_VERSION
