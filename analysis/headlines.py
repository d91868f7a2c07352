"""The headline findings: one sentence and one number each, from every analysis/queries/headline_*.sql. One
reader for the overview, the answer each page opens with, and `kvreport findings`."""
from __future__ import annotations

from .queries import Queries, QueryError

HEADLINE_COLUMNS = ["run_id", "finding", "value", "unit", "page"]  # and optionally `demonstration` (why)


def page_slug(h: dict) -> str:
    """The page a headline's evidence is on: `memory.html#x` -> `memory`."""
    return (h["page"] or "").split("#")[0].removesuffix(".html")


def headlines(q: Queries, run_ids, page_order: dict[str, int]) -> list[dict]:
    """Every headline row, in the queries' order, checked: its run is one of `run_ids` (or none) and its
    evidence page one of `page_order` (slug -> the page's place in the navigation). Each row gains
    `page_order` and `demonstration` (None for a finding; why not, for a demonstration of a mechanism)."""
    rows = q.union("headline_", HEADLINE_COLUMNS)
    known = set(run_ids)
    for h in rows:
        slug = page_slug(h)
        if slug not in page_order:
            raise QueryError(f"{q.where(h['query'])}: page {h['page']!r} is not a page of the site "
                             f"(pages: {', '.join(sorted(page_order))})")
        if h["run_id"] is not None and h["run_id"] not in known:
            raise QueryError(f"{q.where(h['query'])}: run_id {h['run_id']} is not in the runs table")
        h["page_order"] = page_order[slug]
        h.setdefault("demonstration", None)
    return rows


def in_page_order(rows: list[dict]) -> list[dict]:
    """Headlines as the overview lists them: by page, then query, run and finding."""
    return sorted(rows, key=lambda h: (h["page_order"], h["query"], h["run_id"] or 0, h["finding"]))
