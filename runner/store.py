"""The DuckDB file that is the single source of truth between `kvreport run` and `kvreport build`.

- `kvreport_meta` holds the schema version; opening a file from a newer kvreport is refused, an older
  one is migrated step by step (MIGRATIONS) inside a transaction.
- `runs` carries everything a reader needs to trust a result (GPU, driver, versions, weights kind).
- `experiments` says per run which experiment ran, was skipped (and why) or failed.
- Each experiment's rows and its status row are written in ONE transaction: a crash mid-experiment
  leaves no half-written rows, and the run is marked failed or interrupted.
Experiment tables are declared next to the code that fills them (`TABLES` in each experiment module).
"""
from __future__ import annotations

import datetime as _dt
import importlib
import os
from pathlib import Path
from typing import Iterable

from .errors import UserError

SCHEMA_VERSION = 1

CORE_TABLES = {
    "kvreport_meta": "key VARCHAR PRIMARY KEY, value VARCHAR",
    "runs": """
        run_id INTEGER PRIMARY KEY, status VARCHAR NOT NULL, started_at TIMESTAMP, finished_at TIMESTAMP,
        device_kind VARCHAR, device_name VARCHAR, model VARCHAR, model_source VARCHAR, dtype VARCHAR,
        weights_random BOOLEAN, quick BOOLEAN, iterations VARCHAR,
        gpu_name VARCHAR, gpu_memory_bytes BIGINT, gpu_count INTEGER, driver_version VARCHAR,
        cuda_version VARCHAR, torch_version VARCHAR, transformers_version VARCHAR, python_version VARCHAR,
        kvreport_version VARCHAR, os VARCHAR, cpu VARCHAR, cpu_count INTEGER, host_memory_bytes BIGINT,
        host VARCHAR, command_line VARCHAR, label VARCHAR""",
    "experiments": """
        run_id INTEGER NOT NULL, experiment VARCHAR NOT NULL, status VARCHAR NOT NULL, reason VARCHAR,
        started_at TIMESTAMP, finished_at TIMESTAMP, duration_s DOUBLE""",
}

# Modules besides the experiments that declare tables (a dict TABLES of name -> column DDL).
EXTRA_TABLE_MODULES = ["runner.audit.tables"]

# version N -> function(con) taking a version N-1 file to N. Version 1 is the first released schema.
MIGRATIONS: dict[int, callable] = {}

RUN_STATUSES = ("running", "complete", "failed", "interrupted")
EXPERIMENT_STATUSES = ("ok", "skipped", "failed")


class StoreError(UserError):
    """A DB file that cannot be used; the message names the file and the problem."""


def all_table_ddl() -> dict[str, str]:
    from .experiments import registry

    tables = dict(CORE_TABLES)
    for exp in registry():
        tables.update(getattr(exp.module, "TABLES", {}))
    for mod_name in EXTRA_TABLE_MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError:
            continue
        tables.update(getattr(mod, "TABLES", {}))
    return tables


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None, microsecond=0)


class Store:
    def __init__(self, path: str | os.PathLike, read_only: bool = False):
        import duckdb

        self.path = Path(path)
        self.read_only = read_only
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
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()
        return {r[0] for r in rows}

    def _check_and_migrate(self) -> None:
        existing = self._existing_tables()
        if "kvreport_meta" not in existing:
            if existing:
                raise StoreError(f"{self.path}: a DuckDB file, but not a kvreport DB "
                                 f"(it has tables {', '.join(sorted(existing)[:5])} and no kvreport_meta)")
            if self.read_only:
                raise StoreError(f"{self.path}: empty DB; run `kvreport run --db {self.path}` first")
            self._create_all()
            return
        row = self.con.execute("SELECT value FROM kvreport_meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path}: written by a newer kvreport (schema {version}; this one reads up "
                             f"to {SCHEMA_VERSION}); upgrade kvreport")
        if version < SCHEMA_VERSION:
            if self.read_only:
                raise StoreError(f"{self.path}: schema {version} is older than {SCHEMA_VERSION}; "
                                 "open it once with `kvreport run` or `kvreport migrate` to upgrade")
            self.con.execute("BEGIN TRANSACTION")
            for step in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[step](self.con)
            self._set_version()
            self.con.execute("COMMIT")
        if not self.read_only:
            self._create_all()  # tables added by new experiments at the same schema version

    def _create_all(self) -> None:
        for name, cols in all_table_ddl().items():
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
        self._set_version()

    def _set_version(self) -> None:
        self.con.execute("INSERT OR REPLACE INTO kvreport_meta VALUES ('schema_version', ?)",
                         [str(SCHEMA_VERSION)])

    # --- runs ---------------------------------------------------------------------------------
    def begin_run(self, meta: dict) -> int:
        # DuckDB holds a file lock, so no other process can be writing: any run still 'running' died.
        self.con.execute("UPDATE runs SET status = 'interrupted' WHERE status = 'running'")
        run_id = self.con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()[0]
        row = {**meta, "run_id": run_id, "status": "running", "started_at": _now()}
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
        cols = list(rows[0].keys())
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

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
