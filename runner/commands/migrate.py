"""`kvreport migrate`: bring a DB written by an older kvreport to today's schema, in place."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import UserError
from ..core.migrations import SCHEMA_VERSION
from ..core.store import Store


def migrate(db: Annotated[Path, typer.Argument(help="DuckDB file to upgrade.")]):
    """Upgrade DB to the current schema in one transaction, keeping a backup copy of the old file."""
    if not db.exists():
        raise UserError(f"{db}: no such DB file")
    with Store(db) as store:
        if store.backup is None:
            typer.echo(f"{db}: already at schema {SCHEMA_VERSION}; nothing to do")
        else:
            typer.echo(f"{db}: migrated to schema {SCHEMA_VERSION} (the old file is kept as {store.backup})")


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
