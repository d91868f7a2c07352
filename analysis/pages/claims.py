"""Claims ledger: every quantitative claim of the two source documents, with what each run measured and a
verdict derived in SQL from the data. Unions every analysis/queries/claim_*.sql (the shared contract)."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis.claims import LEDGER_COLUMNS, SOURCES, answer, current, ledger, verdict_counts
from kvreport.analysis.site import BuildError, Download, PageSpec
from kvreport.analysis.verdicts import VERDICTS, Verdict

PAGE = PageSpec(slug="claims", title="Claims", order=80)


@dataclass
class ClaimsPage:
    groups: list[dict]          # per source document: its claims, each with its (merged) run rows
    counts: list[tuple[str, int]]
    n_shown: int                # verdicts shown: one per claim and configuration (and per no-run row)
    pending: int                # of those, GPU measurements with only CPU evidence
    n_rows: int
    n_hidden: int               # rows of superseded runs, in the CSV only
    n_claims: int
    csv: Download               # the whole ledger, superseded runs included
    verdicts: list[str]
    answers: list[dict]         # the page's opening number and sentence


def context(q, site) -> ClaimsPage:
    rows = ledger(q, site.run_ids)
    seen: dict[str, str] = {}
    for r in rows:  # one claim id, one query: two files claiming the same id would mix their rows
        if seen.setdefault(r["claim_id"], r["query"]) != r["query"]:
            raise BuildError(f"{q.where(r['query'])}: claim id {r['claim_id']!r} is also used by "
                             f"{q.where(seen[r['claim_id']])}")
    shown = current(rows, site.runs)
    n_hidden = len(rows) - len(shown)

    # Grouped by source document; claims in the order their queries list them (files alphabetically),
    # the no-run row first, then the runs; runs with the same measurement, verdict and reasoning share a row.
    groups = []
    for source in sorted({r["source"] for r in shown}, key=lambda s: (s not in SOURCES, s)):
        claims: dict[str, dict] = {}
        for r in (r for r in shown if r["source"] == source):
            c = claims.setdefault(r["claim_id"], {
                "claim_id": r["claim_id"], "claim": r["claim"], "seed_value": r["seed_value"],
                "seed_hardware": r["seed_hardware"], "query": r["query"], "rows": []})
            c["rows"].append(r)
        for c in claims.values():
            merged: dict[tuple, dict] = {}
            for r in sorted(c["rows"], key=lambda r: (r["run_id"] is not None, r["run_id"] or 0)):
                m = merged.setdefault((r["run_id"] is None, r["measured_value"], r["verdict"], r["reasoning"]),
                                      {**r, "run_ids": []})
                if r["run_id"] is not None:
                    m["run_ids"].append(r["run_id"])
            c["rows"] = [{**m, "run": ", ".join(f"run {i}" for i in m["run_ids"]) or None,
                          "run_label": "; ".join(site.run_label(i) for i in m["run_ids"]) or None}
                         for m in merged.values()]
        title = SOURCES.get(source, source)
        groups.append({"source": source, "title": title, "name": title[:1].lower() + title[1:],
                       "claims": list(claims.values()),
                       "id": "source-" + "-".join(source.lower().split())})

    csv = Download("claims-ledger", sorted(rows, key=lambda r: (r["source"], r["claim_id"], r["run_id"] is not None,
                                                                r["run_id"] or 0)), LEDGER_COLUMNS)
    counts = verdict_counts(shown)
    answers = [a for a in (answer(shown),) if a]
    return ClaimsPage(groups=groups, counts=counts, n_shown=len(shown), answers=answers,
                      pending=sum(r["verdict"] == Verdict.GPU_PENDING for r in shown), n_rows=len(rows),
                      n_hidden=n_hidden,
                      n_claims=len({r["claim_id"] for r in rows}), csv=csv, verdicts=VERDICTS)
