"""Rendering: the one Jinja2 environment (autoescape: every string from the DB is untrusted) and a page
rendered from its context dataclass, with errors that name the page module or template line."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import jinja2

from kvreport.runner.errors import UserError

from ..charts import Chart
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
    return env


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
    if isinstance(value, Chart):
        return not value.empty
    if isinstance(value, dict):
        return any(draws_charts(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(draws_charts(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(draws_charts(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def render_page(env, mod, q, site: SiteInfo) -> str:
    ctx = page_context(mod, q, site)
    # Top-level fields only (not dataclasses.asdict, which would copy every nested row).
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx)}
    slug = mod.PAGE.slug
    try:
        return env.get_template(f"{slug}.html").render(page=mod.PAGE, site=site, draws_charts=draws_charts(ctx),
                                                       **fields)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - jinja errors and filters fed the wrong type alike
        where = _template_location(exc, f"templates/{slug}.html")
        raise BuildError(f"{where}: {type(exc).__name__}: {exc}") from None
