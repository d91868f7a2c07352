"""`kvreport build`: render the static site from the DuckDB file."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def build(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    out: Annotated[Path, typer.Option(help="Folder to write the site into.")] = Path("site"),
):
    """Run every query in analysis/ and render the pages into OUT."""
    from kvreport.analysis.site import build_site  # here, not at the top: every other command starts without it

    pages = build_site(db, out)
    typer.echo(f"built {len(pages)} pages into {out}/ (open {out}/index.html)")


def register(app: typer.Typer) -> None:
    app.command("build")(build)
