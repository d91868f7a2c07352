"""The site builder: a pure function of the DuckDB file, split by job.

- discover.py: the page modules (analysis/pages/*.py declaring PAGE; `_*.py` are shared helpers).
- render.py:   the one Jinja2 environment (autoescape, number filters from formats.py) and a page rendered
               from its context dataclass.
- export.py:   the DB and its tables (written by the store), the CSV of the rows each chart and table shows.
- links.py:    every local link resolves and is relative.
- swap.py:     build in a temporary folder, swap it in only when everything succeeded.
- source.py:   the DB at the current schema (the store migrates a temporary copy of an older file).
- build.py:    `build_site`, which runs them in order.

Pages are flat (`memory.html`, ...) so every link and asset path is relative and the site works from
file:// and under any sub-path. Strict: a failing query, page module, template, contract or link stops the
build with a message naming it. Deterministic: no build time, every list sorted, chart ids fixed by the
pages, CSVs in one fixed format, so the same DB builds a byte-identical site (tests/test_golden.py).
Nothing here imports torch.
"""
from .build import build_site
from .discover import page_modules
from .formats import slugify
from .links import check_links
from .spec import BuildError, Download, PageSpec, SiteInfo, Table

__all__ = ["BuildError", "Download", "PageSpec", "SiteInfo", "Table", "build_site", "check_links", "page_modules",
           "slugify"]
