"""Decode: the cost of one decode step across prefix lengths and batch sizes, against the bandwidth floor
(bytes the step must read / measured copy roof), and what bounds it."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import make_chart, noisy_markers, reference_lines, spread
from kvreport.analysis.site import PageSpec

from ._helpers import newest_first, skip_notes

PAGE = PageSpec(slug="decode", title="Decode", order=20)
EXPERIMENT = "kv_decode_cost_v2"
MAX_CHARTS = 4  # newest runs get a chart; every run is in the tables


def step_chart(run_id: int, rows: list[dict], label: str):
    fig = go.Figure()
    dash = {"eager": "solid", "static": "dash", "graph": "dot"}  # modes that overlap stay told apart
    for _, mode, batch in sorted({(r["mode_order"], r["mode"], r["batch_size"]) for r in rows}):
        rs = [r for r in rows if r["batch_size"] == batch and r["mode"] == mode]
        fig.add_trace(go.Scatter(
            x=[r["prefix_len"] for r in rs], y=[r["step_ms"] for r in rs], name=f"{mode}, batch {batch}",
            mode="lines+markers", line=dict(dash=dash.get(mode, "solid")), marker=noisy_markers([r["spread_wide"] for r in rs]),
            error_y=spread([r["step_ms"] for r in rs], [r["p25_ms"] for r in rs], [r["p75_ms"] for r in rs])))
    floor = rows[0]["weights_floor_ms"]
    basis = "read roof" if rows[0]["roof_basis"] == "same-size read roof" else "copy roof"
    reference_lines(fig, [(floor, f"weights / {basis} = {floor:.3g} ms")])
    fig.update_xaxes(type="log")
    fig.update_yaxes(rangemode="tozero")
    return make_chart(
        f"decode-step-run{run_id}", fig, f"One decode step vs prefix length · {label}",
        "Median time of one decode step (one new token per sequence) for each prefix length, one line per "
        "mode (eager: DynamicCache; static: preallocated cache; graph: CUDA graph replay) and batch size, "
        "with p25-p75 error bars; hollow points have a wide spread (noise, not signal). The dashed line is the time needed just to read the weights once at the "
        "measured roof: a bandwidth-bound step would sit close to it.",
        "prefix length (tokens)", "step time (ms)")


@dataclass
class DecodePage:
    steps: list[dict]
    variation: list[dict]
    charts: list
    skips: list[dict]
    older_runs: int  # runs in the tables without a chart of their own
    gpu_pending: bool = False  # only CPU runs: the GPU figures (graph mode, launch overhead) are pending


def context(q, site) -> DecodePage:
    steps = q("decode_steps")
    variation = q("decode_variation")
    run_ids = newest_first(steps)
    charts = [step_chart(rid, [r for r in steps if r["run_id"] == rid], site.run_label(rid))
              for rid in run_ids[:MAX_CHARTS]]
    return DecodePage(steps=steps, variation=variation, charts=charts, skips=skip_notes(q, EXPERIMENT),
                      older_runs=len(run_ids) - len(charts),
                      gpu_pending=bool(steps) and all(r["device_kind"] != "cuda" for r in steps))
