"""Compaction: GB/s of gathering live requests' KV caches into contiguous memory, naive (one copy per
layer and tensor) vs batched (one gather), across workload sizes, against the copy roof and the peak."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import make_chart, noisy_markers, reference_lines, spread
from kvreport.analysis.site import PageSpec

from ._helpers import newest_first, skip_notes

PAGE = PageSpec(slug="compaction", title="Compaction", order=40)
EXPERIMENT = "kv_compact_v2"
MAX_CHARTS = 4


def gbs_chart(run_id: int, rows: list[dict], label: str):
    fig = go.Figure()
    for method in ("naive", "triton_layers", "batched", "triton"):
        rs = [r for r in rows if r["method"] == method]
        if not rs:
            continue
        fig.add_trace(go.Scatter(
            x=[r["bytes_moved"] for r in rs], y=[r["gbs"] for r in rs], name=method, mode="lines+markers",
            marker=noisy_markers([r["spread_wide"] for r in rs]), error_y=spread([r["gbs"] for r in rs], [r["gbs_low"] for r in rs], [r["gbs_high"] for r in rs])))
    same_size = [r for r in rows if r["method"] == "naive" and r["roof_basis"] == "same-size copy roof"]
    if same_size:  # the roof curve: the copy roof measured at each workload's size
        fig.add_trace(go.Scatter(x=[r["bytes_moved"] for r in same_size], y=[r["roof_gbs"] for r in same_size],
                                 name="copy roof, same size", mode="lines", line={"dash": "dot"}))
    ceilings = [] if same_size else [(rows[0]["roof_gbs"], "measured copy roof")]
    if rows[0]["peak_gbs"]:
        ceilings.append((rows[0]["peak_gbs"], "theoretical peak"))
    reference_lines(fig, [(value, f"{name} {value:,.0f} GB/s") for value, name in ceilings])
    fig.update_xaxes(type="log")
    fig.update_yaxes(rangemode="tozero")
    return make_chart(
        f"compaction-gbs-run{run_id}", fig, f"Compaction bandwidth vs workload size · {label}",
        "GB/s (bytes read + written over the median time) of each gather method for each workload size, with "
        "p25-p75 error bars (hollow points: a wide spread, noise rather than signal), against the copy roof "
        "measured at the same size (dotted) and (on a GPU) the theoretical peak (dashed). The x axis is "
        "logarithmic.",
        "bytes moved (read + written)", "GB/s", x_unit="bytes")


NEIGHBOUR_TOLERANCE = 0.25  # a roof point this far from both neighbours (same run and op) is flagged


def flag_roof_outliers(curve: list[dict]) -> list[dict]:
    """Mark each roof-curve point that disagrees with both its neighbours in size (same run, same op) by more
    than NEIGHBOUR_TOLERANCE (neighbours timed the same way: alone, or beside the same experiment): a roof should change smoothly with size, so such a point is noise in the roof,
    and every "% of roof" divided by it inherits that noise."""
    out = [dict(r, disagrees=False) for r in curve]
    groups: dict[tuple, list[dict]] = {}
    for r in out:
        groups.setdefault((r["run_id"], r["op"], r.get("measured_with")), []).append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: r["bytes"])
        for prev, cur, nxt in zip(rows, rows[1:], rows[2:]):
            if all(n["gbs"] and abs(cur["gbs"] - n["gbs"]) / n["gbs"] > NEIGHBOUR_TOLERANCE for n in (prev, nxt)):
                cur["disagrees"] = True
    return out


def roof_summaries(ceilings: list[dict], curve: list[dict]) -> list[dict]:
    """Per run: the one device roof with its p25-p75, and how far the same-size roofs along the curve stray
    from it (the DRAM-sized copy points), with the points that disagree with their neighbours."""
    out = []
    for c in ceilings:
        pts = [r for r in curve if r["run_id"] == c["run_id"] and r["op"] == "copy" and r["gbs"]]
        dram = [r for r in pts if r["dram_sized"]]
        out.append({"run_id": c["run_id"], "device_name": c["device_name"], "roof_gbs": c["roof_gbs"],
                    "p25": c["roof_p25_gbs"], "p75": c["roof_p75_gbs"],
                    "dram_lo": min((r["gbs"] for r in dram), default=None),
                    "dram_hi": max((r["gbs"] for r in dram), default=None), "n_dram": len(dram),
                    "disagree": [r for r in curve if r["run_id"] == c["run_id"] and r["disagrees"]]})
    return out


@dataclass
class CompactionPage:
    rows: list[dict]
    ratios: list[dict]
    regimes: list[dict]
    ceilings: list[dict]
    charts: list
    older_runs: int
    skips: list[dict]
    ceiling_skips: list[dict]
    roof_curve: list[dict] = None
    roofs: list[dict] = None  # one roof per device with its spread, and how the curve strays from it
    gpu_pending: bool = False  # only CPU runs: the GPU figures (triton, the H200 target) are pending


def context(q, site) -> CompactionPage:
    rows = q("compact_by_size")
    run_ids = newest_first(rows)
    charts = [gbs_chart(rid, [r for r in rows if r["run_id"] == rid], site.run_label(rid))
              for rid in run_ids[:MAX_CHARTS]]
    ceilings = q("ceilings_by_run")
    curve = flag_roof_outliers(q("roof_curve"))
    return CompactionPage(rows=rows, ratios=q("compact_ratios"), regimes=q("compact_regimes"),
                          ceilings=ceilings, roofs=roof_summaries(ceilings, curve), charts=charts, older_runs=len(run_ids) - len(charts),
                          skips=skip_notes(q, EXPERIMENT), ceiling_skips=skip_notes(q, "device_ceilings"),
                          roof_curve=curve,
                          gpu_pending=bool(rows) and all(r["device_kind"] != "cuda" for r in rows))
