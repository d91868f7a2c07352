"""What pages and the builder share: the page declaration, what every page may know about the site,
and the build's error type."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvreport.runner.core.errors import UserError

if TYPE_CHECKING:
    from .export import ShownCsvs


class BuildError(UserError):
    pass


@dataclass(frozen=True)
class PageSpec:
    slug: str          # output file is <slug>.html, template templates/<slug>.html
    title: str
    order: int = 50    # position in the navigation
    nav: bool = True   # False: built but not in the top navigation


@dataclass
class SiteInfo:
    """What every page may need besides its own queries."""
    pages: list[PageSpec]
    run_ids: list[int]
    tables: list[str] = field(default_factory=list)
    csv_files: dict[str, str] = field(default_factory=dict)  # table -> relative path of its CSV
    runs: list[dict] = field(default_factory=list)           # rows of queries/runs.sql
    shown: "ShownCsvs | None" = None                         # CSVs of the rows pages show
    file_schema: int | None = None     # schema version of the DB file as published (data/kvreport.duckdb)
    schema: int | None = None          # the schema the pages read (an older file is read through a migrated copy)
    pending: dict[str, str] = field(default_factory=dict)  # slug -> why the page has no data here ("GPU pending")

    def run(self, run_id) -> dict | None:
        return next((r for r in self.runs if r["run_id"] == run_id), None)

    def run_label(self, run_id) -> str:
        """`run 3 · gpt2 · float16 · NVIDIA H200`: how a run is named in legends and tables."""
        r = self.run(run_id)
        if r is None:
            return f"run {run_id}"
        return " · ".join(str(x) for x in (f"run {run_id}", r.get("model"), r.get("dtype"), r.get("device_name"))
                          if x is not None)

    def page_order(self) -> dict[str, int]:
        """slug -> the page's place in the navigation, for every page of the site."""
        return {p.slug: p.order for p in self.pages}

    def has_page(self, slug: str) -> bool:
        return any(p.slug == slug for p in self.pages)

    def shown_csv(self, name: str, rows: list[dict], columns: list[str] | None = None) -> str:
        """Register data/<name>.csv holding exactly `rows` (the rows a page shows); returns its link."""
        if self.shown is None:
            from .export import ShownCsvs

            self.shown = ShownCsvs()
        return self.shown.add(name, rows, columns)
