"""Runs as configurations: the device, model and dtype a run measured. A later run of one configuration
supersedes the earlier ones on the pages (the comparison shows how they changed; the CSVs keep them)."""
from __future__ import annotations


def config_key(run: dict) -> tuple:
    """A configuration: device, model and dtype. Runs of one configuration supersede each other."""
    return (run.get("device_name") or "", run.get("model") or "", run.get("dtype") or "")


def latest_per_config(run_ids, runs: list[dict]) -> set[int]:
    """The newest run of each configuration among `run_ids`; `runs` are the rows of queries/runs.sql."""
    by_id = {r["run_id"]: r for r in runs}
    latest: dict[tuple, int] = {}
    for rid in run_ids:
        key = config_key(by_id.get(rid, {}))
        latest[key] = max(latest.get(key, rid), rid)
    return set(latest.values())
