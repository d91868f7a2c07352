"""`kvreport export`: every table of the DB as one CSV or Parquet file named after the table."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import UserError
from ..core.store import current_schema_copy, Store
from ..core.table_names import SEED_NAMES


def export(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("export"),
    format: Annotated[str, typer.Option("--format", help="csv or parquet.")] = "csv",
    layout: Annotated[str, typer.Option(help="tables: files named after the tables; seed: the profiler's own "
                                        "file names (kv_memory_v2.csv and the rest) for comparing with it.")]
    = "tables",
):
    """Write one file per table (allocator_memory.csv, cache_tensors.csv, kv_per_layer.csv, ...)."""
    if layout not in ("tables", "seed"):
        raise UserError(f"--layout {layout}: expected tables or seed")
    with current_schema_copy(db) as current, Store(current, read_only=True, writable=[out]) as store:
        for path in store.export_tables(out, format, SEED_NAMES if layout == "seed" else None):
            typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("export")(export)
