"""Run the audit's .sql files (runner/audit/sql/STAGE/NAME.sql, named "STAGE/NAME") with named parameters.

A file may hold several statements; DuckDB's own parser splits them (extract_statements), so a `;` in a
string or a comment cannot cut one. Each statement declares its parameters by naming them (`$audit_id`):
DuckDB's parser lists them, and the statement gets exactly those, taken from the parameters it is run with
(a missing one is an error naming the file; extra ones are simply not passed, DuckDB refuses them). Values
always travel as bound parameters, never pasted into the text, because they come from log files.

A file may include another's text (`{include:STAGE/NAME}`, see _text). The one exception to bound values is
column lists, which are identifiers: a statement may hold `{name}` placeholders that `run_sql(...,
columns=...)` fills with column names read from the DB's own schema (never from a log).
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import duckdb


_INCLUDE = re.compile(r"\{include:([\w/]+)\}")


def _text(name: str) -> str:
    """sql/<name>.sql, with each `{include:OTHER}` replaced by sql/OTHER.sql (less its trailing `;`): the way
    two statements share one part, such as the checks of two readers of the same format."""
    *folders, file = name.split("/")
    path = resources.files("kvreport.runner.audit") / "sql"
    for folder in folders:
        path = path / folder
    text = (path / f"{file}.sql").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: _text(m.group(1)).rstrip().rstrip(";"), text)


@lru_cache(maxsize=None)
def statements(name: str, columns: tuple[tuple[str, str], ...] = ()) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(statement text, its named parameters) for each statement of sql/<name>.sql, with its `{placeholder}`
    column lists filled from `columns` ((placeholder, column list) pairs)."""
    text = _text(name)
    for key, value in columns:
        text = text.replace("{" + key + "}", value)
    return tuple((st.query, tuple(sorted(st.named_parameters))) for st in duckdb.extract_statements(text))


def run_sql(con, name: str, columns: dict[str, str] | None = None, **params):
    """Execute every statement of sql/<name>.sql; returns the cursor of the last one."""
    cur = None
    for stmt, names in statements(name, tuple(sorted((columns or {}).items()))):
        missing = [k for k in names if k not in params]
        if missing:
            raise KeyError(f"sql/{name}.sql needs the parameter(s) {', '.join(missing)}")
        cur = con.execute(stmt, {k: params[k] for k in names} or None)
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


def value(con, name: str, **params):
    """The first column of the first row of sql/<name>.sql's last statement (None: no row)."""
    row = run_sql(con, name, **params).fetchone()
    return None if row is None else row[0]
