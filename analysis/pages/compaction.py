"""Compaction: GB/s of gathering live requests' KV caches into contiguous memory, naive (one copy per
layer and tensor) vs batched (one gather), across workload sizes, against the copy roof and the peak."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import make_chart, measured_line, reference_lines, scale_axes
from kvreport.analysis.site import PageSpec, Table

from ._helpers import charts_per_run, skip_notes

PAGE = PageSpec(slug="compaction", title="Compaction", order=40)
EXPERIMENT = "compaction"


def gbs_chart(run_id: int, rows: list[dict], label: str):
    fig = go.Figure()
    for method in ("naive", "triton_layers", "batched", "triton"):
        rs = [r for r in rows if r["method"] == method]
        if not rs:
            continue
        fig.add_trace(measured_line(rs, "bytes_moved", "gbs", "gbs_low", "gbs_high", method))
    same_size = [r for r in rows if r["method"] == "naive" and r["roof_basis"] == "same-size copy roof"]
    if same_size:  # the roof curve: the copy roof measured at each workload's size
        fig.add_trace(go.Scatter(x=[r["bytes_moved"] for r in same_size], y=[r["roof_gbs"] for r in same_size],
                                 name="copy roof, same size", mode="lines", line={"dash": "dot"}))
    ceilings = [] if same_size else [(rows[0]["roof_gbs"], "measured copy roof")]
    if rows[0]["peak_gbs"]:
        ceilings.append((rows[0]["peak_gbs"], "theoretical peak"))
    reference_lines(fig, [(value, f"{name} {value:,.0f} GB/s") for value, name in ceilings])
    scale_axes(fig, log_x=True)
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
    than NEIGHBOUR_TOLERANCE (neighbours timed the same way: alone, or beside the same experiment): a roof
    should change smoothly with size, so such a point is noise in the roof, and every "% of roof" divided by
    it inherits that noise."""
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
    charts: list
    older_runs: int
    skips: list[dict]
    ceiling_skips: list[dict]
    ceilings_table: Table
    # The tables below the charts, shown when a run measured compaction (None otherwise).
    ratios_table: Table | None = None
    roof_curve_table: Table | None = None
    regimes_table: Table | None = None
    rows_table: Table | None = None
    roofs: list[dict] | None = None  # one roof per device with its spread, and how the curve strays from it
    gpu_pending: bool = False  # only CPU runs: the GPU figures (triton, the H200 target) are pending


def context(q, site) -> CompactionPage:
    rows = q("compact_by_size")
    charts, older_runs = charts_per_run(rows, gbs_chart, site)
    ceilings = q("ceilings_by_run")
    curve = flag_roof_outliers(q("roof_curve"))
    tables = {} if not rows else _measured_tables(rows, q("compact_ratios"), q("compact_regimes"), curve, site)
    return CompactionPage(rows=rows, roofs=roof_summaries(ceilings, curve), charts=charts,
                          older_runs=older_runs,
                          skips=skip_notes(q, EXPERIMENT), ceiling_skips=skip_notes(q, "device_ceilings"),
                          ceilings_table=Table("compaction-ceilings", ceilings, [
                              ("roof_gbs", "device copy roof", "gbs"), ("run_id", "run", "int"),
                              ("device_name", "device", "text"), ("peak_gbs", "theoretical peak", "gbs"),
                              ("peak_source", "peak from", "text"), ("roof_p25_gbs", "roof p25", "gbs"),
                              ("roof_p75_gbs", "roof p75", "gbs"), ("roof_n", "n", "int"),
                              ("roof_worst_round_gbs", "slowest round", "gbs"), ("buffer_bytes", "buffer", "bytes"),
                              ("roof_pct_of_peak", "roof / peak", "pct")],
                              caption="The device copy roof (the measured copy roof of one large copy) and "
                                      "theoretical peak DRAM bandwidth per run",
                              csv=site.csv_files.get("device_ceilings"), answer="roof_gbs"),
                          gpu_pending=bool(rows) and all(r["device_kind"] != "cuda" for r in rows), **tables)


