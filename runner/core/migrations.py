"""The schema as data: runner/core/schema/NNN_name.sql steps, the fresh schema in one pass, and the check that a
DB file holds only the objects kvreport's schema at its version holds (anything else is refused)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from . import sqltext
from .connections import connect, transaction
from .errors import StoreError, is_interrupt, shown
from .untrusted import described, foreign_objects, inventory

_STEP_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


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
    return [s.query for s in sqltext.split(sql)]


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
