"""What several pages need, shared here rather than by importing one page from another."""
from __future__ import annotations

from kvreport.analysis.site import Table

# A topic page's claims table (templates/_table.html claims_table): the ledger's columns a reader scans.
CLAIM_TABLE_COLUMNS = [("claim", "claim", "text"), ("verdict", "verdict", "verdict"), ("seed_value", "claimed", "text"),
                       ("measured_value", "measured", "text"), ("run_id", "run", "int"),
                       ("device_kind", "device", "text"), ("reasoning", "why", "text")]


def skip_notes(q, experiment: str) -> list[dict]:
    """The runs in which `experiment` (or the device ceilings it is measured against) did not produce data."""
    return [s for s in q("ceilings_experiment_status", experiment=experiment) if s["status"] != "ok"]


MAX_CHARTS = 4  # the newest runs get a chart; every run is in the tables


def newest_first(rows: list[dict]) -> list[int]:
    """The run ids of `rows`, newest first (the newest runs get a chart; every run is in the tables)."""
    return sorted({r["run_id"] for r in rows}, reverse=True)


def charts_per_run(rows: list[dict], chart, site, run_ids: list[int] | None = None) -> tuple[list, int]:
    """One chart per run for the newest MAX_CHARTS runs: chart(run_id, that run's rows, its label). Returns the
    charts and how many older runs have none (the page says so)."""
    run_ids = newest_first(rows) if run_ids is None else run_ids
    charts = [chart(rid, [r for r in rows if r["run_id"] == rid], site.run_label(rid)) for rid in run_ids[:MAX_CHARTS]]
    return charts, len(run_ids) - len(charts)


def claims_table(rows: list[dict], caption: str, table_id: str) -> Table:
    """A topic page's claims: the ledger's rows of its claim query (analysis/claims.for_query)."""
    return Table(table_id, rows, CLAIM_TABLE_COLUMNS, caption=caption, keep=("claim", "verdict", "run_id"))
