"""Run the .sql files in runner/audit/sql/ with named parameters.

A file may hold several statements (each ending with `;` at the end of a line). Every statement gets
exactly the `$name` parameters it mentions: DuckDB refuses extra ones. Values always travel as bound
parameters, never pasted into the text, because they come from log files.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_END = re.compile(r";[ \t]*(?:\n|$)")


@lru_cache(maxsize=None)
def statements(name: str) -> tuple[str, ...]:
    text = (resources.files("kvreport.runner.audit") / "sql" / f"{name}.sql").read_text(encoding="utf-8")
    parts = [p.strip() for p in _END.split(text)]
    return tuple(p for p in parts if p and not all(line.strip().startswith("--") or not line.strip()
                                                    for line in p.splitlines()))


def run_sql(con, name: str, **params):
    """Execute every statement of sql/<name>.sql; returns the cursor of the last one."""
    cur = None
    for stmt in statements(name):
        used = {k: params[k] for k in dict.fromkeys(_PARAM.findall(stmt))}
        cur = con.execute(stmt, used or None)
    return cur
