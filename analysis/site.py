"""The site renderer: a pure function of the DuckDB file.

Each page is a module in analysis/pages/ exposing `PAGE = PageSpec(...)` and `context(q, site) -> dict`;
the module's context function runs named queries and builds charts, and `templates/<slug>.html` renders
it. One Jinja2 environment with autoescape; pages are flat (`memory.html`, ...) so every link and asset
path is relative and the site works from file:// and under any sub-path of a static host.

Strict: a failing query, a page module that raises, a template error, a claim or headline query that
breaks its contract, or a link to a file the site does not contain stops the build with a message naming
the query, page, template or link. The site is built in a temporary folder and swapped in at the end, so
a failed build leaves the previous site untouched.

Deterministic: no build time anywhere, every list sorted, chart ids fixed by the pages, CSVs written with
a fixed format, so the same DB builds a byte-identical site (tests/test_golden.py holds it to that).
"""
from __future__ import annotations

import csv
import datetime as _dt
import importlib
import io
import math
import pkgutil
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from urllib.parse import unquote, urlsplit

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
    runs: list[dict] = field(default_factory=list)           # rows of queries/runs.sql
    shown: "ShownCsvs | None" = None                         # CSVs of the rows pages show

    def run(self, run_id) -> dict | None:
        return next((r for r in self.runs if r["run_id"] == run_id), None)

    def run_label(self, run_id) -> str:
        """`run 3 · gpt2 · float16 · NVIDIA H200`: how a run is named in legends and tables."""
        r = self.run(run_id)
        if r is None:
            return f"run {run_id}"
        return " · ".join(str(x) for x in (f"run {run_id}", r.get("model"), r.get("dtype"), r.get("device_name"))
                          if x is not None)

    def has_page(self, slug: str) -> bool:
        return any(p.slug == slug for p in self.pages)

    def shown_csv(self, name: str, rows: list[dict], columns: list[str] | None = None) -> str:
        """Register data/<name>.csv holding exactly `rows` (the rows a page shows); returns its link."""
        if self.shown is None:
            self.shown = ShownCsvs()
        return self.shown.add(name, rows, columns)


# ---------------------------------------------------------------------------------------------------
# CSVs of the rows shown

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:60].strip("-")


def csv_value(v) -> str:
    """One fixed text form per value, so the same DB writes the same bytes."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return repr(v)
    if isinstance(v, (_dt.datetime, _dt.date)):
        return v.isoformat(sep=" ") if isinstance(v, _dt.datetime) else v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    return str(v)


def rows_to_csv(rows: list[dict], columns: list[str] | None = None) -> str:
    columns = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([csv_value(r.get(c)) for c in columns])
    return buf.getvalue()


class ShownCsvs:
    """data/<name>.csv for every chart and table on the pages, filled while the pages render."""

    def __init__(self):
        self.files: dict[str, str] = {}  # name -> CSV text
        self.page: str = ""
        self._auto: dict[str, int] = {}

    def add(self, name: str, rows: list[dict], columns: list[str] | None = None) -> str:
        if not _NAME.match(name or ""):
            raise BuildError(f"{self.page or 'site'}: CSV name {name!r} must be letters, digits, '-' or '_'")
        text = rows_to_csv(rows, columns)
        if self.files.get(name, text) != text:
            raise BuildError(f"{self.page}.html: two different tables or charts both named {name!r}; "
                             "give one of them another id")
        self.files[name] = text
        return f"{DATA_DIR}/{name}.csv"

    def auto_name(self, hint: str = "") -> str:
        """A stable name for a table without an id: <page>-<caption slug>, numbered if repeated."""
        base = f"{self.page}-table" + (f"-{slugify(hint)}" if slugify(hint) else "")
        n = self._auto.get(base, 0) + 1
        self._auto[base] = n
        return base if n == 1 else f"{base}-{n}"


# ---------------------------------------------------------------------------------------------------
# Number formats (all right-aligned in tables by kind)

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


def _fmt_auto(v):
    """A number at the precision a reader needs: 36,864 · 52.5 · 3.04 · 0.0123."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}"
    v = float(v)
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _fmt_signed_pct(v, digits=1):
    return "–" if v is None else f"{100 * v:+.{digits}f}%"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("templates", "."),
        autoescape=True,  # every string from the DB is untrusted (model names, session ids, log text)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(int=_fmt_int, num=_fmt_num, bytes=_fmt_bytes, pct=_fmt_pct, auto=_fmt_auto,
                       signed_pct=_fmt_signed_pct, slug=slugify)
    return env


