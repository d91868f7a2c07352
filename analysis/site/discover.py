"""Page discovery: every module in analysis/pages/ (not starting with `_`) that declares `PAGE`."""
from __future__ import annotations

import importlib
import pkgutil

from .. import pages
from .spec import BuildError


def page_modules():
    """The page modules of analysis/pages/, in navigation order."""
    mods = []
    for info in pkgutil.iter_modules(pages.__path__):
        if info.name.startswith("_"):
            continue  # shared helpers, not pages
        mod = importlib.import_module(f"{pages.__name__}.{info.name}")
        if hasattr(mod, "PAGE"):
            mods.append(mod)
    return in_order(mods)


def in_order(mods):
    """Page modules in navigation order; two pages with one slug are an error."""
    slugs = [m.PAGE.slug for m in mods]
    dup = sorted({s for s in slugs if slugs.count(s) > 1})
    if dup:
        raise BuildError(f"analysis/pages/: more than one page module with slug {', '.join(dup)}")
    return sorted(mods, key=lambda m: (m.PAGE.order, m.PAGE.slug))
