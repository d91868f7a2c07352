"""`kvreport findings`: the headline findings of every run, as the overview page shows them, then the claims
ledger's and the run-to-run comparison's own one-line answers."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..core.errors import UserError
from ..core.store import Store, StoreError, current_schema_copy, is_damage, shown


def findings_of(db: Path) -> tuple[list[dict], list[int]]:
    """Every headline row (the overview's reader, analysis/headlines.py), sorted by run, then the ledger's and
    the comparison's answers (no run); and the run ids the DB holds."""
    # The analysis is imported here, not at the top: every other command starts without it.
    from kvreport.analysis import claims, regressions
    from kvreport.analysis.headlines import headlines
    from kvreport.analysis.queries import Queries
    from kvreport.analysis.site import page_modules

    # An older DB is read through a migrated copy, so every query finds today's tables.
    with current_schema_copy(db) as current, Store(current, read_only=True) as store:
        q = Queries(store.con)
        try:
            runs = q("run_configs")  # run ids and configurations only: claims and regressions read no more
            run_ids = [r["run_id"] for r in runs]
            rows = headlines(q, run_ids, {m.PAGE.slug: m.PAGE.order for m in page_modules()})
            ledger = claims.current(claims.ledger(q, run_ids), runs)
            metrics = regressions.metrics(q, run_ids)
        except Exception as exc:  # noqa: BLE001 - a damaged block shows only when a query reads it
            cause = exc.__cause__ or exc.__context__ or exc
            if not (is_damage(cause) or "corrupt database file" in str(exc).lower()):
                raise
            raise StoreError(f"{shown(db)}: the DB file is damaged ({str(exc).strip().splitlines()[0]})") from None
    found, n_compared = regressions.changes(metrics, runs)
    overall = [a for a in (claims.answer(ledger),
                           regressions.answer(found, n_compared, runs, len({m["run_id"] for m in metrics}))) if a]
    return sorted(rows, key=lambda r: r["run_id"] or 0) + overall, run_ids


def findings(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    run_id: Annotated[int | None, typer.Option("--run", help="Only this run.")] = None,
):
    """Print the headline findings (one sentence and one number each) per run, then the claims ledger's and
    the comparison's."""
    all_rows, run_ids = findings_of(db)
    if run_id is not None and run_id not in run_ids:
        raise UserError(f"{db}: has no run {run_id} (see `kvreport findings --db {db}` for the runs it holds)")
    rows = [r for r in all_rows if run_id is None or r["run_id"] == run_id]
    if not rows:
        typer.echo("no findings yet")
        return
    for r in rows:
        value = r["value"]
        number = "–" if value is None else (f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}")
        # A demonstration shows the mechanism on generated traffic or an arbitrary ceiling: not a finding.
        demo = f"  [demonstration: {r['demonstration']}]" if r.get("demonstration") else ""
        # A row of no run: an audit stored on its own (its own figures), else a figure over every run.
        where = f"run {r['run_id']}" if r["run_id"] is not None else \
            ("audit" if (r.get("page") or "").startswith("audit") else "all runs")
        typer.echo(f"{where}  {number:>12} {r['unit'] or '':<10} {r['finding']}{demo}")


def register(app: typer.Typer) -> None:
    app.command("findings")(findings)
