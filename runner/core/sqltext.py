"""The project's one way to read and run `.sql` files (the audit's, the analysis queries, the schema steps).

`read` gives a file's text (`{include:NAME}` replaced by the text of NAME.sql of the same folder, less its
trailing `;`); `split` cuts text into statements with DuckDB's own parser (so a `;` in a string or a comment
cannot cut one), each with the named parameters it declares (`$audit_id`); `bound` picks exactly those from
the values a caller has (a missing one is an error naming the file). Values always travel as bound
parameters, never pasted into the text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Mapping, NamedTuple

if TYPE_CHECKING:
    from importlib.abc import Traversable
    from pathlib import Path

    Folder = Path | Traversable

_INCLUDE = re.compile(r"\{include:([\w/]+)\}")


class Statement(NamedTuple):
    query: str  # the statement's text
    names: tuple[str, ...]  # the named parameters it declares, sorted


def path_of(folder: Folder, name: str) -> Folder:
    """<folder>/<name>.sql, where `name` may hold sub-folders ("STAGE/NAME")."""
    *folders, file = name.split("/")
    path = folder
    for sub in folders:
        path = path / sub
    return path / f"{file}.sql"


def read(folder: Folder, name: str) -> str:
    """The text of <folder>/<name>.sql, each `{include:OTHER}` replaced by <folder>/OTHER.sql's text."""
    text = path_of(folder, name).read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: read(folder, m.group(1)).rstrip().rstrip(";"), text)


def split(text: str) -> tuple[Statement, ...]:
    """Every statement of `text`, as DuckDB's parser cuts it, with the named parameters each declares."""
    import duckdb  # here, not at import: commands that never run SQL do not pay for it

    return tuple(Statement(st.query, tuple(sorted(st.named_parameters))) for st in duckdb.extract_statements(text))


def bound(statement: Statement, values: Mapping[str, object], where: str) -> dict[str, object] | None:
    """The parameters `statement` declares, taken from `values` (None: it declares none). `where` names the
    statement's file in the error a missing value raises."""
    missing = [k for k in statement.names if k not in values]
    if missing:
        raise KeyError(f"{where} needs the parameter(s) {', '.join(missing)}")
    return {k: values[k] for k in statement.names} or None
