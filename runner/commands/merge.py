"""`kvreport merge`: several DB files (e.g. an H100 run and an H200 run) into one, for one site."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.merge import merge as merge_dbs


def merge(
    dbs: Annotated[list[Path], typer.Argument(help="DuckDB files to merge (older schemas are read migrated).")],
    into: Annotated[Path, typer.Option("--into", help="DuckDB file to merge into (created if missing).")],
):
    """Copy every run and audit of DBS into INTO, renumbering ids; runs INTO already holds are skipped."""
    for r in merge_dbs(dbs, into):
        typer.echo(f"{r.source}: {r.runs_added} run(s) added, {r.runs_present} already present; "
                   f"{r.audits_added} audit(s) added, {r.audits_present} already present")
    typer.echo(f"-> {into}")


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
