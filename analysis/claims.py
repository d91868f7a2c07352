"""The claims ledger: every claim_*.sql unioned and checked, then one verdict rule applied to all of it in
SQL (analysis/queries/claims_verdicts.sql). Read by the claims page, the overview, the pages that show their
topic's claims and `kvreport findings`, so the same situation gets the same label everywhere."""
from __future__ import annotations

from .queries import Queries, QueryError
from .runs import latest_per_config
from .verdicts import VERDICTS, Verdict

# What every claim_*.sql returns (exactly these).
CLAIM_COLUMNS = ["claim_id", "source", "claim", "seed_value", "seed_hardware", "basis", "claim_on_gpu", "run_id",
                 "measured_value", "verdict", "reasoning"]
# What the ledger holds after the rule: the evidence run's device and the data's own verdict added.
LEDGER_COLUMNS = ["claim_id", "source", "claim", "seed_value", "seed_hardware", "basis", "claim_on_gpu", "run_id",
                  "device_kind", "measured_value", "verdict", "data_verdict", "reasoning"]
BASES = ("arithmetic", "measurement")
# The two source documents by their keys in the claim queries, as a heading names them; the overview says once
# what each is (templates/index.html, #sources).
SOURCES = {"profiler seed": "The profiler write-up", "token article": "The token-audit article"}
_SQL_TYPES = {"run_id": "INTEGER", "claim_on_gpu": "BOOLEAN", "ord": "INTEGER"}


class ClaimError(QueryError):
    """A claim query broke the ledger's contract (a verdict, basis or run it may not give)."""


def _raw_rows(q: Queries, run_ids) -> list[dict]:
    rows = q.union("claim_", CLAIM_COLUMNS, exact=True)
    for r in rows:
        where = f"{q.where(r['query'])}, claim {r['claim_id']!r}"
        if r["verdict"] not in VERDICTS:
            raise ClaimError(f"{where}: verdict {r['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if r["basis"] not in BASES:
            raise ClaimError(f"{where}: basis {r['basis']!r} is not one of {', '.join(BASES)}")
        if r["run_id"] is not None and r["run_id"] not in run_ids:
            raise ClaimError(f"{where}: run_id {r['run_id']} is not in the runs table")
        if not r["claim_id"] or not r["claim"]:
            raise ClaimError(f"{where}: claim_id and claim must not be empty")
    return rows


def ledger(q: Queries, run_ids) -> list[dict]:
    """Every claim row with the rule applied (LEDGER_COLUMNS plus `query`), in the claim queries' order.
    `run_ids`: the runs the DB holds (a claim row naming another run is an error)."""
    if "claims_verdicts" not in q.ran:
        rows = _raw_rows(q, set(run_ids))
        cols = CLAIM_COLUMNS + ["query", "ord"]
        q.con.execute("CREATE OR REPLACE TEMP TABLE claim_rows ({})".format(
            ", ".join(f"{c} {_SQL_TYPES.get(c, 'VARCHAR')}" for c in cols)))
        if rows:
            q.con.executemany(f"INSERT INTO claim_rows VALUES ({', '.join('?' for _ in cols)})",
                              [[r[c] for c in cols[:-1]] + [i] for i, r in enumerate(rows)])
    return q("claims_verdicts")


def current(rows: list[dict], runs: list[dict]) -> list[dict]:
    """The rows of the newest run of each configuration (and the no-run rows): earlier runs of the same
    configuration are superseded (the comparison page shows how they changed; the CSV keeps them)."""
    keep = latest_per_config([r["run_id"] for r in runs], runs)
    return [r for r in rows if r["run_id"] is None or r["run_id"] in keep]


def for_query(q: Queries, runs: list[dict], name: str) -> list[dict]:
    """The ledger rows of one claim query (a topic page's own claims), the newest run of each configuration."""
    return [r for r in current(ledger(q, [r["run_id"] for r in runs]), runs) if r["query"] == name]


def verdict_counts(rows: list[dict]) -> list[tuple[str, int]]:
    """(verdict, rows with it) in the legend's order, verdicts no row has left out."""
    counts = {v: 0 for v in VERDICTS}
    for r in rows:
        counts[r["verdict"]] += 1
    return [(v, n) for v, n in counts.items() if n]


def answer(shown: list[dict]) -> dict | None:
    """The ledger's one number and sentence (the claims page opens with it; `kvreport findings` prints it):
    how many of the current verdicts confirm their claim. None for an empty ledger."""
    if not shown:
        return None
    counts = verdict_counts(shown)
    parts = ", ".join(f"{n} {v}" for v, n in counts)
    return {"run_id": None, "value": dict(counts).get(Verdict.CONFIRMED, 0),
            "unit": f"of {len(shown)} verdicts {Verdict.CONFIRMED}",
            "finding": f"On {len({r['claim_id'] for r in shown})} quantitative claims of the token-audit article and "
                       f"the profiler write-up, for the latest run of each configuration: {parts}."}
