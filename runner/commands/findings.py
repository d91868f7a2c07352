"""`kvreport findings`: the headline findings of every run, as the overview page shows them, then the claims
ledger's and the run-to-run comparison's own one-line answers."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..core.errors import StoreError, UserError
from ..core.errors import shown as shown_path
from ..core.store import Store, current_schema_copy, is_damage

RUN_ID_MAX = 2**31 - 1  # runs.run_id is a DuckDB INTEGER: no run has a larger id

if TYPE_CHECKING:
    from kvreport.analysis.runs import Shown


def findings_of(db: Path, run_id: int | None = None) -> tuple[list[dict], Shown]:
    """Every headline row (the overview's reader, analysis/headlines.py) of the runs the site would show
    (analysis/runs.py: the newest, the newest of each configuration) and of run `run_id`, sorted by run, then
    the ledger's and the comparison's answers over them (no run); and which runs those are."""
    # The analysis is imported here, not at the top: every other command starts without it.
    from kvreport.analysis import claims, regressions
    from kvreport.analysis.headlines import headlines
    from kvreport.analysis.queries import Queries
    from kvreport.analysis.runs import restrict, run_configs, shown
    from kvreport.analysis.site import page_modules

    if run_id is not None and not 1 <= run_id <= RUN_ID_MAX:  # the queries would fail casting it
        raise UserError(f"{shown_path(db)}: has no run {run_id} (--run takes 1 to {RUN_ID_MAX:,}; see "
                        f"`kvreport findings --db {db}` for the runs it holds)")
    # An older DB is read through a migrated copy, so every query finds today's tables.
    with current_schema_copy(db) as current, Store(current, read_only=True) as store:
        try:
            # Only the shown runs are read (a DB may hold a million): TEMP views narrow every table to them.
            what = shown(store.con, [] if run_id is None else [run_id])
            restrict(store.con, what)
            q = Queries(store.con)
            runs = run_configs(store.con)  # ids and configurations only: claims and regressions read no more
            rows = headlines(q, what.run_ids, {m.PAGE.slug: m.PAGE.order for m in page_modules()})
            ledger = claims.current(claims.ledger(q, what.run_ids), runs)
            metrics = regressions.metrics(q, what.run_ids)
        except Exception as exc:  # noqa: BLE001 - a damaged block shows only when a query reads it
            cause = exc.__cause__ or exc.__context__ or exc
            if not (is_damage(cause) or "corrupt database file" in str(exc).lower()):
                raise
            raise StoreError(f"{shown_path(db)}: the DB file is damaged ({str(exc).strip().splitlines()[0]})") \
                from None
    found, n_compared = regressions.changes(metrics, runs)
    overall = [a for a in (claims.answer(ledger),
                           regressions.answer(found, n_compared, runs, len({m["run_id"] for m in metrics}))) if a]
    return sorted(rows, key=lambda r: r["run_id"] or 0) + overall, what


def findings(
    db: Annotated[Path, typer.Option(help="DuckDB file written by `kvreport run`.")] = Path("kvreport.duckdb"),
    run_id: Annotated[int | None, typer.Option("--run", help="Only this run.")] = None,
):
    """Print the headline findings (one sentence and one number each) per run, then the claims ledger's and
    the comparison's."""
    all_rows, what = findings_of(db, run_id)
    if run_id is not None and run_id not in what.run_ids:
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
    if run_id is None and what.summary():
        typer.echo(f"(findings of {what.summary()}; `--run ID` prints any one run's, `kvreport export` writes "
                   "every row)")


def register(app: typer.Typer) -> None:
    app.command("findings")(findings)
