"""What several pages need, shared here rather than by importing one page from another."""
from __future__ import annotations

from kvreport.analysis.site import Table

# A topic page's claims table (templates/_table.html claims_table): the ledger's columns a reader scans.
CLAIM_TABLE_COLUMNS = [("claim", "claim", "text"), ("verdict", "verdict", "verdict"), ("seed_value", "seed", "text"),
                       ("measured_value", "measured", "text"), ("run_id", "run", "int"),
                       ("device_kind", "device", "text"), ("reasoning", "why", "text")]


def skip_notes(q, experiment: str) -> list[dict]:
    """The runs in which `experiment` (or the device ceilings it is measured against) did not produce data."""
    return [s for s in q("ceilings_experiment_status", experiment=experiment) if s["status"] != "ok"]


def newest_first(rows: list[dict]) -> list[int]:
    """The run ids of `rows`, newest first (the newest runs get a chart; every run is in the tables)."""
    return sorted({r["run_id"] for r in rows}, reverse=True)


def claims_table(rows: list[dict], caption: str, table_id: str) -> Table:
    """A topic page's claims: the ledger's rows of its claim query (analysis/claims.for_query)."""
    return Table(table_id, rows, CLAIM_TABLE_COLUMNS, caption=caption, keep=("claim", "verdict", "run_id"))
