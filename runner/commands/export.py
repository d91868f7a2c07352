"""`kvreport export`: every table of the DB as one CSV or Parquet file named after the table."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.store import Store, current_schema_copy


def export(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("export"),
    format: Annotated[str, typer.Option("--format", help="csv or parquet.")] = "csv",
):
    """Write one file per table (kv_memory.csv, kv_memory_v2.csv, kv_per_layer.csv, ...)."""
    with current_schema_copy(db) as current, Store(current, read_only=True, writable=[out]) as store:
        for path in store.export_tables(out, format):
            typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("export")(export)
