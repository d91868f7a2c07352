"""Number formats, the Jinja filters of every page. One convention site-wide: binary units for memory
(KiB, MiB, GiB), decimal GB/s for bandwidth, percentages for ratios, and only the digits a reader needs."""
from __future__ import annotations

import re


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:60].strip("-")


def fmt_int(v):
    return "–" if v is None else f"{int(round(v)):,}"


def fmt_num(v, digits=1):
    """`digits` decimals below 100; whole numbers above (80,409 tokens, not 80,409.0)."""
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.{digits}f}"


def fmt_bytes(v):
    """Binary units with three significant digits: 912 B, 36 KiB, 1,008 KiB, 1.5 MiB, 12.3 GiB."""
    if v is None:
        return "–"
    v = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            break
        v /= 1024
    if unit == "B" or abs(v) >= 100 or float(v).is_integer():
        return f"{v:,.0f} {unit}"
    return f"{v:.1f} {unit}" if abs(v) >= 10 else f"{v:.2f} {unit}"


def fmt_pct(v, digits=1):
    return "–" if v is None else f"{100 * v:.{digits}f}%"


def fmt_auto(v):
    """A number at the precision a reader needs: 36,864 · 339 · 52.5 · 3.04 · 0.0123."""
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


def fmt_signed_pct(v, digits=1):
    return "–" if v is None else f"{100 * v:+.{digits}f}%"


FILTERS = {"int": fmt_int, "num": fmt_num, "bytes": fmt_bytes, "pct": fmt_pct, "auto": fmt_auto,
           "signed_pct": fmt_signed_pct, "slug": slugify}