def _measured_tables(rows, ratios, regimes, roof_curve, site) -> dict:
    return dict(
        ratios_table=Table("compaction-ratios", ratios, [
            ("batched_over_naive", "batched / naive", "ratio"), ("run_id", "run", "int"),
            ("bytes_moved", "bytes moved", "bytes"), ("kv_bytes", "live KV", "bytes"),
            ("n_requests", "requests", "int"), ("seq_len", "tokens each", "int"),
            ("roof_gbs", "copy roof, same size", "gbs"), ("naive_gbs", "naive", "gbs"),
            ("batched_gbs", "batched", "gbs"), ("triton_gbs", "triton", "gbs"),
            ("naive_pct_of_roof", "naive % of roof", "pct"), ("batched_pct_of_roof", "batched % of roof", "pct"),
            ("triton_layers_pct_of_roof", "triton per layer % of roof", "pct"),
            ("triton_pct_of_roof", "triton % of roof", "pct"), ("batched_pct_of_peak", "batched % of peak", "pct"),
            ("correct", "all correct", "bool"), ("spread_wide", "wide spread", "bool"),
            ("over_roof", "> 105% of roof", "bool"), ("dram_sized", "≥ 4× LLC", "bool"),
            ("target_size", "≥ 256 MiB moved", "bool")],
            caption="Per workload: each method / naive and / the copy roof of the same size "
                    "(target on a GPU: triton ≥ 85% of it from 256 MiB moved)",
            answer="batched_over_naive", flag="spread_wide"),
        roof_curve_table=Table("compaction-roof-curve", roof_curve, [
            ("gbs", "GB/s", "gbs"), ("run_id", "run", "int"), ("op", "op", "text"), ("bytes", "bytes", "bytes"),
            ("p25_gbs", "p25", "gbs"), ("p75_gbs", "p75", "gbs"), ("n", "n", "int"), ("rounds", "rounds", "int"),
            ("flushed", "cache flushed", "bool"), ("dram_sized", "≥ 4× LLC", "bool"),
            ("measured_with", "timed", "text")],
            caption="Copy (read + written) and read (streaming sum) bandwidth at every size the experiments used",
            csv=site.csv_files.get("roof_curve"), answer="gbs", flag="disagrees",
            flag_note="more than 25% from both neighbouring sizes; "
                      "a “% of roof” divided by such a point carries its noise"),
        regimes_table=Table("compaction-regimes", regimes, [
            ("large_over_small", "large / small", "ratio"), ("run_id", "run", "int"), ("method", "method", "text"),
            ("small_gbs", "< 5 MB live", "gbs"), ("large_gbs", "> 10 MB live", "gbs"),
            ("small_pct_of_roof", "small % of roof", "pct"), ("large_pct_of_roof", "large % of roof", "pct"),
            ("best_gbs", "best", "gbs"), ("best_pct_of_peak", "best % of peak", "pct"),
            ("best_pct_of_roof", "best % of roof", "pct"),
            ("naive_catches_up_bytes", "naive within 10% of batched from", "bytes"),
            ("batched_half_roof_bytes", "batched ≥ 50% of roof from", "bytes")],
            caption="Small and large workloads (the profiler write-up's split, by live KV bytes) "
                    "and where the regimes cross",
            answer="large_over_small"),
        rows_table=Table("compaction-all", rows, [
            ("gbs", "GB/s", "gbs"), ("run_id", "run", "int"), ("method", "method", "text"),
            ("bytes_moved", "bytes moved", "bytes"), ("launches", "launches", "int"),
            ("time_ms", "time (median)", "ms"), ("p25_ms", "p25", "ms"), ("p75_ms", "p75", "ms"), ("n", "n", "int"),
            ("host_ms", "host per call", "ms"), ("pct_of_roof", "% of same-size copy roof", "pct"),
            ("pct_of_peak", "% of peak", "pct"), ("correct", "correct", "bool"),
            ("cache_flushed", "cache flushed", "bool"), ("over_roof", "> 105% of roof", "bool")],
            caption="Compaction per method and workload", csv=site.csv_files.get("compaction"), answer="gbs",
            flag="spread_wide" if "spread_wide" in rows[0] else None))
