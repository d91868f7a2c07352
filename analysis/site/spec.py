"""What pages and the builder share: the page declaration, the tables and downloads a page declares, what
every page may know about the site, and the build's error type."""
from __future__ import annotations

from dataclasses import dataclass, field

from kvreport.runner.core.errors import UserError

DATA_DIR = "data"


class BuildError(UserError):
    pass


@dataclass(frozen=True)
class PageSpec:
    slug: str          # output file is <slug>.html, template templates/<slug>.html
    title: str
    order: int = 50    # position in the navigation
    nav: bool = True   # False: built but not in the top navigation


@dataclass(frozen=True)
class Download:
    """A CSV a page offers: data/<name>.csv holding exactly `rows` (the rows the page shows), `columns` in
    order (default: the first row's keys). A page module declares it in its context; the builder finds it there
    and writes it (analysis/site/export.py); a template only links `link`."""
    name: str
    rows: list[dict]
    columns: list[str] | None = None

    @property
    def link(self) -> str:
        return f"{DATA_DIR}/{self.name}.csv"


@dataclass(frozen=True)
class Table:
    """A data table a page shows, declared by its page module; templates/_table.html lays it out. `cols`:
    (key, label, kind), kind picking the number format. `id` is the table's element id and its download's name
    (data/<id>.csv: exactly these rows, every column). `csv` links the whole source table beside it; `answer`
    names the column that answers the table's question (shown first); `keep` names columns never folded into
    the caption; `flag` names a boolean column marking noisy rows; `fold` folds (or not) a long table."""
    id: str
    rows: list[dict]
    cols: list[tuple]
    caption: str = ""
    csv: str | None = None
    answer: str | None = None
    keep: tuple = ()
    flag: str | None = None
    fold: bool | None = None
    flag_note: str = "spread (p25–p75) too wide to read a few percent from"

    @property
    def download(self) -> Download:
        return Download(self.id, self.rows, [c[0] for c in self.cols])


@dataclass
class SiteInfo:
    """What every page may need besides its own queries."""
    pages: list[PageSpec]
    run_ids: list[int]
    tables: list[str] = field(default_factory=list)
    csv_files: dict[str, str] = field(default_factory=dict)  # table -> relative path of its CSV
    runs: list[dict] = field(default_factory=list)           # rows of queries/runs.sql
    file_schema: int | None = None     # schema version of the DB file as published (data/kvreport.duckdb)
    schema: int | None = None          # the schema the pages read (an older file is read through a migrated copy)
    pending: dict[str, str] = field(default_factory=dict)  # slug -> why the page has no data here ("GPU pending")
    n_runs: int | None = None          # runs the DB holds; run_ids are those the pages show (analysis/runs.py)
    not_shown: str | None = None       # the line saying which runs the pages leave out and where they are

    def __post_init__(self):
        if self.n_runs is None:
            self.n_runs = len(self.run_ids)

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
