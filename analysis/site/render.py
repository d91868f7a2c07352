"""Rendering: the one Jinja2 environment (autoescape: every string from the DB is untrusted) and a page
rendered from its context dataclass, with errors that name the page module or template line."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2

from kvreport.runner.core.errors import UserError

from .. import charts  # the module, not its names: charts imports this package's formats
from ..headlines import headlines, page_slug
from ..verdicts import Change, Verdict
from .formats import FILTERS
from .spec import BuildError, SiteInfo


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kvreport.templates", "."),
        autoescape=True,  # model names, session ids, log text: all untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    env.globals["table_layout"] = table_layout
    env.globals.update(Verdict=Verdict, Change=Change)  # the verdict words, defined once (analysis/verdicts.py)
    # a chart's data table: raw names, auto format
    env.filters["chart_column"] = lambda name: (name, str(name).replace("_", " "), "auto")
    return env


def _blank(v) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def table_layout(rows: list[dict], cols: list[tuple], answer: str | None = None, keep=()) -> dict:
    """How the shared table macro lays out `rows`: the answer column first, columns empty in every row
    dropped, and columns holding one value in every row (of two or more) said once above the table instead
    of in each row. `keep` names columns never moved out, even when empty (a key the reader scans, a
    verdict, a column other pages' readers look up by its header)."""
    cols = [tuple(c) for c in cols]
    if answer is not None:
        if answer not in [c[0] for c in cols]:
            raise ValueError(f"table: answer column {answer!r} is not one of its columns")
        cols = [c for c in cols if c[0] == answer] + [c for c in cols if c[0] != answer]
    if not rows:
        return {"cols": cols, "constant": [], "dropped": []}
    shown, constant, dropped = [], [], []
    for col in cols:
        key = col[0]
        values = [r.get(key) for r in rows]
        if all(_blank(v) for v in values) and key != answer and key not in keep:
            dropped.append(col)
        elif (len(rows) > 1 and key not in keep and key != answer and not any(_blank(v) for v in values)
              and all(v == values[0] and type(v) is type(values[0]) for v in values)):
            constant.append((col, values[0]))
        else:
            shown.append(col)
    if not shown:  # every column constant: the table is one row's worth, keep it a table
        shown, constant = [c for c, _ in constant], []
    return {"cols": shown, "constant": constant, "dropped": dropped}


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


def page_context(mod, q, site: SiteInfo):
    """The page's context dataclass; a page module that raises stops the build naming the module."""
    where = f"analysis/pages/{mod.__name__.rsplit('.', 1)[-1]}.py"
    try:
        ctx = mod.context(q, site)
    except UserError:
        raise  # QueryError / BuildError already name the query or page
    except Exception as exc:  # noqa: BLE001 - a broken page stops the build, naming the page module
        raise BuildError(f"{where}: {type(exc).__name__}: {exc}") from None
    if not dataclasses.is_dataclass(ctx) or isinstance(ctx, type):
        raise BuildError(f"{where}: context() must return a dataclass instance, not {type(ctx).__name__}")
    return ctx


def draws_charts(value) -> bool:
    """True when a context holds a chart with points: only such a page loads plotly.min.js (3.5 MB)."""
    if isinstance(value, charts.Chart):
        return not value.empty
    if isinstance(value, dict):
        return any(draws_charts(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(draws_charts(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(draws_charts(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def pending_pages(mods, q, site: SiteInfo) -> dict[str, str]:
    """slug -> the one-line reason a page has no data in this DB, for pages that say so (a module-level
    `pending(q, site)` returning the reason, or None when the page has data). The navigation marks them."""
    out = {}
    for mod in mods:
        check = getattr(mod, "pending", None)
        if check is None:
            continue
        where = f"analysis/pages/{mod.__name__.rsplit('.', 1)[-1]}.py"
        try:
            why = check(q, site)
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken page stops the build, naming the page module
            raise BuildError(f"{where}: pending(): {type(exc).__name__}: {exc}") from None
        if why:
            out[mod.PAGE.slug] = str(why)
    return out


MAX_ANSWERS = 3


def page_answers(q, site: SiteInfo, slug: str) -> list[dict]:
    """The headline rows (analysis/queries/headline_*.sql) whose evidence is this page, newest run first and
    one per run: each page opens with them, a number and a sentence. Demonstrations come after findings."""
    mine = [h for h in headlines(q, site.run_ids, site.page_order()) if page_slug(h) == slug]
    mine.sort(key=lambda h: (bool(h.get("demonstration")), -(h["run_id"] or 0)))
    seen, out = set(), []
    for h in mine:
        key = (h["run_id"], h["unit"])
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out[:MAX_ANSWERS]


def render_page(env, mod, ctx, q, site: SiteInfo) -> str:
    """The page's HTML from its context (page_context). Rendering writes nothing: the context's downloads are
    the builder's to write."""
    # Top-level fields only (not dataclasses.asdict, which would copy every nested row).
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    slug = mod.PAGE.slug
    try:
        answers = fields.pop("answers", None)
        if answers is None:
            answers = [] if slug == "index" else page_answers(q, site, slug)
        return env.get_template(f"{slug}.html").render(page=mod.PAGE, site=site, draws_charts=draws_charts(ctx),
                                                       answers=answers, **fields)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - jinja errors and filters fed the wrong type alike
        where = _template_location(exc, f"templates/{slug}.html")
        raise BuildError(f"{where}: {type(exc).__name__}: {exc}") from None
