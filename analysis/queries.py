"""Named SQL queries, one `.sql` file each in analysis/queries/. The build fails if any query fails.

Queries take only bound parameters ($run_id and friends), never string formatting, because the values
(model names, session ids, paths) may come from untrusted logs. Words shared with Python (the verdicts of
analysis/verdicts.py) are parameters too ($confirmed, ...): each statement declares the parameters it reads, and
`Queries` binds those of its `constants` a statement declares, beside the page's own.

Some pages union every query whose name starts with a prefix (claim_*, headline_*, compare_*), so a new
topic is a new .sql file and nothing else; `union` checks each one returns the agreed columns.

The folder is an argument (a Path, or QUERY_DIR, the package's own resource folder, by default), so a test or
another program can add or replace a query without patching this module.
"""
from __future__ import annotations

from importlib import resources
from typing import Mapping

from kvreport.runner.core import sqltext
from kvreport.runner.core.errors import UserError

from .verdicts import SQL_PARAMETERS


class QueryError(UserError):
    pass


QUERY_DIR = resources.files("kvreport.analysis") / "queries"


def shown_path(name: str, folder=QUERY_DIR) -> str:
    """How errors name a query's file: analysis/queries/<name>.sql, or the path in another folder."""
    return f"analysis/queries/{name}.sql" if folder == QUERY_DIR else str(folder / f"{name}.sql")


def sql_text(name: str, folder=QUERY_DIR) -> str:
    if not sqltext.path_of(folder, name).is_file():
        raise QueryError(f"{shown_path(name, folder)}: no such query")
    return sqltext.read(folder, name)


def all_query_names(folder=QUERY_DIR) -> list[str]:
    # `_*.sql` are not queries: _macros.sql defines helpers for the others; claim_*.sql include _claim_ledger.sql.
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".sql") and not p.name.startswith("_"))


def names_with_prefix(prefix: str, folder=QUERY_DIR) -> list[str]:
    return [n for n in all_query_names(folder) if n.startswith(prefix)]


class Queries:
    """Runs the named queries of `folder` against one open DuckDB connection and keeps what each returned.
    `constants` are bound wherever a statement declares them (by default the verdict words)."""

    def __init__(self, con, folder=QUERY_DIR, constants: Mapping[str, object] = SQL_PARAMETERS):
        self.con = con
        self.folder = folder
        self.constants = dict(constants)
        for statement in sqltext.split(sql_text("_macros", folder)):
            con.execute(statement.query)
        self.ran: dict[str, int] = {}
        self._cache: dict[tuple, list[dict]] = {}
        self._columns: dict[str, list[str]] = {}

    def __call__(self, name: str, **params) -> list[dict]:
        # Pages share queries (runs, the claim union): run each (name, params) once per build.
        key = (name, tuple(sorted(params.items())))
        if key in self._cache:
            return [dict(r) for r in self._cache[key]]
        try:
            statement = self._statement(name)
            declared = statement.names
            bound = {**{k: v for k, v in self.constants.items() if k in declared}, **params}
            cur = self.con.execute(statement.query, bound or None)
            cols = [d[0] for d in cur.description]
            rows = [dict(zip(cols, r)) for r in cur.fetchall()]
        except QueryError:
            raise
        except Exception as exc:  # noqa: BLE001 - any SQL failure stops the build with the query's name
            raise QueryError(f"{self.where(name)} failed: {str(exc).splitlines()[0]}") from None
        self.ran[name] = len(rows)
        self._cache[key] = rows
        self._columns[name] = cols
        return [dict(r) for r in rows]

    def where(self, name: str) -> str:
        """The query's file as errors name it."""
        return shown_path(name, self.folder)

    def names_with_prefix(self, prefix: str) -> list[str]:
        return names_with_prefix(prefix, self.folder)

    def _statement(self, name: str) -> sqltext.Statement:
        """The one statement of <folder>/<name>.sql, parsed (it declares its named parameters)."""
        statements = sqltext.split(sql_text(name, self.folder))
        if len(statements) != 1:
            raise QueryError(f"{self.where(name)}: holds {len(statements)} statements; a query is one")
        return statements[0]

    def one(self, name: str, **params) -> dict | None:
        rows = self(name, **params)
        return rows[0] if rows else None

    def columns(self, name: str, **params) -> list[str]:
        """The column names a query returns (even when it returns no rows)."""
        self(name, **params)
        return list(self._columns[name])

    def union(self, prefix: str, columns: list[str], exact: bool = False) -> list[dict]:
        """Rows of every query named `<prefix>*`, each tagged with `query`. Each query must return
        `columns` (those and no others, in any order, when `exact`); otherwise the build stops naming it."""
        out = []
        for name in self.names_with_prefix(prefix):
            rows = self(name)
            got = self.columns(name)
            extra = [c for c in got if c not in columns]
            if exact and extra:
                raise QueryError(f"{self.where(name)}: unexpected column(s) {', '.join(extra)} "
                                 f"(every {prefix}*.sql returns exactly {', '.join(columns)})")
            missing = [c for c in columns if c not in got]
            if missing:
                raise QueryError(f"{self.where(name)}: missing column(s) {', '.join(missing)} "
                                 f"(every {prefix}*.sql returns {', '.join(columns)})")
            for row in rows:
                out.append({**row, "query": name})
        return out
