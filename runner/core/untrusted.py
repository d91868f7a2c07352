"""A DuckDB file from elsewhere is data, never code.

A DB file can hold views (over `read_csv('/etc/...')`), macros (one named `printf` shadows DuckDB's own, even
`duckdb_tables`), types, sequences and other schemas, and any name can carry SQL. kvreport reads a DB only
when every object in it is one kvreport's own schema writes at that version, identical (a table with the same
columns, a view with the same definition); anything else is refused by name before any of it is read.
The catalogue is listed through `system.main.*` functions, which no object in the file can shadow.

Connections that only read such a file are sealed (`seal`): no file outside the given folders, no
extension, configuration locked.
"""
from __future__ import annotations

from collections.abc import Iterable

# Each kind of object a file can hold, listed from DuckDB's own catalogue (the `system` catalogue's functions;
# a macro of the same name in the file cannot replace them). `internal` objects are DuckDB's, not the file's.
_INVENTORY = {
    "table": "SELECT t.table_name, string_agg(c.column_name || ' ' || c.data_type, ', ' ORDER BY c.column_index) "
             "FROM system.main.duckdb_tables() t JOIN system.main.duckdb_columns() c "
             "ON c.database_oid = t.database_oid AND c.table_oid = t.table_oid "
             "WHERE t.database_name = $db GROUP BY t.schema_name, t.table_name",
    "view": "SELECT view_name, sql FROM system.main.duckdb_views() WHERE database_name = $db AND NOT internal",
    "macro": "SELECT DISTINCT function_name, function_type FROM system.main.duckdb_functions() "
             "WHERE database_name = $db AND NOT internal",
    "sequence": "SELECT sequence_name, NULL FROM system.main.duckdb_sequences() WHERE database_name = $db",
    "index": "SELECT index_name, sql FROM system.main.duckdb_indexes() WHERE database_name = $db",
    "type": "SELECT type_name, NULL FROM system.main.duckdb_types() WHERE database_name = $db AND NOT internal",
    "schema": "SELECT schema_name, NULL FROM system.main.duckdb_schemas() WHERE database_name = $db "
              "AND schema_name <> 'main'",
}
# Tables and views of another schema than main count as foreign: their names say where they are.
_SCHEMA_OF = {
    "table": "SELECT DISTINCT table_name FROM system.main.duckdb_tables() WHERE database_name = $db "
             "AND schema_name <> 'main'",
    "view": "SELECT view_name FROM system.main.duckdb_views() WHERE database_name = $db AND NOT internal "
            "AND schema_name <> 'main'",
}


def quoted(name: str) -> str:
    """An identifier as SQL text: always in double quotes, any quote inside doubled. The one way kvreport
    writes a table or column name into a statement."""
    return '"' + str(name).replace('"', '""') + '"'


def database_name(con) -> str:
    """The name of the connection's own DB file (its catalogue), from DuckDB's own function."""
    return con.execute("SELECT system.main.current_database()").fetchone()[0]


def inventory(con, db: str | None = None) -> dict[tuple[str, str], object]:
    """(kind, name) -> its definition (a table's columns and types, a view's SQL), for every object the DB
    file `db` (the connection's own by default) holds."""
    db = database_name(con) if db is None else db
    found: dict[tuple[str, str], object] = {}
    for kind, sql in _INVENTORY.items():
        for name, detail in con.execute(sql, {"db": db}).fetchall():
            found[(kind, name)] = detail
    for kind, sql in _SCHEMA_OF.items():
        for (name,) in con.execute(sql, {"db": db}).fetchall():
            found[(kind, name)] = ("not in schema main",)  # never equal to anything kvreport writes
    return found


def foreign_objects(found: dict, expected: dict) -> list[str]:
    """The objects of `found` that are not in `expected` exactly, as 'view runs', in name order. A table
    that kvreport's schema has as a view (or the other way round) is foreign too."""
    return sorted(f"{kind} {shown_name(name)}" for (kind, name), detail in found.items()
                  if (kind, name) not in expected or expected[(kind, name)] != detail)


def shown_name(name: str, limit: int = 60) -> str:
    """A name from a file as a message shows it: quoted, control bytes escaped, cut when absurdly long."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(name))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def described(objects: Iterable[str], limit: int = 8) -> str:
    objects = list(objects)
    more = f" and {len(objects) - limit} more" if len(objects) > limit else ""
    return ", ".join(objects[:limit]) + more


def seal(con, writable: Iterable[str] = ()) -> None:
    """Lock a connection that reads a DB from elsewhere: no file access but the DB itself and the folders in
    `writable` (where an export writes), no extension, no configuration change after this."""
    folders = [str(w).rstrip("/") + "/" for w in writable]
    con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
