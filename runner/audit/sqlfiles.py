"""Run the .sql files in runner/audit/sql/ with named parameters.

A file may hold several statements; DuckDB's own parser splits them (extract_statements), so a `;` in a
string or a comment cannot cut one. Every statement gets exactly the `$name` parameters DuckDB finds in
it: it refuses extra ones. Values always travel as bound
parameters, never pasted into the text, because they come from log files.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def statements(name: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(statement text, its named parameters) for each statement of sql/<name>.sql."""
    import duckdb

    text = (resources.files("kvreport.runner.audit") / "sql" / f"{name}.sql").read_text(encoding="utf-8")
    return tuple((st.query, tuple(sorted(st.named_parameters))) for st in duckdb.extract_statements(text))


def run_sql(con, name: str, **params):
    """Execute every statement of sql/<name>.sql; returns the cursor of the last one."""
    cur = None
    for stmt, names in statements(name):
        cur = con.execute(stmt, {k: params[k] for k in names} or None)
    return cur
