"""The DuckDB file that is the single source of truth between `kvreport run` and `kvreport build`.

The store owns the schema, as data: runner/schema/NNN_name.sql, one file per version. 001 is the first
released schema; each later file takes version N-1 to N (ALTER TABLE, CREATE TABLE, back-fills). A new DB
applies every file in order, so a fresh file and a migrated one have the same tables by construction.
Nothing here imports an experiment (or torch): `build`, `audit`, `export` and `findings` stay light.

- `kvreport_meta` holds the schema version. A file from a newer kvreport is refused. An older one is
  migrated in place by writers (`kvreport run`, `kvreport audit`, `kvreport migrate`): a backup copy
  first, then every step in ONE transaction. Readers (`build`, `findings`, `export`) never touch the
  original: they read a migrated temporary copy (`current_schema_copy`).
- `runs` carries everything a reader needs to trust a result (GPU, driver, versions, weights kind).
- `experiments` says per run which experiment ran, was skipped (and why) or failed.
- Each experiment's rows and its status row are written in ONE transaction: a crash mid-experiment
  leaves no half-written rows, and the run is marked failed or interrupted.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable, Iterator

from .errors import UserError

RUN_STATUSES = ("running", "complete", "failed", "interrupted")
EXPERIMENT_STATUSES = ("ok", "skipped", "failed")
_STEP_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Tables read through a view (schema step 006: the token_calls view joins them): exports give the view.
STORAGE_ONLY = ("token_call_rows", "token_call_labels")


class StoreError(UserError):
    """A DB file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class SchemaStep:
    version: int
    name: str       # file name, e.g. 002_run_identity.sql
    sql: str


def schema_steps() -> list[SchemaStep]:
    """Every runner/schema/NNN_*.sql in version order (gaps allowed: the number is the version)."""
    folder = resources.files("kvreport.runner") / "schema"
    steps = []
    for item in folder.iterdir():
        m = _STEP_NAME.match(item.name)
        if m:
            steps.append(SchemaStep(int(m.group(1)), item.name, item.read_text(encoding="utf-8")))
    steps.sort(key=lambda s: s.version)
    versions = [s.version for s in steps]
    if len(set(versions)) != len(versions):
        raise StoreError(f"runner/schema/: two files share a version number ({versions})")
    return steps


SCHEMA_VERSION = schema_steps()[-1].version


def _statements(sql: str) -> list[str]:
    import duckdb

    # DuckDB's own parser splits the file, so a ';' inside a string or comment cannot cut a statement.
    return [s.query for s in duckdb.extract_statements(sql)]


def apply_steps(con, from_version: int) -> int:
    """Apply every schema step above `from_version` on an open connection (inside the caller's
    transaction); returns the new version."""
    version = from_version
    for step in schema_steps():
        if step.version <= from_version:
            continue
        for stmt in _statements(step.sql):
            try:
                con.execute(stmt)
            except Exception as exc:  # noqa: BLE001 - a broken step names its file
                raise StoreError(f"runner/schema/{step.name}: {str(exc).splitlines()[0]}") from None
        version = step.version
    con.execute("INSERT OR REPLACE INTO kvreport_meta VALUES ('schema_version', ?)", [str(version)])
    return version


def table_columns(con) -> dict[str, list[str]]:
    """table -> its columns, for the DB file's own tables (not views, not TEMP ones, not attached files)."""
    rows = con.execute("SELECT c.table_name, c.column_name FROM information_schema.columns c "
                       "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
                       "WHERE c.table_schema = 'main' AND c.table_catalog = current_database() "
                       "AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position").fetchall()
    out: dict[str, list[str]] = {}
    for t, c in rows:
        out.setdefault(t, []).append(c)
    return out


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def backup_path(path: Path, version: int) -> Path:
    return path.with_name(f"{path.name}.schema{version}.bak")


