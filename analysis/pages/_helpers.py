"""What several pages need, shared here rather than by importing one page from another."""
from __future__ import annotations


def skip_notes(q, experiment: str) -> list[dict]:
    """The runs in which `experiment` (or the device ceilings it is measured against) did not produce data."""
    return [s for s in q("ceilings_experiment_status", experiment=experiment) if s["status"] != "ok"]


def config_key(run: dict) -> tuple:
    """A configuration: device, model and dtype. Runs of one configuration supersede each other."""
    return (run.get("device_name") or "", run.get("model") or "", run.get("dtype") or "")


def latest_per_config(run_ids, site) -> set[int]:
    """The newest run of each configuration among `run_ids`."""
    latest: dict[tuple, int] = {}
    for rid in run_ids:
        key = config_key(site.run(rid) or {})
        latest[key] = max(latest.get(key, rid), rid)
    return set(latest.values())


def newest_first(rows: list[dict]) -> list[int]:
    """The run ids of `rows`, newest first (the newest runs get a chart; every run is in the tables)."""
    return sorted({r["run_id"] for r in rows}, reverse=True)
