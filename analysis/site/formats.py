"""Number formats, the Jinja filters of every page and the tick labels of every chart. One convention
site-wide: binary units for memory (KiB, MiB, GiB), decimal GB/s for bandwidth, shares as percentages,
ratios as "3.9×", and only the digits a reader needs."""
from __future__ import annotations

import math
import re

# The policy is said to readers once, in the footer of templates/base.html.


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


def fmt_ratio(v):
    """One style for every ratio: 0.93×, 3.94×, 12.3×, 150×."""
    if v is None:
        return "–"
    a = abs(float(v))
    if a >= 100:
        return f"{v:,.0f}×"
    return f"{v:.1f}×" if a >= 10 else f"{v:.2f}×"


def fmt_tick(v) -> str:
    """An axis tick: the number a table would print, without trailing zeros (0.5, 20, 1,000, 2.5)."""
    v = float(v)
    if v.is_integer():
        return f"{int(v):,}"
    return f"{v:.3g}"


BINARY_UNITS = [(1, "B"), (2 ** 10, "KiB"), (2 ** 20, "MiB"), (2 ** 30, "GiB"), (2 ** 40, "TiB")]
NICE = (1, 2, 5)


def log_ticks(values, unit: str = "") -> dict:
    """tickvals/ticktext for a log axis at 1-2-5 steps across the values' range. unit="bytes": the values are
    bytes and the ticks fall on 1-2-5 × KiB/MiB/GiB, labelled as the tables print them (500 KiB, 2 MiB)."""
    vals = sorted({float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0})
    if not vals:
        return {}
    lo, hi = vals[0], vals[-1]
    if unit == "bytes":
        cands = [m * 10 ** e * base for base, _ in BINARY_UNITS for e in range(3) for m in NICE
                 if m * 10 ** e < 1024]
    else:
        cands = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for m in NICE]
    ticks = sorted({float(f"{t:.12g}") for t in cands if lo / 1.5 <= t <= hi * 1.5})
    if len(ticks) > 9:  # a wide range: every other decade's 1-2-5 would crowd a phone's axis; keep the 1s
        ones = [t for t in ticks if f"{t:.12g}".lstrip("0.").startswith("1")]
        ticks = ones if len(ones) >= 2 else ticks
    label = fmt_bytes if unit == "bytes" else fmt_tick
    return dict(tickvals=ticks, ticktext=[label(t) for t in ticks])


def linear_byte_ticks(values) -> dict:
    """tickvals/ticktext for a linear axis of bytes: 1-2-5 steps of one binary unit, up to about six ticks."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    top = max(vals + [0.0])
    if top <= 0:
        return {}
    base = max((b for b, _ in BINARY_UNITS if top >= b), default=1)
    step = next((m * 10 ** e * base for e in range(4) for m in NICE if top / (m * 10 ** e * base) <= 6),
                top)
    ticks = [i * step for i in range(int(top // step) + 2)]
    return dict(tickvals=ticks, ticktext=[fmt_bytes(t) for t in ticks])


def fmt_headline(value, unit: str) -> tuple[str, str]:
    """A headline's number and unit as every page prints them: bytes in binary units ("36 KiB", "/token"),
    shares with their % sign ("26.2%", "of read roof"), ratios as "1.36×"."""
    unit = unit or ""
    if value is None:
        return "–", unit
    if unit == "B" or unit.startswith("B/"):
        return fmt_bytes(value), unit[1:]
    if unit == "MB":  # the seed's decimal megabytes (10^6 B), converted to the site's binary units
        return fmt_bytes(value * 1e6), ""
    if unit.startswith("%"):
        return f"{fmt_num(value)}%", unit[1:].strip()
    if unit.startswith(("x ", "× ")) or unit in ("x", "×"):
        return fmt_ratio(value), unit[1:].strip()
    return fmt_auto(value), unit


FILTERS = {"int": fmt_int, "num": fmt_num, "bytes": fmt_bytes, "pct": fmt_pct, "auto": fmt_auto,
           "signed_pct": fmt_signed_pct, "ratio": fmt_ratio, "slug": slugify,
           "headline": lambda value, unit: fmt_headline(value, unit)}
