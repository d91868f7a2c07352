"""Crossover: the context length at which the KV cache outweighs the model's weights, per architecture and
batch size (formula for every built-in architecture, measured for each run's model), and the seed's claims."""
from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from kvreport.analysis.charts import PALETTE, make_chart
from kvreport.analysis.site import PageSpec

from . import _claims

PAGE = PageSpec(slug="crossover", title="Crossover", order=60)
EXPERIMENT = "kv_crossover_v3"


def crossover_chart(rows: list[dict]):
    """Tokens per request vs batch size, log-log, one line per architecture (formula, solid) and per run's
    own model (measured, dashed); more lines than colours reuse a colour with a dotted line."""
    series: dict[tuple[str, bool], tuple[list, list]] = {}
    for r in rows:
        if r["crossover_tokens"] is None:  # sliding windows cap the cache below the weights at this batch
            continue
        measured = r["source"] == "measured"
        name = f"{r['model']} measured (run {r['run_id']})" if measured else r["model"]
        xs, ys = series.setdefault((name, measured), ([], []))
        xs.append(r["batch_size"])
        ys.append(r["crossover_tokens"])
    fig = go.Figure()
    for i, ((name, measured), (xs, ys)) in enumerate(sorted(series.items())):
        dash = "dash" if measured else ("solid" if i < len(PALETTE) else "dot")
        fig.add_trace(go.Scatter(x=xs, y=ys, name=name, mode="lines+markers",
                                 line=dict(color=PALETTE[i % len(PALETTE)], dash=dash),
                                 marker=dict(symbol="diamond" if measured else "circle")))
    batches = sorted({x for xs, _ in series.values() for x in xs})
    fig.update_xaxes(type="log", tickvals=batches, ticktext=[str(b) for b in batches])
    fig.update_yaxes(type="log")
    return make_chart(
        "crossover-by-batch", fig, "Tokens per request at which KV = weights, by batch size",
        "For each architecture (formula, solid) and each run's own model (measured, dashed), the context length "
        "per request at which the KV cache of the whole batch equals the weight bytes, against batch size. Both "
        "axes are logarithmic: every line falls as 1/batch. Points missing at small batches mean a sliding "
        "window caps the cache below the weights.", "batch size (requests)", "tokens per request")


def gqa_note(batch1: list[dict]) -> dict | None:
    """The MHA-vs-GQA comparison the page spells out, from the formula rows (None when they are absent)."""
    f = {r["model"]: r for r in batch1 if r["source"] == "formula"}
    mha, gqa, swa = f.get("llama-2-7b"), f.get("llama-3.1-8b"), f.get("mistral-7b")
    if not (mha and gqa and mha["crossover_tokens"] and gqa["crossover_tokens"]):
        return None
    return {
        "mha": mha, "gqa": gqa, "swa": swa,
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
    claims: list[dict]


def context(q, site) -> CrossoverPage:
    rows = q("crossover_all")
    batch1 = q("crossover_batch1")
    # Formula rows are the same in every run: show the newest run's; measured rows of every run.
    newest = max((r["run_id"] for r in rows if r["source"] == "formula"), default=None)
    shown = [r for r in rows if r["source"] == "measured" or r["run_id"] == newest]
    batch_chart = crossover_chart(shown)
    table_b1 = [r for r in batch1 if r["source"] == "measured" or r["run_id"] == newest]
    statuses = q("pressure_experiment_status", experiment=EXPERIMENT)
    return CrossoverPage(
        rows=shown, batch1=table_b1, batch_chart=batch_chart, newest=newest,
        gqa=gqa_note(table_b1),
        agreement=q("crossover_measured_vs_formula"),
        skips=[s for s in statuses if s["status"] != "ok"],
        cpu_runs=sorted({s["run_id"] for s in statuses if s["status"] == "ok" and s["device_kind"] != "cuda"}),
        claims=_claims.for_query(q, site, "claim_crossover"),  # the ledger's rows: one rule, one label
    )
