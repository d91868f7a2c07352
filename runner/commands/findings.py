"""`kvreport findings`: the headline findings of every run, as the overview page shows them."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def headline_rows(db: Path) -> list[dict]:
    from analysis.queries import Queries, all_query_names
    from analysis.site import connect

    from ..store import Store

    Store(db, read_only=True).close()  # validates: exists, is a kvreport DB, schema not newer
    con = connect(db)  # stand-ins for tables an older DB lacks, so every headline query runs
    try:
        q = Queries(con)
        rows = []
        for name in all_query_names():
            if name.startswith("headline_"):
                rows.extend(q(name))
    finally:
        con.close()
    return sorted(rows, key=lambda r: (r["run_id"] or 0, r.get("page") or "", r["finding"]))


def findings(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    run_id: Annotated[int | None, typer.Option("--run", help="Only this run.")] = None,
):
    """Print the headline findings (one sentence and one number each) per run."""
    rows = [r for r in headline_rows(db) if run_id is None or r["run_id"] == run_id]
    if not rows:
        typer.echo("no findings yet")
        return
    for r in rows:
        value = r["value"]
        shown = "–" if value is None else (f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}")
        typer.echo(f"run {r['run_id']}  {shown:>12} {r['unit'] or '':<10} {r['finding']}")


def register(app: typer.Typer) -> None:
    app.command("findings")(findings)