class Store:
    def __init__(self, path: str | os.PathLike, read_only: bool = False, allow_older: bool = False):
        import duckdb

        self.path = Path(path)
        self.read_only = read_only
        self.allow_older = allow_older  # read-only check of an older file (for current_schema_copy)
        self.backup: Path | None = None  # set when opening migrated the file
        if read_only and not self.path.exists():
            raise StoreError(f"{self.path}: no such DB file (run `kvreport run --db {self.path}` first)")
        if not read_only:
            parent = self.path.parent if str(self.path.parent) else Path(".")
            if not parent.exists():
                raise StoreError(f"{self.path}: folder {parent} does not exist")
            if not parent.is_dir():
                raise StoreError(f"{self.path}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
                raise StoreError(f"{self.path}: cannot write here (permission denied)")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            msg = str(exc).splitlines()[0]
            if "lock" in msg.lower():
                raise StoreError(f"{self.path}: the DB is in use by another process ({msg})") from None
            raise StoreError(f"{self.path}: not a DuckDB file or cannot be opened ({msg})") from None
        self._check_and_migrate()

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
                raise StoreError(f"{self.path}: a DuckDB file, but not a kvreport DB "
                                 f"(it has tables {', '.join(sorted(existing)[:5])} and no kvreport_meta)")
            if self.read_only:
                raise StoreError(f"{self.path}: empty DB; run `kvreport run --db {self.path}` first")
            self._migrate(0)
            return
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer kvreport (schema {version}; this one reads up "
                             f"to {SCHEMA_VERSION}); upgrade kvreport")
        if version < SCHEMA_VERSION:
            if self.read_only and self.allow_older:
                return
            if self.read_only:
                raise StoreError(f"{self.path}: schema {version} is older than {SCHEMA_VERSION}; run "
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
        shutil.copyfile(self.path, target)
        self.backup = target

    def _migrate(self, version: int) -> None:
        self.con.execute("BEGIN TRANSACTION")
        try:
            apply_steps(self.con, version)
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # --- runs ---------------------------------------------------------------------------------
    def begin_run(self, meta: dict) -> int:
        # DuckDB holds a file lock, so no other process can be writing: any run still 'running' died.
        self.con.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
        run_id = self.con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        import uuid

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
        self.con.execute("BEGIN TRANSACTION")
        try:
            for table, rows in (tables or {}).items():
                self._insert(table, [{"run_id": run_id, **r} for r in rows])
            self._insert("experiments", [{
                "run_id": run_id, "experiment": experiment, "status": status, "reason": reason,
                "started_at": started_at, "finished_at": _now(), "duration_s": duration_s}])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    def _insert(self, table: str, rows: Iterable[dict]) -> None:
        rows = list(rows)
        if not rows:
            return
        # Every key any row carries (first-seen order): a key only later rows have must not be dropped.
        cols = list(dict.fromkeys(k for r in rows for k in r))
        # Column names come from our own code; values always travel as parameters.
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
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

    def export_tables(self, out: Path, fmt: str = "csv") -> list[Path]:
        """Every data table (and view) as out/<table>.<fmt>, rows in a stable order (the same DB gives the
        same bytes)."""
        if fmt not in ("csv", "parquet"):
            raise UserError(f"--format {fmt}: expected csv or parquet")
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise UserError(f"{out}: is a file, not a folder")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{out}: cannot create output folder ({exc.strerror})") from None
        opts = "(HEADER, DELIMITER ',')" if fmt == "csv" else "(FORMAT PARQUET)"
        written = []
        for table in self.data_tables():
            path = out / f"{table}.{fmt}"
            # COPY cannot take a bound parameter for its target, so the path is quoted here; table names
            # come from the schema files, not from users.
            target = str(path).replace("'", "''")
            self.con.execute(f"COPY (SELECT * FROM {table} ORDER BY ALL) TO '{target}' {opts}")
            written.append(path)
        return written

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
    with tempfile.TemporaryDirectory(prefix="kvreport-migrated-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        wal = Path(str(path) + ".wal")
        if wal.exists():
            shutil.copyfile(wal, Path(str(copy) + ".wal"))
        Store(copy).close()  # migrates the copy (its backup lands in tmp too)
        yield copy


def _is_current(path: Path) -> bool:
    """True for a kvreport DB at this schema; raises StoreError for anything unusable or newer."""
    with Store(path, read_only=True, allow_older=True) as store:
        return store.schema_version() == SCHEMA_VERSION
