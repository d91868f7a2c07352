"""Interference: compaction alone, a decode loop alone, and both at once, with spreads; the sanity bound
(both may not beat the longer part alone, nor its bytes over the copy roof) and the profiler write-up's claim."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import PALETTE, make_chart, reference_lines, scale_axes, spread
from kvreport.analysis.claims import for_query
from kvreport.analysis.site import PageSpec, Table

from ._helpers import charts_per_run, claims_table


PAGE = PageSpec(slug="interference", title="Interference", order=55)
EXPERIMENT = "interference"
MODES = ("compact", "decode", "both")


def timings_chart(run_id: int, rows: list[dict], summary: dict | None, label: str):
    """The three median times with p25-p75 bars; dashed: the longer part alone and, when a roof was
    measured, the bytes of both over it (the two lower bounds on `both`)."""
    by_mode = {r["mode"]: r for r in rows}
    fig = go.Figure()
    for i, mode in enumerate(m for m in MODES if m in by_mode):
        r = by_mode[mode]
        fig.add_trace(go.Bar(
            x=[mode], y=[r["time_ms"]], name=mode, marker_color=PALETTE[i],
            error_y=spread([r["time_ms"]], [r["p25_ms"]], [r["p75_ms"]])))
    lines = []
    if summary:
        lines.append((summary["longer_alone_ms"], f"longer part alone {summary['longer_alone_ms']:.3g} ms"))
        if summary["both_roof_floor_ms"]:
            lines.append((summary["both_roof_floor_ms"],
                          f"bytes of both / bandwidth ceiling {summary['both_roof_floor_ms']:.3g} ms"))
    reference_lines(fig, lines)
    fig.update_layout(showlegend=False, bargap=0.45)
    scale_axes(fig)
    conc = rows[0]["concurrency"]
    return make_chart(
        f"interference-times-run{run_id}", fig, f"Compaction, decode and both at once · {label}",
        f"Median time of compaction alone, the decode loop alone, and both together ({conc.replace('_', ' ')}), "
        "with p25-p75 error bars. Dashed lines: the two lower bounds on 'both' (the longer part alone; the bytes "
        "of both over the bandwidth ceiling, i.e. the measured copy roof or a part's own GB/s where that beat "
        "it). A 'both' bar below them would be a timing error.",
        "mode", "time (ms)")


@dataclass
class InterferencePage:
    rows: list[dict]
    summary: list[dict]
    charts: list
    older_runs: int
    skips: list[dict]
    cpu_runs: list[int]
    violations: list[dict]
    claims: Table  # the ledger's rows of this topic's claim query (pages/_helpers.claims_table)
    summary_table: Table | None  # both tables shown where a run measured interference (None otherwise)
    rows_table: Table | None
    gpu_pending: bool = False  # only CPU runs: the GPU figures (graph-replay decode on streams) are pending


def context(q, site) -> InterferencePage:
    rows = q("interference_modes")
    summary = q("interference_summary")
    by_run = {s["run_id"]: s for s in summary}
    charts, older_runs = charts_per_run(
        rows, lambda rid, rs, label: timings_chart(rid, rs, by_run.get(rid), label), site,
        run_ids=sorted(by_run, reverse=True))
    statuses = q("pressure_experiment_status", experiment=EXPERIMENT)
    csv = site.csv_files.get
    return InterferencePage(
        summary_table=None if not summary else Table("interference-summary", summary, [
            ("slowdown_vs_longer", "both / longer alone", "ratio"), ("bound_violated", "bound violated", "bool"),
            ("decode_inflation", "decode inflation together", "ratio"),
            ("compact_bw_lost", "compaction bandwidth lost", "pct"), ("run_id", "run", "int"),
            ("model", "model", "text"), ("device_name", "device", "text"), ("concurrency", "concurrency", "text"),
            ("decode_mode", "decode mode", "text"), ("compact_ms", "compact", "ms"), ("decode_ms", "decode", "ms"),
            ("balance_ratio", "compact / decode", "ratio"), ("balanced", "within 0.5–2×", "bool"),
            ("both_ms", "both", "ms"), ("vs_sum", "both / sum", "ratio"),
            ("overlap_saved_ms", "saved vs sequential", "ms"), ("ceiling_gbs", "bandwidth ceiling", "gbs"),
            ("both_roof_floor_ms", "bytes of both / ceiling", "ms"), ("correct", "gather correct", "bool")],
            caption="Both at once against each part alone (1.00 = perfect overlap; = sum: none)",
            answer="slowdown_vs_longer"),
        rows_table=None if not summary else Table("interference-all", rows, [
            ("time_ms", "median", "ms"), ("run_id", "run", "int"), ("mode", "mode", "text"),
            ("concurrency", "concurrency", "text"), ("p25_ms", "p25", "ms"), ("p75_ms", "p75", "ms"),
            ("n", "n", "int"), ("bytes_moved", "bytes (lower bound)", "bytes"), ("gbs", "GB/s", "gbs"),
            ("pct_of_roof", "% of roof", "pct"), ("bound_ms", "bound", "ms"), ("bound_violated", "violated", "bool"),
            ("bound_note", "why", "text"), ("decode_steps", "decode steps", "int"), ("decode_batch", "batch", "int"),
            ("prefix_len", "prefix", "int")],
            caption="Compaction, decode and both per run", csv=csv("interference"), answer="time_ms"),
        rows=rows, summary=summary, charts=charts, older_runs=older_runs,
        skips=[s for s in statuses if s["status"] != "ok"],
        cpu_runs=sorted({s["run_id"] for s in summary if s["concurrency"] != "cuda_streams"}),
        violations=[s for s in summary if s["bound_violated"]],
        claims=claims_table(for_query(q, site.runs, "claim_interference"),  # the ledger's rows: one rule, one label
                            "Interference claims of the profiler write-up", "interference-claims"),
        gpu_pending=bool(summary) and all(s["device_kind"] != "cuda" for s in summary),
    )
