"""Run the audit's .sql files (runner/audit/sql/STAGE/NAME.sql, named "STAGE/NAME") with named parameters.

A file may hold several statements; DuckDB's own parser splits them (extract_statements), so a `;` in a
string or a comment cannot cut one. Each statement declares its parameters by naming them (`$audit_id`):
DuckDB's parser lists them, and the statement gets exactly those, taken from the parameters it is run with
(a missing one is an error naming the file; extra ones are simply not passed, DuckDB refuses them). Values
always travel as bound parameters, never pasted into the text, because they come from log files.

A file may include another's text (`{include:STAGE/NAME}`: runner/core/sqltext.py, the project's one SQL
loader). There are two exceptions to bound values:
- column lists (and the names of the audit's own tables), which are identifiers: a statement may hold `{name}`
  placeholders that `run_sql(..., columns=...)` fills with column names read from the DB's own schema (never
  from a log);
- file paths where DuckDB takes no parameter: a COPY's target (a bound one only from DuckDB 1.4, and 1.5
  fails to find its files: duckdb/duckdb#21578) and the files a view reads (a view keeps no parameters).
  `{path:NAME}` is filled by `run_sql(..., paths={NAME: path or list of paths}, scratch=FOLDER)`: each path
  must lie inside FOLDER, the scratch folder the caller made (so only files kvreport itself names there), and
  is written as one SQL string literal (a list as a list literal), its single quotes doubled, so no character
  of a path can end the literal (tests/test_sqlfiles.py).
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core import sqltext

_PATH = re.compile(r"\{path:(\w+)\}")
SQL = resources.files("kvreport.runner.audit") / "sql"


@lru_cache(maxsize=None)
def _filled(name: str, columns: tuple[tuple[str, str], ...]) -> str:
    text = sqltext.read(SQL, name)
    for key, value in columns:
        text = text.replace("{" + key + "}", value)
    return text


@lru_cache(maxsize=None)
def statements(name: str, columns: tuple[tuple[str, str], ...] = ()) -> tuple[sqltext.Statement, ...]:
    """(statement text, its named parameters) for each statement of sql/<name>.sql, with its `{placeholder}`
    column lists filled from `columns` ((placeholder, column list) pairs)."""
    text = _filled(name, columns)
    if _PATH.search(text):
        raise KeyError(f"sql/{name}.sql needs paths= for its {{path:...}} placeholders")
    return sqltext.split(text)


@lru_cache(maxsize=None)
def _inline(text: str) -> tuple[sqltext.Statement, ...]:
    return sqltext.split(text)


def run_text(con, text: str, **params: Any):
    """Execute one of the audit's inline statements (steps.Statement: a setting, a transaction's end) with the
    parameters it names; returns the cursor."""
    cur = None
    for stmt in _inline(text):
        cur = con.execute(stmt.query, sqltext.bound(stmt, params, repr(text)))
    return cur


def _literal(path, scratch: Path, name: str) -> str:
    """One path as an SQL string literal, refused unless it lies inside `scratch`. Resolved first, so neither
    `..` nor a symbolic link leads out, and the literal names the very file that was checked."""
    resolved = Path(path).resolve()
    if resolved == scratch or scratch not in resolved.parents:
        raise ValueError(f"sql/{name}.sql: {path} is not inside the scratch folder {scratch}")
    return "'" + str(resolved).replace("'", "''") + "'"


def _with_paths(name: str, columns: tuple[tuple[str, str], ...], paths: dict, scratch) -> str:
    """sql/<name>.sql's text with its `{path:NAME}` placeholders filled from `paths` (see the module's docstring).
    Not cached: the paths differ on every call."""
    if scratch is None:
        raise ValueError(f"sql/{name}.sql: paths need the scratch folder they must lie in")
    root = Path(scratch).resolve()

    def fill(m: re.Match) -> str:
        if m.group(1) not in paths:
            raise KeyError(f"sql/{name}.sql needs the path {m.group(1)}")
        value = paths[m.group(1)]
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(_literal(v, root, name) for v in value) + "]"
        return _literal(value, root, name)

    return _PATH.sub(fill, _filled(name, columns))


def run_sql(con, name: str, columns: dict[str, str] | None = None, *, paths: dict | None = None,
            scratch: str | Path | None = None, **params):
    """Execute every statement of sql/<name>.sql; returns the cursor of the last one. `paths` and `scratch`:
    the `{path:NAME}` placeholders' files and the folder they must lie in (see the module's docstring)."""
    cur = None
    cols = tuple(sorted((columns or {}).items()))
    stmts = statements(name, cols) if paths is None else sqltext.split(_with_paths(name, cols, paths, scratch))
    for stmt in stmts:
        cur = con.execute(stmt.query, sqltext.bound(stmt, params, f"sql/{name}.sql"))
    return cur


def rows(con, name: str, **params) -> list[dict]:
    """The rows of sql/<name>.sql's last statement, as dicts."""
    cur = run_sql(con, name, **params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def one(con, name: str, **params) -> dict | None:
    """The first row of sql/<name>.sql's last statement, as a dict (None: no row)."""
    cur = run_sql(con, name, **params)
    cols = [d[0] for d in cur.description]
    row = cur.fetchone()
    return None if row is None else dict(zip(cols, row))


def the_row(con, name: str, **params) -> dict:
    """The one row of sql/<name>.sql's last statement (an aggregate, or a row the audit wrote), as a dict."""
    row = one(con, name, **params)
    if row is None:
        raise LookupError(f"sql/{name}.sql returned no row")
    return row


def value(con, name: str, **params):
    """The first column of the first row of sql/<name>.sql's last statement (None: no row)."""
    row = run_sql(con, name, **params).fetchone()
    return None if row is None else row[0]
