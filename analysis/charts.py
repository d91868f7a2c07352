"""Plotly chart builders with one shared look. Charts are emitted as JSON data blocks that
assets/site.js renders, so pages carry no inline script, and ids are stable (derived from the page and
chart name) so the same DB builds byte-identical HTML.

Every chart also carries the rows it shows (`Chart.rows`, one per plotted point, or whatever the page
passes as `rows=`): the chart macro renders them as a data table and the build writes them to
data/<chart_id>.csv, so the download is exactly what the reader sees.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from .site.formats import linear_byte_ticks, log_ticks
from .site.spec import Download

ACCENT = "#2563eb"
# Light-theme colours; assets/site.js swaps in DARK_PALETTE (same order) for readers in dark mode.
PALETTE = [ACCENT, "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626", "#475569"]
DARK_PALETTE = ["#60a5fa", "#fbbf24", "#34d399", "#f472b6", "#a78bfa", "#22d3ee", "#a3e635", "#f87171",
                "#94a3b8"]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
INK, MUTED, GRID = "#1e293b", "#64748b", "#e2e8f0"
REFERENCE_LINE = "#64748b"  # ceilings (peak, roof, formula) are grey dashes in both themes

LAYOUT: dict[str, Any] = dict(
    font=dict(family=FONT, size=13, color=INK),
    colorway=PALETTE,
    height=380,
    margin=dict(l=64, r=24, t=16, b=56),
    hovermode="closest",
    hoverlabel=dict(font=dict(family=FONT, size=12)),
    legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, font=dict(size=12)),
    xaxis=dict(showgrid=True, gridcolor=GRID, zeroline=False, automargin=True, showline=True, linecolor=GRID,
               ticks="outside", tickcolor=GRID, title=dict(font=dict(size=13, color=MUTED))),
    yaxis=dict(showgrid=True, gridcolor=GRID, zeroline=False, automargin=True, showline=True, linecolor=GRID,
               ticks="outside", tickcolor=GRID, title=dict(font=dict(size=13, color=MUTED))),
    paper_bgcolor="rgba(0,0,0,0)",
    plot_bgcolor="rgba(0,0,0,0)",
)

CHART_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")  # also a file name: data/<chart_id>.csv
# Plotly renders a small tag language (<br>, <b>, <sub>...) in every text; authors may use these few,
# anything else that looks like markup is shown literally.
_ALLOWED_TAGS = re.compile(r"&lt;(/?(?:br|b|i|sub|sup|em)\s*/?)&gt;")
_RAW_KEYS = {"hovertemplate", "texttemplate"}  # author-written templates, never data


@dataclass
class Chart:
    chart_id: str
    title: str
    alt: str          # text alternative: what the chart shows, in one or two sentences
    figure_json: str  # escaped for embedding in a <script type="application/json"> block
    rows: list[dict] = field(default_factory=list)    # the points shown: data table and CSV
    columns: list[str] = field(default_factory=list)  # CSV header / table columns, in order
    n_points: int = 0                                 # plotted data points (reference lines excluded)

    @property
    def download(self) -> Download | None:
        """The points shown, as data/<chart_id>.csv (the builder writes it); None for a chart with no points."""
        return None if self.empty else Download(self.chart_id, self.rows, self.columns)

    @property
    def empty(self) -> bool:
        return self.n_points == 0


def _safe_json(obj) -> str:
    # Escape characters that could end the script block or start markup: data may carry log strings.
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _plotly_text(value, key=None):
    """Entity-escape every string Plotly will draw, so a model name like `<img onerror=...>` is shown as
    text: Plotly decodes entities for display but would parse raw tags."""
    if isinstance(value, str):
        if key in _RAW_KEYS:
            return value
        text = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return _ALLOWED_TAGS.sub(r"<\1>", text)
    if isinstance(value, dict):
        return {k: _plotly_text(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_plotly_text(v, key) for v in value]
    return value


def _plain(values) -> list:
    if values is None:
        return []
    if hasattr(values, "tolist"):
        values = values.tolist()
    return list(values)


def _points(fig: go.Figure, x_title: str, y_title: str) -> tuple[list[dict], list[str], int]:
    """One row per plotted point (series, x, y, error bars if any), then one per reference line."""
    xcol, ycol = x_title or "x", y_title or "y"
    if ycol == xcol:
        ycol = f"{ycol} (y)"
    has_err = any(getattr(t, "error_y", None) is not None and t.error_y.array is not None for t in fig.data)
    cols = ["series", xcol, ycol] + (["minus", "plus"] if has_err else [])
    rows = []
    for i, trace in enumerate(fig.data):
        name = trace.name if trace.name is not None else f"trace {i}"
        xs, ys = _plain(getattr(trace, "x", None)), _plain(getattr(trace, "y", None))
        lo = hi = []
        if has_err and trace.error_y is not None and trace.error_y.array is not None:
            hi = _plain(trace.error_y.array)
            lo = _plain(trace.error_y.arrayminus) if trace.error_y.arrayminus is not None else hi
        for j, y in enumerate(ys):
            row = {"series": name, xcol: xs[j] if j < len(xs) else None, ycol: y}
            if has_err:
                row["minus"] = lo[j] if j < len(lo) else None
                row["plus"] = hi[j] if j < len(hi) else None
            rows.append(row)
    n_points = len(rows)
    for shape, ann in zip(fig.layout.shapes or (), fig.layout.annotations or ()):
        if shape.type == "line" and shape.y0 == shape.y1:  # hlines: ceilings drawn across the plot
            rows.append({"series": ann.text, xcol: None, ycol: shape.y0, **({"minus": None, "plus": None}
                                                                          if has_err else {})})
    return rows, cols, n_points


def natural_key(name) -> list:
    """Sort "run 2" before "run 10": digit runs compare as numbers."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", str(name))]


