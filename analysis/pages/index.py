"""Overview: the headline findings (one sentence and one number each, linking to their evidence), the
runs in the DB with their environment, what was skipped and why, and the claims ledger in one line."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis.site import BuildError, PageSpec

from . import _claims
from ._helpers import config_key

PAGE = PageSpec(slug="index", title="Overview", order=0)

HEADLINE_COLUMNS = ["run_id", "finding", "value", "unit", "page"]


def headlines(q, site) -> list[dict]:
    """Every headline_*.sql row, checked: its run exists and its evidence page is a page of the site."""
    rows = q.union("headline_", HEADLINE_COLUMNS)
    order = {p.slug: p.order for p in site.pages}
    for h in rows:
        slug = (h["page"] or "").split("#")[0].removesuffix(".html")
        if slug not in order:
            raise BuildError(f"analysis/queries/{h['query']}.sql: page {h['page']!r} is not a page of the site "
                             f"(pages: {', '.join(sorted(order))})")
        if h["run_id"] is not None and h["run_id"] not in site.run_ids:
            raise BuildError(f"analysis/queries/{h['query']}.sql: run_id {h['run_id']} is not in the runs table")
        h["page_order"] = order[slug]
    return sorted(rows, key=lambda h: (h["page_order"], h["query"], h["run_id"] or 0, h["finding"]))


@dataclass
class OverviewPage:
    runs: list[dict]
    groups: list[dict]        # one per configuration: its latest run and that run's headline findings
    general: list[dict]       # headlines not tied to a run
    skips: list[dict]
    statuses: list[dict]
    n_claims: int
    verdicts: list[tuple[str, int]]
    devices: list[str]
    models: list[str]


def context(q, site) -> OverviewPage:
    runs = q("runs")
    statuses = q("experiment_status")
    rows = headlines(q, site)

    # One group per configuration (device, model, dtype), showing its latest run: older runs of the same
    # configuration are superseded here and compared on the comparison page.
    latest: dict[tuple, dict] = {}
    n_runs: dict[tuple, int] = {}
    with_findings = {h["run_id"] for h in rows}
    for r in runs:
        key = config_key(r)
        n_runs[key] = n_runs.get(key, 0) + 1
        if r["run_id"] in with_findings or key not in latest:
            latest[key] = r
    groups = []
    for key, run in sorted(latest.items(), key=lambda kv: -kv[1]["run_id"]):
        items = [h for h in rows if h["run_id"] == run["run_id"]]
        groups.append({"run": run, "label": site.run_label(run["run_id"]), "findings": items,
                       "older": n_runs[key] - 1})
    general = [h for h in rows if h["run_id"] is None]

    # What did not run, once per (experiment, status, reason), with the runs it hit.
    skipped: dict[tuple, list[int]] = {}
    for s in statuses:
        if s["status"] != "ok":
            skipped.setdefault((s["experiment"], s["status"], s["reason"] or ""), []).append(s["run_id"])
    skips = [{"experiment": e, "status": st, "reason": reason, "runs": ", ".join(str(i) for i in sorted(ids)),
              "n_runs": len(ids)} for (e, st, reason), ids in sorted(skipped.items())]

    claims = _claims.ledger(q, site) if site.has_page("claims") else []
    verdicts = _claims.verdict_counts(_claims.current(claims, site))
    devices = sorted({r["device_name"] for r in runs if r["device_name"]})
    models = sorted({r["model"] for r in runs if r["model"]})
    return OverviewPage(runs=runs, groups=groups, general=general, skips=skips, statuses=statuses,
                        n_claims=len({c["claim_id"] for c in claims}), verdicts=verdicts, devices=devices,
                        models=models)