# ---------------------------------------------------------------------------------------------------
# Pages

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


def _template_location(exc: BaseException, default: str) -> str:
    """templates/<name>.html:<line> of the innermost template frame in the traceback."""
    where = default
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.name:
        return f"templates/{exc.name}:{exc.lineno}"
    tb = exc.__traceback__
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if fname.endswith(".html"):
            where = f"templates/{Path(fname).name}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def render_page(env, mod, q, site: SiteInfo) -> str:
    slug = mod.PAGE.slug
    try:
        ctx = mod.context(q, site)
    except UserError:
        raise  # QueryError / BuildError already name the query or page
    except Exception as exc:  # noqa: BLE001 - a broken page stops the build, naming the page module
        raise BuildError(f"analysis/pages/{mod.__name__.rsplit('.', 1)[-1]}.py: "
                         f"{type(exc).__name__}: {exc}") from None
    try:
        return env.get_template(f"{slug}.html").render(page=mod.PAGE, site=site, **ctx)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - jinja errors and filters fed the wrong type alike
        where = _template_location(exc, f"templates/{slug}.html")
        raise BuildError(f"{where}: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------------------
# Checks on the rendered site

class _Refs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.ids: set[str] = set()
        self.dup_ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" and v:
                if v in self.ids:
                    self.dup_ids.add(v)
                self.ids.add(v)
            if v is not None and ((k == "href" and tag in ("a", "link", "area")) or
                                  (k == "src" and tag in ("script", "img", "iframe", "source"))):
                self.refs.append(v)


def check_links(root: Path, pages: list[str]) -> None:
    """Every local href/src resolves to a file of the site (and #fragments to an id); no absolute paths,
    so the site works from file:// and under any sub-path."""
    parsed = {}
    for name in pages:
        p = _Refs()
        p.feed((root / name).read_text(encoding="utf-8"))
        parsed[name] = p
        if p.dup_ids:
            raise BuildError(f"{name}: more than one element with id {', '.join(sorted(p.dup_ids))}; "
                             "give each chart and table its own id")
    for name in pages:
        for ref in parsed[name].refs:
            parts = urlsplit(ref)
            if parts.scheme in ("http", "https", "mailto"):
                continue
            if parts.scheme or parts.netloc:
                raise BuildError(f"{name}: link {ref!r} is not a relative link to a file of the site")
            if parts.path.startswith("/"):
                raise BuildError(f"{name}: link {ref!r} is absolute; it would break under a sub-path or "
                                 "file://; use a relative link")
            target = name if not parts.path else unquote(parts.path)
            path = (root / target).resolve()
            if root.resolve() not in path.parents or not path.is_file():
                raise BuildError(f"{name}: link {ref!r} points to {target}, which the site does not contain")
            if parts.fragment and target.endswith(".html"):
                ids = parsed[target].ids if target in parsed else set()
                if parts.fragment not in ids:
                    raise BuildError(f"{name}: link {ref!r}: {target} has no element with id "
                                     f"{parts.fragment!r}")


# ---------------------------------------------------------------------------------------------------
# Build

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


# The shared table contracts (notes/PREAMBLE.md) that site-wide queries (claims, comparisons) read. Used
# only when neither the DB nor the installed experiments define the table.
CONTRACT_TABLES = {
    "device_ceilings": "run_id INTEGER, peak_gbs DOUBLE, peak_source VARCHAR, roof_gbs DOUBLE, "
                       "roof_p25_gbs DOUBLE, roof_p75_gbs DOUBLE, roof_n INTEGER, roof_bytes BIGINT",
    "kv_decode_cost_v2": "run_id INTEGER, prefix_len INTEGER, batch_size INTEGER, step_ms DOUBLE, p25_ms DOUBLE, "
                         "p75_ms DOUBLE, n INTEGER, spread_wide BOOLEAN, kv_growth_bytes BIGINT, "
                         "expected_growth_bytes BIGINT, growth_match BOOLEAN, bytes_read BIGINT, "
                         "achieved_gbs DOUBLE, pct_of_peak DOUBLE, pct_of_roof DOUBLE",
    "kv_frag_v2": "run_id INTEGER, allocator VARCHAR, phase VARCHAR, allocated_bytes BIGINT, reserved_bytes BIGINT, "
                  "inactive_split_bytes BIGINT, num_alloc_retries INTEGER, live_requests INTEGER, "
                  "evicted_bytes BIGINT",
    "kv_compact_v2": "run_id INTEGER, method VARCHAR, bytes_moved BIGINT, time_ms DOUBLE, p25_ms DOUBLE, p75_ms DOUBLE, "
                     "n INTEGER, gbs DOUBLE, pct_of_peak DOUBLE, pct_of_roof DOUBLE, correct BOOLEAN, "
                     "n_requests INTEGER, seq_len INTEGER",
    "kv_pressure_v3": "run_id INTEGER, seq_len INTEGER, n_requests INTEGER, kv_bytes BIGINT, allocated_bytes BIGINT, "
                      "reserved_bytes BIGINT",
    "kv_capacity_v3": "run_id INTEGER, seq_len INTEGER, max_requests_measured INTEGER, "
                      "theoretical_max_requests INTEGER, bytes_per_request BIGINT, free_bytes BIGINT, "
                      "ceiling_bytes BIGINT, capacity_tokens BIGINT, stop_reason VARCHAR",
    "kv_interference_v3": "run_id INTEGER, mode VARCHAR, time_ms DOUBLE, p25_ms DOUBLE, p75_ms DOUBLE, n INTEGER, "
                          "concurrency VARCHAR, bytes_moved BIGINT",
    "kv_crossover_v3": "run_id INTEGER, model VARCHAR, source VARCHAR, dtype VARCHAR, kv_bytes_per_token DOUBLE, "
                       "weight_bytes BIGINT, batch_size INTEGER, crossover_tokens DOUBLE, n_heads INTEGER, "
                       "n_kv_heads INTEGER",
    "token_audit": "audit_id INTEGER, run_id INTEGER, session_id VARCHAR, input_tokens BIGINT, "
                   "cached_input_tokens BIGINT, system_tokens BIGINT, output_tokens BIGINT, pcer DOUBLE, "
                   "spor DOUBLE, kv_cache_bytes DOUBLE",
    "audits": "audit_id INTEGER, run_id INTEGER, created_at TIMESTAMP, sources VARCHAR, format VARCHAR, "
              "model VARCHAR, kv_bytes_per_token DOUBLE, kv_bytes_source VARCHAR, n_calls BIGINT, "
              "n_sessions BIGINT, n_rejects BIGINT, overall_pcer DOUBLE, overall_spor DOUBLE, "
              "leakage_index DOUBLE",
}


def _add_missing_tables(con, present: set[str]) -> None:
    """A DB written before an experiment existed lacks its table: stand in an empty TEMP table (the file
    stays untouched), so every page renders and says there is no data instead of failing the build."""
    from runner.store import all_table_ddl

    ddl = {**CONTRACT_TABLES, **all_table_ddl()}
    for name in sorted(ddl):
        if name not in present:
            con.execute(f"CREATE TEMP TABLE {name} ({ddl[name]})")


def connect(db: Path, tables: set[str] | None = None):
    """A read-only connection to `db` on which every named query runs, stand-ins included (for
    `kvreport findings` and anything else that runs the site's queries outside a build)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    if tables is None:
        tables = {t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main'").fetchall()}
    _add_missing_tables(con, set(tables))
    return con


def build_site(db: Path, out: Path) -> list[str]:
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
        slugs = [m.PAGE.slug for m in mods]
        dup = sorted({s for s in slugs if slugs.count(s) > 1})
        if dup:
            raise BuildError(f"analysis/pages/: more than one page module with slug {', '.join(dup)}")
        shown = ShownCsvs()
        site = SiteInfo(pages=[m.PAGE for m in mods], run_ids=run_ids, tables=tables, csv_files=csv_files,
                        shown=shown)
        env = environment()
        env.globals["shown_csv"] = shown.add
        env.globals["auto_csv_name"] = shown.auto_name
        con = connect(db, set(tables) | {"kvreport_meta"})
        try:
            q = Queries(con)
            site.runs = q("runs")
            written = []
            for mod in mods:
                shown.page = mod.PAGE.slug
                html = render_page(env, mod, q, site)
                (tmp / f"{mod.PAGE.slug}.html").write_text(html, encoding="utf-8")
                written.append(f"{mod.PAGE.slug}.html")
        finally:
            con.close()
        for name in sorted(shown.files):
            if name in csv_files:
                raise BuildError(f"a chart or table id {name!r} collides with the table {name}; rename it")
            (tmp / DATA_DIR / f"{name}.csv").write_text(shown.files[name], encoding="utf-8")
        check_links(tmp, written)
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
