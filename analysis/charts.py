"""Plotly chart builders with one shared look. Charts are emitted as JSON data blocks that
assets/site.js renders, so pages carry no inline script, and ids are stable (derived from the page and
chart name) so the same DB builds byte-identical HTML."""
from __future__ import annotations

import json
from dataclasses import dataclass

import plotly.graph_objects as go

ACCENT = "#2563eb"
PALETTE = [ACCENT, "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626", "#475569"]
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"

LAYOUT = dict(
    font=dict(family=FONT, size=13),
    colorway=PALETTE,
    margin=dict(l=64, r=24, t=48, b=56),
    hovermode="x unified",
    legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
    xaxis=dict(showgrid=True, zeroline=False, automargin=True),
    yaxis=dict(showgrid=True, zeroline=False, automargin=True),
    paper_bgcolor="rgba(0,0,0,0)",
    plot_bgcolor="rgba(0,0,0,0)",
)


@dataclass
class Chart:
    chart_id: str
    title: str
    alt: str          # text alternative: what the chart shows, in one or two sentences
    figure_json: str  # escaped for embedding in a <script type="application/json"> block


def _safe_json(obj) -> str:
    # Escape characters that could end the script block or start markup: data may carry log strings.
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def make_chart(chart_id: str, fig: go.Figure, title: str, alt: str, x_title: str = "",
               y_title: str = "") -> Chart:
    fig.update_layout(**LAYOUT)
    fig.update_layout(title=dict(text=title, x=0, xanchor="left"))
    if x_title:
        fig.update_xaxes(title_text=x_title)
    if y_title:
        fig.update_yaxes(title_text=y_title)
    spec = json.loads(fig.to_json())
    spec["layout"].pop("template", None)  # plotly's default template is 10 KB of noise; LAYOUT is the look
    return Chart(chart_id, title, alt, _safe_json({"data": spec["data"], "layout": spec["layout"]}))


def lines(chart_id: str, series: dict[str, tuple[list, list]], title: str, alt: str, x_title: str,
          y_title: str, log_x: bool = False, log_y: bool = False, markers: bool = True,
          hlines: list[tuple[float, str]] | None = None) -> Chart:
    """One line per series name; `hlines` draws ceilings (peak, measured roof) as labelled dashed lines."""
    fig = go.Figure()
    for name in sorted(series):
        xs, ys = series[name]
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=str(name),
                                 mode="lines+markers" if markers else "lines"))
    for value, label in hlines or []:
        fig.add_hline(y=value, line_dash="dash", line_color="#64748b",
                      annotation_text=label, annotation_position="top left")
    if log_x:
        fig.update_xaxes(type="log")
    if log_y:
        fig.update_yaxes(type="log")
    return make_chart(chart_id, fig, title, alt, x_title, y_title)


def bars(chart_id: str, series: dict[str, tuple[list, list]], title: str, alt: str, x_title: str,
         y_title: str, stacked: bool = False, error_y: dict[str, tuple[list, list]] | None = None) -> Chart:
    fig = go.Figure()
    for name in sorted(series):
        xs, ys = series[name]
        err = None
        if error_y and name in error_y:
            lo, hi = error_y[name]
            err = dict(type="data", symmetric=False, array=list(hi), arrayminus=list(lo))
        fig.add_trace(go.Bar(x=[str(x) for x in xs], y=list(ys), name=str(name), error_y=err))
    fig.update_layout(barmode="stack" if stacked else "group")
    return make_chart(chart_id, fig, title, alt, x_title, y_title)
