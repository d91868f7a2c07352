"""The site renderer: a pure function of the DuckDB file.

Each page is a module in analysis/pages/ exposing `PAGE = PageSpec(...)` and `context(q, site) -> dict`;
the module's context function runs named queries and builds charts, and `templates/<slug>.html` renders
it. One Jinja2 environment with autoescape; pages are flat (`memory.html`, ...) so every link and asset
path is relative and the site works from file:// and under any sub-path of a static host.

The site is built in a temporary folder and swapped in at the end, so a failed query or template leaves
the previous site untouched.
"""
from __future__ import annotations

import importlib
import pkgutil
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jinja2

from runner.errors import UserError

from .queries import Queries

DATA_DIR = "data"
DB_NAME = "kvreport.duckdb"


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


def page_modules():
    from . import pages

    mods = []
    for info in pkgutil.iter_modules(pages.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{pages.__name__}.{info.name}")
        if hasattr(mod, "PAGE"):
            mods.append(mod)
    return sorted(mods, key=lambda m: (m.PAGE.order, m.PAGE.slug))


def _fmt_int(v):
    return "–" if v is None else f"{int(round(v)):,}"


def _fmt_num(v, digits=1):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}"


def _fmt_bytes(v):
    if v is None:
        return "–"
    v = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:,.0f} {unit}" if unit == "B" else f"{v:,.2f} {unit}"
        v /= 1024
    return str(v)


def _fmt_pct(v, digits=1):
    return "–" if v is None else f"{100 * v:.{digits}f}%"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("templates", "."),
        autoescape=True,  # every string from the DB is untrusted (model names, session ids, log text)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(int=_fmt_int, num=_fmt_num, bytes=_fmt_bytes, pct=_fmt_pct)
    return env


def _copy_assets(out: Path) -> None:
    import plotly

    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    src = resources.files("templates") / "assets"
    for item in sorted(src.iterdir(), key=lambda p: p.name):
        if item.is_file():
            (assets / item.name).write_bytes(item.read_bytes())
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    shutil.copyfile(plotly_js, assets / "plotly.min.js")


def _export_data(db: Path, out: Path) -> dict[str, str]:
    from runner.commands.export import export_tables

    data = out / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, data / DB_NAME)
    csvs = export_tables(db, data, "csv")
    export_tables(db, data, "parquet")
    return {p.stem: f"{DATA_DIR}/{p.name}" for p in csvs}


def build_site(db: Path, out: Path) -> list[str]:
    import duckdb

    from runner.store import Store

    db, out = Path(db), Path(out)
    # Validate (schema version, kvreport DB) through the store, then read with a plain connection.
    with Store(db, read_only=True) as store:
        run_ids = [r["run_id"] for r in store.query("SELECT run_id FROM runs ORDER BY run_id")]
        tables = [t for t in store.tables() if t != "kvreport_meta"]
    if not run_ids:
        raise BuildError(f"{db}: the DB holds no runs yet; run `kvreport run --db {db}` first")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".kvreport-build-", dir=out.parent))
    try:
        csv_files = _export_data(db, tmp)
        _copy_assets(tmp)
        mods = page_modules()
        site = SiteInfo(pages=[m.PAGE for m in mods], run_ids=run_ids, tables=tables, csv_files=csv_files)
        env = environment()
        con = duckdb.connect(str(db), read_only=True)
        try:
            q = Queries(con)
            written = []
            for mod in mods:
                ctx = mod.context(q, site)
                try:
                    html = env.get_template(f"{mod.PAGE.slug}.html").render(page=mod.PAGE, site=site, **ctx)
                except jinja2.TemplateError as exc:
                    raise BuildError(f"templates/{mod.PAGE.slug}.html: {exc}") from None
                (tmp / f"{mod.PAGE.slug}.html").write_text(html, encoding="utf-8")
                written.append(f"{mod.PAGE.slug}.html")
        finally:
            con.close()
        _swap_in(tmp, out)
        return written
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap_in(tmp: Path, out: Path) -> None:
    """Replace the generated contents of `out` with `tmp`, keeping files we did not generate
    (a README, a CNAME). The source DB may live in out/data/: it was already copied into tmp."""
    out.mkdir(parents=True, exist_ok=True)
    trash = Path(tempfile.mkdtemp(prefix=".kvreport-old-", dir=out.parent))
    for name in ["assets", DATA_DIR]:
        if (out / name).exists():
            (out / name).rename(trash / name)  # renamed, not deleted, until the new copy is in place
    for old in out.glob("*.html"):
        old.unlink()
    for item in sorted(tmp.iterdir()):
        shutil.move(str(item), str(out / item.name))
    tmp.rmdir()
    shutil.rmtree(trash, ignore_errors=True)
