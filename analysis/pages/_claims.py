"""The claims ledger: every claim_*.sql unioned and checked. Shared by the claims page and the overview."""
from __future__ import annotations

from kvreport.analysis.site import BuildError

from ._helpers import latest_per_config

CLAIM_COLUMNS = ["claim_id", "source", "claim", "seed_value", "seed_hardware", "run_id", "measured_value",
                 "verdict", "reasoning"]
VERDICTS = ["confirmed", "refuted", "differs by hardware", "expected", "not measured"]
SOURCES = {"profiler seed": "The earlier KV-cache profiler (RTX 2070)",
           "token article": "The token-allocation article"}


def ledger(q, site) -> list[dict]:
    rows = q.union("claim_", CLAIM_COLUMNS, exact=True)
    for r in rows:
        where = f"analysis/queries/{r['query']}.sql, claim {r['claim_id']!r}"
        if r["verdict"] not in VERDICTS:
            raise BuildError(f"{where}: verdict {r['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if r["run_id"] is not None and r["run_id"] not in site.run_ids:
            raise BuildError(f"{where}: run_id {r['run_id']} is not in the runs table")
        if not r["claim_id"] or not r["claim"]:
            raise BuildError(f"{where}: claim_id and claim must not be empty")
    return rows


def current(rows: list[dict], site) -> list[dict]:
    """The rows of the newest run of each configuration (and the no-run rows): earlier runs of the same
    configuration are superseded (the comparison page shows how they changed; the CSV keeps them)."""
    keep = latest_per_config(site.run_ids, site)
    return [r for r in rows if r["run_id"] is None or r["run_id"] in keep]


def verdict_counts(rows: list[dict]) -> list[tuple[str, int]]:
    counts = {v: 0 for v in VERDICTS}
    for r in rows:
        counts[r["verdict"]] += 1
    return [(v, n) for v, n in counts.items() if n]
