"""The DuckDB file that is the single source of truth between `kvreport run` and `kvreport build`.

The store owns the schema, as data: runner/core/schema/NNN_name.sql, one file per version. 001 is the first
released schema; each later file takes version N-1 to N (ALTER TABLE, CREATE TABLE, back-fills). A new DB is
created from schema/fresh.sql, what those steps build written out as one script (scripts/schema_snapshot.py;
tests/test_store.py checks it against the steps), so a fresh file and a migrated one have the same tables.
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
import errno
import functools
import os
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterable, Iterator

import duckdb

from .errors import UserError, is_interrupt
from .untrusted import described, foreign_objects, inventory, quoted, seal

RUN_STATUSES = ("running", "complete", "failed", "interrupted")
EXPERIMENT_STATUSES = ("ok", "skipped", "failed")
_STEP_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Tables read through a view (schema step 006: the token_calls view joins them): exports give the view.
STORAGE_ONLY = ("token_call_rows", "token_call_labels")


class StoreError(UserError):
    """A DB file that cannot be used; the message names the file and the problem."""


# Every DuckDB connection kvreport opens goes through `connect`: extensions are never installed or loaded
# behind our back (a SQLite file as --db would otherwise make DuckDB fetch sqlite_scanner over HTTP).
NO_EXTENSIONS = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB file


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


def shown(path, limit: int = 160) -> str:
    """A path as it appears in a message: whole unless absurdly long (a 100 kB argument is not echoed)."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]} ({len(text):,} characters)"


# --- scratch files: named with their owner's PID, so the next start can remove what a killed one left ---
SCRATCH_PREFIX = "kvreport-"


def scratch_dir(kind: str, parent: str | os.PathLike | None = None, hidden: bool = False) -> Path:
    """A new folder `[.]kvreport-KIND-PID-XXXX` in `parent` (default: the temp folder). Stale ones of the
    same kind (their PID no longer runs) are removed first: a process killed with -9 cleans nothing up."""
    parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    prefix = ("." if hidden else "") + f"{SCRATCH_PREFIX}{kind}-"
    clean_stale(parent, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def clean_stale(parent: Path, prefix: str) -> None:
    """Remove `prefix` + PID + '-' ... entries in `parent` that provably belong to a dead kvreport process of
    this user: the name carries the PID, the PID no longer runs, and the entry is ours (same owner)."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    pattern = re.compile(re.escape(prefix) + r"(\d+)-[A-Za-z0-9_]+(\.duckdb(\.wal)?)?$")
    for entry in entries:
        m = pattern.match(entry.name)
        if not m or _pid_alive(int(m.group(1))):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid() or entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


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


class DBAppeared(StoreError):
    """The DB file did not exist when we began creating it, and does now: another process made it."""


@contextlib.contextmanager
def new_db_file(path: str | os.PathLike) -> Iterator[Path]:
    """Create the DB file `path` atomically: the caller fills the yielded temporary file beside it (and
    closes it); on success it is linked into place only if `path` still does not exist (os.link never
    replaces), else StoreError. On any failure only the temporary file, ours, is removed: a file at `path`
    that another process made meanwhile is never touched."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise StoreError(f"{shown(path)}: folder {shown(parent)} does not exist" if not parent.exists()
                         else f"{shown(path)}: {shown(parent)} is a file, not a folder")
    prefix = f".{SCRATCH_PREFIX}new-"
    clean_stale(parent, prefix)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f"{prefix}{os.getpid()}-", suffix=".duckdb", dir=parent)
    except OSError as exc:
        raise StoreError(f"{shown(path)}: cannot create the DB file ({exc.strerror or exc})") from None
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # DuckDB makes the file itself (an empty file is not a DB); the name stays ours by its PID
    try:
        yield tmp
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise DBAppeared(f"{shown(path)}: another process created this DB file while this one worked; "
                             "nothing was stored (run again: it adds to that file)") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
                raise StoreError(f"{shown(path)}: cannot create the DB file ({exc.strerror or exc})") from None
            if path.exists():  # a file system without hard links: the narrowest check-then-rename there is
                raise DBAppeared(f"{shown(path)}: another process created this DB file while this one "
                                 "worked; nothing was stored") from None
            os.rename(tmp, path)
    finally:
        for mine in (tmp, Path(str(tmp) + ".wal")):
            with contextlib.suppress(OSError):
                mine.unlink()


@dataclass(frozen=True)
class SchemaStep:
    version: int
    name: str       # file name, e.g. 002_run_identity.sql
    sql: str


