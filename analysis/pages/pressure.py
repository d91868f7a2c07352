"""Pressure: how many concurrent requests fit, admitted one real prefill at a time, against the memory
ceiling; the theoretical maximum and the serving-engine capacity line; the profiler write-up's claims."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import make_chart, reference_lines
from kvreport.analysis.claims import for_query
from kvreport.analysis.site import PageSpec, Table

from ._helpers import claims_table, newest_first

PAGE = PageSpec(slug="pressure", title="Pressure", order=50)
EXPERIMENT = "pressure"
MAX_CHARTS = 3  # newest runs get a chart; every run is in the tables
MIB = 2 ** 20


def requests_chart(run_id: int, rows: list[dict], caps: list[dict], label: str):
    """KV bytes (and on a GPU the allocator's growth) per admitted request, one line per sequence length,
    with the memory ceiling and the weights drawn as dashed lines."""
    fig = go.Figure()
    cuda = any(r["memory_source"] == "cuda_allocator" for r in rows)
    for seq in sorted({r["seq_len"] for r in rows}):
        rs = [r for r in rows if r["seq_len"] == seq]
        fig.add_trace(go.Scatter(x=[r["n_requests"] for r in rs], y=[r["kv_bytes"] / MIB for r in rs],
                                 name=f"KV, {seq} tokens", mode="lines+markers"))
        if cuda:
            fig.add_trace(go.Scatter(x=[r["n_requests"] for r in rs], y=[r["allocated_delta_bytes"] / MIB for r in rs],
                                     name=f"allocated Δ, {seq} tokens", mode="lines", line=dict(dash="dot")))
    ceiling = min(c["ceiling_bytes"] for c in caps) / MIB
    weights = caps[0]["weight_bytes"] / MIB
    top = max([r["kv_bytes"] / MIB for r in rows] + [weights])
    log_y = ceiling > 20 * top  # a far-away ceiling would flatten every line at the bottom
    reference_lines(fig, [(value, f"{name} {value:,.0f} MiB")
                          for value, name in ((ceiling, "memory ceiling"), (weights, "model weights"))])
    fig.update_yaxes(type="log" if log_y else "linear", **({} if log_y else {"rangemode": "tozero"}))
    return make_chart(
        f"pressure-requests-run{run_id}", fig, f"Memory held vs requests admitted · {label}",
        "KV-cache bytes of all live requests after each admission, one line per sequence length"
        + (" (dotted: the CUDA allocator's growth over the same requests)" if cuda else "")
        + ", with the memory ceiling the run stops below and the model's weights as dashed lines"
        + (" (logarithmic y axis: the ceiling is far above what the request cap admits)." if log_y else "."),
        "requests admitted", "MiB")


@dataclass
class PressurePage:
    caps: list[dict]
    charts: list
    older_runs: int
    skips: list[dict]
    cpu_runs: list[int]
    oom_runs: list[dict]
    claims: Table  # the ledger's rows of this topic's claim query (pages/_helpers.claims_table)
    oom_runs_table: Table | None  # shown where a run measured capacity and hit an OOM
    caps_table: Table | None      # shown where a run measured capacity


def context(q, site) -> PressurePage:
    rows = q("pressure_requests")
    caps = q("pressure_capacity")
    run_ids = newest_first(caps)
    charts = []
    for rid in run_ids[:MAX_CHARTS]:
        rs = [r for r in rows if r["run_id"] == rid]
        cs = [c for c in caps if c["run_id"] == rid]
        if rs:
            charts.append(requests_chart(rid, rs, cs, site.run_label(rid)))
    statuses = q("pressure_experiment_status", experiment=EXPERIMENT)
    oom_runs = [c for c in caps if c["stop_reason"] == "oom"]
    csv = site.csv_files.get
    return PressurePage(
        oom_runs_table=None if not (caps and oom_runs) else Table("pressure-oom", oom_runs, [
            ("run_id", "run", "int"), ("seq_len", "tokens", "int"), ("max_requests_measured", "admitted", "int"),
            ("device_usable_after", "device usable after freeing", "bool"), ("notes", "notes", "text")],
            caption="Lengths that ended in an out-of-memory error (caught, freed, device checked)"),
        caps_table=None if not caps else Table("pressure-capacity", caps, [
            ("max_concurrency", "max concurrency", "num"), ("capacity_tokens", "KV capacity (tokens)", "int"),
            ("seq_len", "tokens", "int"), ("run_id", "run", "int"), ("model", "model", "text"),
            ("device_name", "device", "text"), ("max_requests_measured", "admitted", "int"),
            ("stop_reason", "stopped by", "text"), ("bytes_per_request", "bytes / request", "bytes"),
            ("formula_match", "= formula", "bool"), ("free_bytes", "free", "bytes"),
            ("ceiling_bytes", "ceiling", "bytes"),
            ("theoretical_max_requests", "theoretical max (free / request)", "int"),
            ("ceiling_max_requests", "max under ceiling", "int"),
            ("kv_over_weights", "KV admitted / weights", "ratio"),
            ("requests_to_outweigh", "requests until KV > weights", "int"),
            ("allocator_over_kv", "allocator Δ / KV", "ratio"),
            ("prefill_overhead_bytes", "prefill transient", "bytes"), ("device_usable_after", "usable after", "bool")],
            caption="Admitted requests, why the run stopped, and what the memory would hold",
            csv=csv("concurrent_capacity"), answer="max_concurrency"),
        caps=caps, charts=charts, older_runs=len(run_ids) - len(charts),
        skips=[s for s in statuses if s["status"] != "ok"],
        cpu_runs=sorted({c["run_id"] for c in caps if c["device_kind"] != "cuda"}),
        oom_runs=oom_runs,
        claims=claims_table(for_query(q, site.runs, "claim_pressure"),  # the ledger's rows: one rule, one label
                            "Concurrency claims of the profiler write-up", "pressure-claims"),
    )
