"""`kvreport export`: every table of the DB as one CSV or Parquet file named after the table."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import UserError


def export_tables(db: Path, out: Path, fmt: str = "csv") -> list[Path]:
    from ..store import Store

    if fmt not in ("csv", "parquet"):
        raise UserError(f"--format {fmt}: expected csv or parquet")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot create output folder ({exc.strerror})") from None
    written = []
    with Store(db, read_only=True) as store:
        for table in store.tables():
            if table == "kvreport_meta":
                continue
            path = out / f"{table}.{fmt}"
            # ORDER BY ALL: stable row order, so the same DB exports byte-identical files.
            opts = "(HEADER, DELIMITER ',')" if fmt == "csv" else "(FORMAT PARQUET)"
            store.con.execute(f"COPY (SELECT * FROM {table} ORDER BY ALL) TO '{_sql_path(path)}' {opts}")
            written.append(path)
    return written


def _sql_path(path: Path) -> str:
    # COPY cannot take a bound parameter for its target, so quote the path ourselves.
    return str(path).replace("'", "''")


def export(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("export"),
    format: Annotated[str, typer.Option("--format", help="csv or parquet.")] = "csv",
):
    """Write one file per table (kv_memory.csv, kv_memory_v2.csv, kv_per_layer.csv, ...)."""
    for path in export_tables(db, out, format):
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("export")(export)