def schema_steps() -> list[SchemaStep]:
    """Every runner/core/schema/NNN_*.sql in version order (gaps allowed: the number is the version)."""
    folder = resources.files("kvreport.runner.core") / "schema"
    steps = []
    for item in folder.iterdir():
        m = _STEP_NAME.match(item.name)
        if m:
            steps.append(SchemaStep(int(m.group(1)), item.name, item.read_text(encoding="utf-8")))
    steps.sort(key=lambda s: s.version)
    versions = [s.version for s in steps]
    if len(set(versions)) != len(versions):
        raise StoreError(f"runner/core/schema/: two files share a version number ({versions})")
    return steps


SCHEMA_VERSION = schema_steps()[-1].version
FRESH_SCHEMA = "fresh.sql"  # runner/core/schema/fresh.sql: the steps' result in one pass (create_schema)
_FRESH_VERSION = re.compile(r"^-- kvreport schema version (\d+):")


def schema_ddl(con) -> list[str]:
    """The statements that recreate `con`'s own schema: its tables, then its views, each in name order."""
    tables = con.execute("SELECT sql FROM duckdb_tables() WHERE database_name = current_database() "
                         "AND schema_name = 'main' AND NOT internal ORDER BY table_name").fetchall()
    views = con.execute("SELECT sql FROM duckdb_views() WHERE database_name = current_database() "
                        "AND schema_name = 'main' AND NOT internal ORDER BY view_name").fetchall()
    return [sql.rstrip().rstrip(";") for (sql,) in tables + views]


def fresh_schema() -> str:
    """The text of runner/core/schema/fresh.sql."""
    return (resources.files("kvreport.runner.core") / "schema" / FRESH_SCHEMA).read_text(encoding="utf-8")


def create_schema(con, steps: list[SchemaStep] | None = None, fresh: str | None = None) -> int:
    """The current schema on an empty connection (inside the caller's transaction); returns its version.
    kvreport's own comes from `fresh` (schema/fresh.sql unless given) in one pass: replaying every step costs
    twice as long (135 statements, ALTERs and back-fills of empty tables). Given `steps` (a test's older or
    broken list), or if `fresh` is not at the latest step's version (a step added without running
    scripts/schema_snapshot.py), the steps are applied one by one."""
    if steps is None:
        text = fresh_schema() if fresh is None else fresh
        m = _FRESH_VERSION.match(text)
        if m and int(m.group(1)) == SCHEMA_VERSION:
            for stmt in _statements(text):
                con.execute(stmt)
            con.execute("INSERT OR REPLACE INTO kvreport_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
            return SCHEMA_VERSION
    return apply_steps(con, 0, steps)


def _statements(sql: str) -> list[str]:
    # DuckDB's own parser splits the file, so a ';' inside a string or comment cannot cut a statement.
    return [s.query for s in duckdb.extract_statements(sql)]


def apply_steps(con, from_version: int, steps: list[SchemaStep] | None = None) -> int:
    """Apply every schema step above `from_version` on an open connection (inside the caller's
    transaction); returns the new version. `steps`: kvreport's own (runner/core/schema/) unless given."""
    version = from_version
    for step in schema_steps() if steps is None else steps:
        if step.version <= from_version:
            continue
        for stmt in _statements(step.sql):
            try:
                con.execute(stmt)
            except Exception as exc:  # noqa: BLE001 - a broken step names its file
                if is_interrupt(exc):  # Ctrl-C, not a broken step
                    raise KeyboardInterrupt from None
                raise StoreError(f"runner/core/schema/{step.name}: {str(exc).splitlines()[0]}") from None
        version = step.version
    con.execute("INSERT OR REPLACE INTO kvreport_meta VALUES ('schema_version', ?)", [str(version)])
    return version


def own_objects(version: int, steps: list[SchemaStep] | None = None) -> dict:
    """untrusted.inventory of an empty DB built by the schema at `version` (kvreport's own steps unless
    given): every object a kvreport DB of that version may hold, each exactly as kvreport writes it."""
    if steps is None:
        return dict(_own_objects(version))
    return _build_objects(version, steps)


@functools.lru_cache(maxsize=16)
def _own_objects(version: int) -> dict:
    return _build_objects(version, None)


def _build_objects(version: int, steps: list[SchemaStep] | None) -> dict:
    con = connect()
    try:
        with transaction(con):
            if steps is None and version == SCHEMA_VERSION:
                create_schema(con)
            else:
                steps = schema_steps() if steps is None else steps
                upto = max(version, steps[0].version)  # 0: a kvreport_meta without its version row
                apply_steps(con, 0, [s for s in steps if s.version <= upto])
        return inventory(con)
    finally:
        con.close()


def refuse_foreign_objects(con, path: Path, newest: int, steps: list[SchemaStep] | None = None) -> None:
    """StoreError naming every object of the DB file open on `con` that kvreport's schema at the file's
    version does not hold exactly (a view where kvreport has a table, a macro, a table of another name or
    other columns, ...), before anything in the file is read. A file newer than `newest` is left to the
    version check."""
    found = inventory(con)
    if not found:
        return
    meta = found.get(("table", "kvreport_meta"))
    version = None
    if meta is not None and meta == own_objects(SCHEMA_VERSION).get(("table", "kvreport_meta")):
        row = con.execute("SELECT value FROM main.kvreport_meta WHERE key = 'schema_version'").fetchone()
        text = "0" if row is None else str(row[0])
        if not (text.isascii() and text.isdigit() and len(text) <= 6):
            raise StoreError(f"{shown(path)}: kvreport_meta's schema_version {shown(text, 40)!r} is not a "
                             "schema number; not a kvreport DB")
        version = int(text)
        if version > newest:
            return
    elif not any(kind == "table" and name == "kvreport_meta" for kind, name in found):
        tables = sorted(name for kind, name in found if kind == "table")
        if tables:
            raise StoreError(f"{shown(path)}: a DuckDB file, but not a kvreport DB (it has tables "
                             f"{', '.join(map(str, tables[:5]))} and no kvreport_meta)")
    foreign = foreign_objects(found, {} if version is None else own_objects(version, steps))
    if foreign:
        schema = "" if version is None else f" at schema {version}"
        raise StoreError(f"{shown(path)}: holds {described(foreign)}, which kvreport's own DB{schema} does not "
                         "have; a DB from elsewhere is read as data only, so this one is refused")


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


# --- spreadsheet-safe CSV cells (OWASP "CSV injection"): a text cell a spreadsheet would run as a formula
# gets a leading single quote; control bytes (a NUL, a BEL) are written as \xNN. Numbers stay numbers: only
# text is touched, and text that is a plain number ("-5", "+1.5e3") is left as it is.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_CONTROL_BYTES = [c for c in range(32) if chr(c) not in "\t\n\r"] + [127]
_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c in _CONTROL_BYTES) + "]")


