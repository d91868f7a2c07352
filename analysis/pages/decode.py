"""Decode: the cost of one decode step across prefix lengths and batch sizes, against the bandwidth floor
(bytes the step must read / measured copy roof), and what bounds it."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import make_chart, measured_line, reference_lines, scale_axes
from kvreport.analysis.site import PageSpec, Table

from ._helpers import charts_per_run, skip_notes

PAGE = PageSpec(slug="decode", title="Decode", order=20)
EXPERIMENT = "decode_cost"


def step_chart(run_id: int, rows: list[dict], label: str):
    fig = go.Figure()
    dash = {"eager": "solid", "static": "dash", "graph": "dot"}  # modes that overlap stay told apart
    for _, mode, batch in sorted({(r["mode_order"], r["mode"], r["batch_size"]) for r in rows}):
        rs = [r for r in rows if r["batch_size"] == batch and r["mode"] == mode]
        fig.add_trace(measured_line(rs, "prefix_len", "step_ms", "p25_ms", "p75_ms", f"{mode}, batch {batch}",
                                    line=dict(dash=dash.get(mode, "solid"))))
    floor = rows[0]["weights_floor_ms"]
    basis = "read roof" if rows[0]["roof_basis"] == "same-size read roof" else "copy roof"
    reference_lines(fig, [(floor, f"weights / {basis} = {floor:.3g} ms")])
    scale_axes(fig, log_x=True)
    return make_chart(
        f"decode-step-run{run_id}", fig, f"One decode step vs prefix length · {label}",
        "Median time of one decode step (one new token per sequence) for each prefix length, one line per "
        "mode (eager: DynamicCache; static: preallocated cache; graph: CUDA graph replay) and batch size, "
        "with p25-p75 error bars; hollow points have a wide spread (noise, not signal). The dashed line is "
        "the time needed just to read the weights once at the "
        "measured roof: a bandwidth-bound step would sit close to it.",
        "prefix length (tokens)", "step time (ms)")


@dataclass
class DecodePage:
    steps: list[dict]
    variation: list[dict]
    charts: list
    skips: list[dict]
    older_runs: int  # runs in the tables without a chart of their own
    variation_table: Table | None  # both tables shown where a run timed decode steps (None otherwise)
    steps_table: Table | None
    gpu_pending: bool = False  # only CPU runs: the GPU figures (graph mode, launch overhead) are pending


def context(q, site) -> DecodePage:
    steps = q("decode_steps")
    variation = q("decode_variation")
    charts, older_runs = charts_per_run(steps, step_chart, site)
    csv = site.csv_files.get
    return DecodePage(steps=steps, variation=variation, charts=charts, skips=skip_notes(q, EXPERIMENT),
                      variation_table=None if not steps else Table("decode-bound", variation, [
                          ("bound", "bound", "text"), ("run_id", "run", "int"), ("model", "model", "text"),
                          ("dtype", "dtype", "text"), ("device_name", "device", "text"),
                          ("batch_size", "batch", "int"), ("step_ms_at_min_prefix", "step", "ms"),
                          ("pct_of_roof", "% of same-size read roof", "pct"),
                          ("times_weights_floor", "× weights-only floor", "ratio"),
                          ("achieved_gbs", "achieved", "gbs"), ("variation", "step-cost variation", "pct"),
                          ("variation_64_512", "variation 64-512", "pct"), ("min_prefix", "prefix from", "int"),
                          ("max_prefix", "prefix to", "int"), ("weights_floor_ms", "weights-only floor", "ms"),
                          ("pct_of_peak", "% of peak", "pct"), ("batch_scaling", "largest batch / batch 1", "ratio")],
                          caption="What bounds the step, per run and batch (at the shortest prefix)", answer="bound"),
                      steps_table=None if not steps else Table("decode-steps", steps, [
                          ("step_ms", "step (median)", "ms"), ("run_id", "run", "int"), ("mode", "mode", "text"),
                          ("prefix_len", "prefix", "int"), ("batch_size", "batch", "int"), ("p25_ms", "p25", "ms"),
                          ("p75_ms", "p75", "ms"), ("n", "n", "int"), ("host_ms", "host per call", "ms"),
                          ("kv_growth_bytes", "KV growth", "bytes"),
                          ("expected_growth_bytes", "batch × formula", "bytes"), ("growth_match", "match", "bool"),
                          ("bytes_read", "bytes read", "bytes"), ("achieved_gbs", "achieved", "gbs"),
                          ("pct_of_roof", "% of same-size read roof", "pct"), ("pct_of_peak", "% of peak", "pct"),
                          ("times_floor", "× bandwidth floor", "ratio"),
                          ("recopy_bytes", "torch.cat re-copy", "bytes"), ("overhead_ms", "host − GPU-busy", "ms"),
                          ("over_roof", "> 105% of roof", "bool")],
                          caption="Decode step per mode, prefix and batch "
                                  "(bandwidth floor: bytes read + written over the same-size read roof)",
                          csv=csv("decode_cost"), answer="step_ms", flag="spread_wide"),
                      older_runs=older_runs,
                      gpu_pending=bool(steps) and all(r["device_kind"] != "cuda" for r in steps))
