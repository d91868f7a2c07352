"""`build_site`: the DB through the pages into a folder, every step delegated to its module."""
from __future__ import annotations

from pathlib import Path

from kvreport.runner.core.connections import connect
from kvreport.runner.core.errors import shown
from kvreport.runner.core.store import is_damage, Store

from ..queries import QUERY_DIR, Queries
from ..runs import restrict
from ..runs import shown as shown_runs
from .discover import in_order, page_modules
from .export import ShownCsvs, copy_assets, downloads_in, export_tables
from .links import check_links
from .render import environment, page_context, pending_pages, render_page
from .source import current_db
from .spec import BuildError, SiteInfo
from .swap import check_out, staging, swap_in


def build_site(db: Path, out: Path, pages=None, queries=QUERY_DIR) -> list[str]:
    """Render every page of the DB into `out`; returns the page file names. Atomic: on any error `out`
    keeps its previous contents. `pages`: the page modules (default: every one in analysis/pages/);
    `queries`: the folder of named queries (default: analysis/queries/)."""
    db, out = Path(db), Path(out)
    check_out(out)  # before anything is read: a folder that is not ours is never written
    mods = page_modules() if pages is None else in_order(pages)
    try:
        return _build(db, out, mods, queries)
    except Exception as exc:  # noqa: BLE001 - a damaged block shows only when a query reads it
        if not is_damage(exc):
            raise
        raise BuildError(f"{shown(db)}: the DB file is damaged ({str(exc).strip().splitlines()[0]}); "
                         f"{out} was not changed") from None


def _build(db: Path, out: Path, mods, queries) -> list[str]:
    with Store(db, read_only=True, allow_older=True) as store:
        file_schema = store.schema_version()
    with current_db(db) as path:
        with Store(path, read_only=True) as store:
            n_runs = store.query("SELECT count(*) AS n FROM runs")[0]["n"]
            tables = store.data_tables()
            schema = store.schema_version()
        if not n_runs:
            raise BuildError(f"{db}: the DB holds no runs yet; run `kvreport run --db {db}` first")
        with staging(out) as tmp:
            csv_files = export_tables(db, path, tmp)  # every row of every table, whatever the pages show
            copy_assets(tmp)
            con = connect(path, read_only=True, sealed=True)
            try:
                # The pages read the shown runs only (analysis/runs.py), so a DB of any size builds in bounded
                # memory; the note on every page says what is left out.
                what = shown_runs(con)
                restrict(con, what)
                site = SiteInfo(pages=[], run_ids=what.run_ids, tables=tables, csv_files=csv_files,
                                file_schema=file_schema, schema=schema, n_runs=what.n_runs,
                                not_shown=not_shown_note(what))
                written = _render_all(con, tmp, site, mods, queries)
            finally:
                con.close()
            check_links(tmp, written)
            swap_in(tmp, out)
    return written


def not_shown_note(what) -> str | None:
    """The line every page opens with when the pages leave runs out, saying where every row is."""
    summary = what.summary()
    return None if summary is None else (
        f"Shown on these pages: {summary}. Every row of every run is in data/kvreport.duckdb and in each "
        "table's CSV and Parquet file (see the Data page).")


def _render_all(con, tmp: Path, site: SiteInfo, mods, queries) -> list[str]:
    site.pages = [m.PAGE for m in mods]
    shown = ShownCsvs()
    env = environment()
    q = Queries(con, queries)
    site.runs = q("runs")
    site.pending = pending_pages(mods, q, site)
    written = []
    for mod in mods:
        slug = mod.PAGE.slug
        ctx = page_context(mod, q, site)
        for download in downloads_in(ctx):  # the page module declares them; templates only link them
            shown.add(slug, download)
        (tmp / f"{slug}.html").write_text(render_page(env, mod, ctx, q, site), encoding="utf-8")
        written.append(f"{slug}.html")
    shown.write(tmp, site.csv_files)
    return written
