"""Named SQL queries, one `.sql` file each in analysis/queries/. The build fails if any query fails.

Queries take only bound parameters ($run_id and friends), never string formatting, because the values
(model names, session ids, paths) may come from untrusted logs.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

from runner.errors import UserError


class QueryError(UserError):
    pass


@lru_cache(maxsize=None)
def sql_text(name: str) -> str:
    path = resources.files("analysis") / "queries" / f"{name}.sql"
    if not path.is_file():
        raise QueryError(f"analysis/queries/{name}.sql: no such query")
    return path.read_text(encoding="utf-8")


def all_query_names() -> list[str]:
    folder = resources.files("analysis") / "queries"
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".sql"))


class Queries:
    """Runs named queries against one open DuckDB connection and keeps what each returned."""

    def __init__(self, con):
        self.con = con
        self.ran: dict[str, int] = {}

    def __call__(self, name: str, **params) -> list[dict]:
        try:
            cur = self.con.execute(sql_text(name), params or None)
            cols = [d[0] for d in cur.description]
            rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        except QueryError:
            raise
        except Exception as exc:  # noqa: BLE001 - any SQL failure stops the build with the query's name
            raise QueryError(f"analysis/queries/{name}.sql failed: {str(exc).splitlines()[0]}") from None
        self.ran[name] = len(rows)
        return rows

    def one(self, name: str, **params) -> dict | None:
        rows = self(name, **params)
        return rows[0] if rows else None
