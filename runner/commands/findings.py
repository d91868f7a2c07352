"""`kvreport findings`: the headline findings of every run, as the overview page shows them."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def headline_rows(db: Path) -> list[dict]:
    from kvreport.analysis.queries import Queries, names_with_prefix

    from ..core.store import Store, StoreError, current_schema_copy, is_damage, shown

    # An older DB is read through a migrated copy, so every headline query finds today's tables.
    with current_schema_copy(db) as current, Store(current, read_only=True) as store:
        q = Queries(store.con)
        try:
            rows = [row for name in names_with_prefix("headline_") for row in q(name)]
        except Exception as exc:  # noqa: BLE001 - a damaged block shows only when a query reads it
            cause = exc.__cause__ or exc.__context__ or exc
            if not (is_damage(cause) or "corrupt database file" in str(exc).lower()):
                raise
            raise StoreError(f"{shown(db)}: the DB file is damaged ({str(exc).strip().splitlines()[0]})") from None
    return sorted(rows, key=lambda r: (r["run_id"] or 0, r.get("page") or "", r["finding"]))


def findings(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    run_id: Annotated[int | None, typer.Option("--run", help="Only this run.")] = None,
):
    """Print the headline findings (one sentence and one number each) per run."""
    all_rows = headline_rows(db)
    rows = [r for r in all_rows if run_id is None or r["run_id"] == run_id]
    if run_id is not None and not rows:
        from ..core.errors import UserError
        from ..core.store import Store, current_schema_copy

        with current_schema_copy(db) as current, Store(current, read_only=True) as store:
            exists = store.query("SELECT 1 AS x FROM runs WHERE run_id = ?", [run_id])
        if not exists:
            raise UserError(f"{db}: has no run {run_id} (see `kvreport findings --db {db}` for the runs it holds)")
    if not rows:
        typer.echo("no findings yet")
        return
    for r in rows:
        value = r["value"]
        shown = "–" if value is None else (f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}")
        # A demonstration shows the mechanism on generated traffic or an arbitrary ceiling: not a finding.
        demo = f"  [demonstration: {r['demonstration']}]" if r.get("demonstration") else ""
        typer.echo(f"run {r['run_id']}  {shown:>12} {r['unit'] or '':<10} {r['finding']}{demo}")


def register(app: typer.Typer) -> None:
    app.command("findings")(findings)
