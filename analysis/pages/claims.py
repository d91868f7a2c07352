"""Claims ledger: every quantitative claim of the seed documents, with what each run measured and a
verdict derived in SQL from the data. Unions every analysis/queries/claim_*.sql (the shared contract)."""
from __future__ import annotations

from analysis.site import BuildError, PageSpec

PAGE = PageSpec(slug="claims", title="Claims", order=80)

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


def latest_runs(site) -> set[int]:
    """The newest run of each (device, model, dtype): the ledger shows these; earlier runs of the same
    configuration are superseded (the comparison page shows how they changed; the CSV keeps them)."""
    latest: dict[tuple, int] = {}
    for r in site.runs:
        key = (r.get("device_name"), r.get("model"), r.get("dtype"))
        latest[key] = max(latest.get(key, r["run_id"]), r["run_id"])
    return set(latest.values())


def current(rows: list[dict], site) -> list[dict]:
    keep = latest_runs(site)
    return [r for r in rows if r["run_id"] is None or r["run_id"] in keep]


def verdict_counts(rows: list[dict]) -> list[tuple[str, int]]:
    counts = {v: 0 for v in VERDICTS}
    for r in rows:
        counts[r["verdict"]] += 1
    return [(v, n) for v, n in counts.items() if n]


def context(q, site) -> dict:
    rows = ledger(q, site)
    seen: dict[str, str] = {}
    for r in rows:  # one claim id, one query: two files claiming the same id would mix their rows
        if seen.setdefault(r["claim_id"], r["query"]) != r["query"]:
            raise BuildError(f"analysis/queries/{r['query']}.sql: claim id {r['claim_id']!r} is also used by "
                             f"analysis/queries/{seen[r['claim_id']]}.sql")
    shown = current(rows, site)
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
        groups.append({"source": source, "title": SOURCES.get(source, source), "claims": list(claims.values()),
                       "id": "source-" + "-".join(source.lower().split())})

    csv = site.shown_csv("claims-ledger", sorted(rows, key=lambda r: (r["source"], r["claim_id"], r["run_id"] is not None,
                                                                      r["run_id"] or 0)), CLAIM_COLUMNS)
    return {"groups": groups, "counts": verdict_counts(shown), "n_rows": len(rows), "n_hidden": n_hidden,
            "n_claims": len({r["claim_id"] for r in rows}), "csv": csv, "verdicts": VERDICTS}
