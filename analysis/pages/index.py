"""Overview: the runs in the DB with their environment, headline findings, what was skipped and why."""
from __future__ import annotations

from analysis.site import PageSpec

PAGE = PageSpec(slug="index", title="Overview", order=0)


def context(q, site) -> dict:
    runs = q("runs")
    statuses = q("experiment_status")
    headline = q("memory_bytes_per_token")
    return {
        "runs": runs,
        "skipped": [s for s in statuses if s["status"] != "ok"],
        "statuses": statuses,
        "memory_headline": headline,
    }