def csv_safe_text(text: str) -> str:
    """One text cell as a spreadsheet may open it without running anything."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.match(text):
        return "'" + text
    return text


def csv_safe_sql(column: str) -> str:
    """csv_safe_text as a DuckDB expression on a VARCHAR column, named as the column."""
    col = quoted(column)
    escaped = col
    for c in _CONTROL_BYTES:
        escaped = f"replace({escaped}, chr({c}), '\\x{c:02x}')"
    formula = "regexp_matches(" + col + ", '^[=+@\\-' || chr(9) || chr(13) || ']')"
    number = "regexp_matches(" + col + ", '" + _PLAIN_NUMBER.pattern + "')"
    return f"CASE WHEN {formula} AND NOT {number} THEN chr(39) || {escaped} ELSE {escaped} END AS {col}"


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
        if not read_only and not self.path.exists():
            self._create()
        self._check_magic()
        try:
            self.con = connect(self.path, read_only=read_only, sealed=read_only,
                               writable=[os.path.abspath(w) for w in writable])
        except duckdb.Error as exc:
            raise StoreError(f"{shown(self.path)}: {_open_problem(exc)}") from None
        try:
            refuse_foreign_objects(self.con, self.path, self.target_version, None if self.own_steps else self.steps)
            self._check_and_migrate()
        except duckdb.Error as exc:  # a damaged block shows only when a table is read
            self.con.close()
            raise StoreError(f"{shown(self.path)}: the DB file is damaged ({_first_line(exc)})") from None
        except BaseException:
            self.con.close()
            raise

    def _create(self) -> None:
        """A new DB file appears whole (every schema step applied) or not at all, and two processes
        creating the same path never remove each other's file (new_db_file)."""
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
            pass  # another process made it first: open theirs
        except Exception as exc:  # noqa: BLE001 - duckdb's errors (a full disk): one line naming the file
            if isinstance(exc, UserError) or type(exc).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
                raise
            why = _first_line(exc).replace(str(tmp), str(self.path)) if tmp else _first_line(exc)
            raise StoreError(f"{shown(self.path)}: cannot create the DB file ({why})") from None

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
