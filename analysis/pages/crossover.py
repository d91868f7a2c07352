"""Crossover: the context length at which the KV cache outweighs the model's weights, per architecture and
batch size (formula for every built-in architecture, measured for each run's model), and the profiler
write-up's claims."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import PALETTE, make_chart
from kvreport.analysis.claims import for_query
from kvreport.analysis.site import PageSpec, Table

from ._helpers import claims_table


PAGE = PageSpec(slug="crossover", title="Crossover", order=60)
EXPERIMENT = "crossover"


MUTED_LINE = "#94a3b8"  # architectures no run measured: context, drawn thin and grey


def crossover_chart(rows: list[dict]):
    """Tokens per request vs batch size, log-log. The models a run measured stand out (their formula line
    solid, each run's measurement dashed, in one colour per model, with the model's context limit dotted);
    every other architecture is a thin grey line for context. Points past a model's context limit are
    hollow: one request can never get there."""
    highlighted = sorted({r["model"] for r in rows if r["source"] == "measured"})
    colour = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(highlighted)}
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["crossover_tokens"] is None:  # sliding windows cap the cache below the weights at this batch
            continue
        measured = r["source"] == "measured"
        name = f"{r['model']} measured (run {r['run_id']})" if measured else f"{r['model']} (formula)"
        series.setdefault((r["model"] not in colour, r["model"], measured, name), []).append(r)
    fig = go.Figure()
    first_muted = True
    for (muted, model, measured, name), rs in sorted(series.items()):
        past = [r["max_positions"] is not None and r["crossover_tokens"] > r["max_positions"] for r in rs]
        marker = dict(symbol=["circle-open" if p else ("diamond" if measured else "circle") for p in past])
        if muted:  # one legend entry for all of them; the hover names each line
            fig.add_trace(go.Scatter(
                x=[r["batch_size"] for r in rs], y=[r["crossover_tokens"] for r in rs],
                name="other architectures (formula)", text=[model] * len(rs),
                hovertemplate="%{text}: %{y:,.0f} tokens at batch %{x}<extra></extra>",
                mode="lines+markers", line=dict(color=MUTED_LINE, width=1), opacity=0.6,
                marker=dict(marker, size=5), legendgroup="others", showlegend=first_muted))
            first_muted = False
        else:
            fig.add_trace(go.Scatter(
                x=[r["batch_size"] for r in rs], y=[r["crossover_tokens"] for r in rs], name=name,
                mode="lines+markers", line=dict(color=colour[model], dash="dash" if measured else "solid", width=2.5),
                marker=dict(marker, size=8)))
    for model in highlighted:
        limit = next((r["max_positions"] for r in rows if r["model"] == model and r["max_positions"]), None)
        if limit:
            fig.add_hline(y=limit, line_dash="dot", line_color=colour[model], line_width=1.5,
                          annotation_text=f"{model} context limit {limit:,}", annotation_position="bottom right",
                          annotation_font_color=colour[model])
    batches = sorted({r["batch_size"] for rs in series.values() for r in rs})
    fig.update_xaxes(type="log", tickvals=batches, ticktext=[str(b) for b in batches])
    fig.update_yaxes(type="log")
    return make_chart(
        "crossover-by-batch", fig, "Tokens per request at which KV = weights, by batch size",
        "The context length per request at which the KV cache of the whole batch equals the weight bytes, "
        "against batch size, both axes logarithmic: every line falls as 1/batch. In colour, the models a run "
        "measured: the formula (solid), each run's measurement (dashed) and the model's context limit (dotted); "
        "in grey, every other built-in architecture by the formula. Hollow points lie past the model's context "
        "limit: one request can never get there. Points missing at small batches mean a sliding window caps the "
        "cache below the weights.", "batch size (requests)", "tokens per request",
        rows=[{k: r[k] for k in ("run_id", "model", "source", "batch_size", "crossover_tokens", "max_positions")}
              for rs in series.values() for r in rs],
        columns=["run_id", "model", "source", "batch_size", "crossover_tokens", "max_positions"])


def gqa_note(batch1: list[dict]) -> dict | None:
    """The MHA-vs-GQA comparison the page spells out, from the newest run's formula rows (`batch1` is in run
    order; None when they are absent). The head counts come from the newest formula row of the GQA model that
    recorded them (some runs' rows did not: the page printed "None of None"); with none, `heads` is None and the
    page says it without numbers."""
    f = {r["model"]: r for r in batch1 if r["source"] == "formula"}
    mha, gqa, swa = f.get("llama-2-7b"), f.get("llama-3.1-8b"), f.get("mistral-7b")
    if not (mha and gqa and mha["crossover_tokens"] and gqa["crossover_tokens"]):
        return None
    heads = [r for r in batch1 if r["source"] == "formula" and r["model"] == gqa["model"]
             and r.get("n_heads") and r.get("n_kv_heads")]
    return {
        "mha": mha, "gqa": gqa, "swa": swa, "heads": heads[-1] if heads else None,
        "bpt_ratio": mha["kv_bytes_per_token"] / gqa["kv_bytes_per_token"],
        "tokens_ratio": gqa["crossover_tokens"] / mha["crossover_tokens"],
        "weights_ratio": gqa["weight_bytes"] / mha["weight_bytes"],
    }


@dataclass
class CrossoverPage:
    rows: list[dict]
    batch1: list[dict]
    batch_chart: object
    newest: int | None       # the run whose formula rows are shown (identical in every run)
    gqa: dict | None
    agreement: list[dict]
    skips: list[dict]
    cpu_runs: list[int]
    claims: Table  # the ledger's rows of this topic's claim query (pages/_helpers.claims_table)
    # The tables under the chart, where a run computed crossovers (None otherwise).
    batch1_table: Table | None
    agreement_table: Table | None
    rows_table: Table | None


def batch1_display(rows: list[dict]) -> list[dict]:
    """The one-request rows with two pairs of columns said in one cell each, so the table fits a desktop window:
    where the row comes from ("run 3" measured it; "formula" rows all come from the run the caption names) and the
    KV heads of the attention heads ("2 of 14")."""
    def heads(r):
        return f"{r['n_kv_heads']} of {r['n_heads']}" if r["n_heads"] and r["n_kv_heads"] else None

    return [dict(r, source_run=f"run {r['run_id']}" if r["source"] == "measured" else r["source"],
                 kv_heads_of_heads=heads(r)) for r in rows]


def context(q, site) -> CrossoverPage:
    rows = q("crossover_all")
    batch1 = q("crossover_batch1")
    # Formula rows are the same in every run: show the newest run's; measured rows of every run.
    newest = max((r["run_id"] for r in rows if r["source"] == "formula"), default=None)
    shown = [r for r in rows if r["source"] == "measured" or r["run_id"] == newest]
    batch_chart = crossover_chart(shown)
    table_b1 = [r for r in batch1 if r["source"] == "measured" or r["run_id"] == newest]
    statuses = q("pressure_experiment_status", experiment=EXPERIMENT)
    agreement = q("crossover_measured_vs_formula")
    csv = site.csv_files.get
    return CrossoverPage(
        batch1_table=None if not shown else Table("crossover-batch1", batch1_display(table_b1), [
            ("model", "model", "text"), ("crossover_tokens", "crossover, 1 request", "num"),
            ("source_run", "source", "text"), ("dtype", "dtype", "text"),
            ("weight_bytes", "weights", "bytes"), ("kv_bytes_per_token", "KV B/token", "int"),
            ("kv_heads_of_heads", "KV heads of heads", "text"), ("sliding_window", "window", "int"),
            ("max_positions", "context limit", "int"), ("exceeds_max_positions", "beyond context", "bool"),
            ("crossover_b64", "per request at batch 64", "num"),
            ("first_batch_reaching", "first batch that reaches it", "int"),
            ("requests_512_to_outweigh", "512-token requests until KV > weights", "int"),
            ("vs_llama2_7b", "× llama-2-7b", "ratio")],
            caption=f'Crossover for one request per architecture (formula rows from run {newest}; '
                    'measured rows of every run)'),
        agreement_table=None if not (shown and agreement) else Table("crossover-agreement", agreement, [
            ("run_id", "run", "int"), ("model", "model", "text"), ("measured_dtype", "measured dtype", "text"),
            ("measured_bytes_per_token", "measured B/token", "int"),
            ("formula_bytes_per_token", "formula B/token (16-bit)", "int"),
            ("measured_weight_bytes", "measured weights", "bytes"),
            ("formula_weight_bytes", "formula weights (16-bit)", "bytes"),
            ("measured_tokens", "measured crossover", "num"), ("formula_tokens", "formula crossover", "num"),
            ("agree", "agree (0.1%)", "bool")],
            caption="A run's own model: cache tensors and loaded parameters against config and parameter count"),
        rows_table=None if not shown else Table("crossover-all", shown, [
            ("model", "model", "text"), ("source", "source", "text"), ("run_id", "run", "int"),
            ("batch_size", "batch", "int"), ("crossover_tokens", "tokens per request", "num"),
            ("min_tokens_kv_exceeds", "first whole count KV ≥ weights", "int"),
            ("crossover_total_tokens", "tokens across the batch", "num"),
            ("kv_bytes_per_token", "KV B/token", "int"), ("weight_bytes", "weights", "bytes")],
            caption="Crossover per architecture and batch size", csv=csv("crossover"), fold=False),
        rows=shown, batch1=table_b1, batch_chart=batch_chart, newest=newest,
        gqa=gqa_note(batch1),
        agreement=agreement,
        skips=[s for s in statuses if s["status"] != "ok"],
        cpu_runs=sorted({s["run_id"] for s in statuses if s["status"] == "ok" and s["device_kind"] != "cuda"}),
        claims=claims_table(for_query(q, site.runs, "claim_crossover"),  # the ledger's rows: one rule, one label
                            "Crossover claims of the profiler write-up", "crossover-claims"),
    )
