"""What several pages need, shared here rather than by importing one page from another."""
from __future__ import annotations


def skip_notes(q, experiment: str) -> list[dict]:
    """The runs in which `experiment` (or the device ceilings it is measured against) did not produce data."""
    return [s for s in q("ceilings_experiment_status", experiment=experiment) if s["status"] != "ok"]


def newest_first(rows: list[dict]) -> list[int]:
    """The run ids of `rows`, newest first (the newest runs get a chart; every run is in the tables)."""
    return sorted({r["run_id"] for r in rows}, reverse=True)