def _axis_values(fig: go.Figure, axis: str) -> list:
    out: list = []
    for trace in fig.data:
        out.extend(v for v in _plain(getattr(trace, axis, None)) if isinstance(v, (int, float)))
    if axis == "y":  # reference lines sit on the y axis and must stay on the scale
        out.extend(shape.y0 for shape in fig.layout.shapes or () if shape.y0 == shape.y1 and shape.y0)
    return out


def _readable_axes(fig: go.Figure, units: dict[str, str]) -> None:
    """One tick rule for every chart: a log axis a page left without tick values ticks at 1-2-5 in the unit
    its tables print (bytes as KiB/MiB/GiB), and a linear axis of bytes ticks in one binary unit instead of
    Plotly's "3M". Labels of reference lines on a log y axis move to log10 units, which is where Plotly places
    annotations on a log axis (the lines themselves take data values)."""
    for axis in ("x", "y"):
        layout_axis = getattr(fig.layout, f"{axis}axis")
        if layout_axis.tickvals is not None:
            continue
        if layout_axis.type == "log":
            getattr(fig, f"update_{axis}axes")(**log_ticks(_axis_values(fig, axis), units.get(axis, "")))
        elif units.get(axis) == "bytes":
            getattr(fig, f"update_{axis}axes")(**linear_byte_ticks(_axis_values(fig, axis)))
    if fig.layout.yaxis.type == "log":
        for ann in fig.layout.annotations or ():
            if ann.yref == "y" and isinstance(ann.y, (int, float)) and ann.y > 0:
                ann.y = math.log10(ann.y)


def make_chart(chart_id: str, fig: go.Figure, title: str, alt: str, x_title: str = "",
               y_title: str = "", rows: list[dict] | None = None, columns: list[str] | None = None,
               x_unit: str = "", y_unit: str = "") -> Chart:
    """Apply the shared look. `rows`/`columns` override the rows derived from the traces (pass them when
    the chart shows aggregates whose source rows are more useful as the download). x_unit/y_unit="bytes":
    that axis holds bytes and ticks in binary units, as the tables print them."""
    if not CHART_ID.match(chart_id or ""):
        raise ValueError(f"chart id {chart_id!r}: use letters, digits, '-' and '_' only (it names a file)")
    if x_title:
        fig.update_xaxes(title_text=x_title)
    if y_title:
        fig.update_yaxes(title_text=y_title)
    fig.update_layout(**LAYOUT)
    _readable_axes(fig, {"x": x_unit, "y": y_unit})
    n_legend = sum(1 for t in fig.data if t.showlegend is not False)
    if n_legend > 6:  # a long legend takes rows from the plot: grow the figure instead (about 3 per row)
        fig.update_layout(height=min(LAYOUT["height"] + 20 * -(-n_legend // 3), 1000))
    derived, derived_cols, n_points = _points(fig, x_title, y_title)
    if rows is None:
        rows, columns = derived, derived_cols
    elif columns is None:
        columns = list(rows[0].keys()) if rows else []
    spec = json.loads(fig.to_json())
    spec["layout"].pop("template", None)  # plotly's default template is 10 KB of noise; LAYOUT is the look
    figure = _plotly_text({"data": spec["data"], "layout": spec["layout"]})
    return Chart(chart_id, title, alt, _safe_json(figure), list(rows), list(columns), n_points)


def reference_lines(fig: go.Figure, lines: list[tuple[float, str]]) -> None:
    """Ceilings and floors (peak, measured roof, memory limit) as labelled dashed lines, one style site-wide."""
    for value, label in lines:
        fig.add_hline(y=value, line_dash="dash", line_color=REFERENCE_LINE, line_width=1.5, layer="above",
                      annotation_text=str(label), annotation_position="top left",
                      annotation_font_color=MUTED)


def noisy_markers(flags: list) -> dict:
    """Markers of one series: a point whose spread the experiment flagged as wide is drawn hollow (noise,
    not signal), the others solid; the tables flag the same rows."""
    return dict(symbol=["circle-open" if f else "circle" for f in flags], size=[9 if f else 7 for f in flags])


def spread(medians: list, lows: list, highs: list) -> dict:
    """Asymmetric error bars from p25/p75 (or any low/high pair) around the medians."""
    return dict(type="data", symmetric=False, array=[h - m for m, h in zip(medians, highs)],
                arrayminus=[m - lo for m, lo in zip(medians, lows)], thickness=1.2)


def measured_line(rows: list[dict], x: str, y: str, low: str, high: str, name: str, **style) -> go.Scatter:
    """One measured series: the medians (`y` against `x`) as lines and markers with `low`-`high` error bars
    (p25-p75), and the points whose spread the experiment flagged (`spread_wide`) hollow."""
    return go.Scatter(x=[r[x] for r in rows], y=[r[y] for r in rows], name=name, mode="lines+markers", **style,
                      marker=noisy_markers([r["spread_wide"] for r in rows]),
                      error_y=spread([r[y] for r in rows], [r[low] for r in rows], [r[high] for r in rows]))


def scale_axes(fig: go.Figure, log_x: bool = False, log_y: bool = False) -> None:
    """Logarithmic axes where asked; a linear y axis starts at zero, so a flat line near its value does not
    look like a cliff."""
    if log_x:
        fig.update_xaxes(type="log")
    if log_y:
        fig.update_yaxes(type="log")
    else:
        fig.update_yaxes(rangemode="tozero")


def lines(chart_id: str, series: dict[str, tuple[list, list]], title: str, alt: str, x_title: str,
          y_title: str, log_x: bool = False, log_y: bool = False, markers: bool = True,
          hlines: list[tuple[float, str]] | None = None, rows: list[dict] | None = None,
          columns: list[str] | None = None, x_unit: str = "", y_unit: str = "") -> Chart:
    """One line per series name; `hlines` draws ceilings (peak, measured roof) as labelled dashed lines."""
    fig = go.Figure()
    for name in sorted(series, key=natural_key):
        xs, ys = series[name]
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=str(name),
                                 mode="lines+markers" if markers else "lines"))
    reference_lines(fig, hlines or [])
    fig.update_layout(showlegend=True)  # a lone line still says what it is (Plotly hides a one-trace legend)
    scale_axes(fig, log_x, log_y)
    return make_chart(chart_id, fig, title, alt, x_title, y_title, rows, columns, x_unit, y_unit)


def bars(chart_id: str, series: dict[str, tuple[list, list]], title: str, alt: str, x_title: str,
         y_title: str, stacked: bool = False, error_y: dict[str, tuple[list, list]] | None = None,
         hlines: list[tuple[float, str]] | None = None, rows: list[dict] | None = None,
         columns: list[str] | None = None, horizontal: bool = False, y_unit: str = "") -> Chart:
    """Grouped (or stacked) bars; `error_y[name] = (minus, plus)` draws asymmetric spreads (p25/p75)."""
    fig = go.Figure()
    for name in sorted(series, key=natural_key):
        xs, ys = series[name]
        err = None
        if error_y and name in error_y:
            lo, hi = error_y[name]
            # already deltas
            err = dict(type="data", symmetric=False, array=list(hi), arrayminus=list(lo), thickness=1.2)
        cats = [str(x) for x in xs]
        if horizontal:
            fig.add_trace(go.Bar(y=cats, x=list(ys), name=str(name), orientation="h"))
        else:
            fig.add_trace(go.Bar(x=cats, y=list(ys), name=str(name), error_y=err))
    n_cats = len({str(x) for xs, _ in series.values() for x in xs})
    # A lone bar should not fill the plot: widen the gap when there are few categories.
    fig.update_layout(barmode="stack" if stacked else "group", bargap=0.25 if n_cats > 3 else 0.6)
    reference_lines(fig, hlines or [])
    return make_chart(chart_id, fig, title, alt, x_title, y_title, rows, columns,
                      y_unit="" if horizontal else y_unit)
