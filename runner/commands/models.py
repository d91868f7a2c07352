"""`kvreport models`: what each model's KV cache costs, from its config alone (runner/core/model_facts.py, no torch)."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from ..core.errors import UserError
from ..core.model_facts import (BLOCK_TOKENS, DTYPE_BYTES, GPU_MEMORY_UTILIZATION, GPU_SIZES_GB, TP_SIZES, VLLM_RULES,
                                ModelFactsError, builtin_names, load)

DEFAULT_SEQS = "4096,32768,131072"
GIB = 2**30


def _seqs(text: str) -> list[int]:
    try:
        seqs = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--seq {text}: expected comma-separated token counts, e.g. {DEFAULT_SEQS}") from None
    if not seqs or any(s < 1 for s in seqs):
        raise UserError(f"--seq {text}: expected comma-separated token counts >= 1, e.g. {DEFAULT_SEQS}")
    return seqs


def describe(facts, seqs: list[int], dtype: str, batch: int, weight_dtype: str | None = None) -> dict:
    """The JSON record of one model (the keys issue 24 names, plus the detail behind them)."""
    out = {
        "name": facts.name,
        "source": facts.source,
        "model_type": facts.model_type,
        "max_positions": facts.max_positions,
        "dtype": dtype,
        "batch": batch,
        "layers": facts.groups(),
        "bytes_per_token": facts.bytes_per_token(dtype),
        "cache_bytes": {str(s): facts.cache_bytes(s, batch, dtype) for s in seqs},
        "cache_layout": "transformers DynamicCache(config=...), as read in transformers 5.24",
        "kind_bytes": {str(s): facts.kind_bytes(s, batch, dtype) for s in seqs},
        "engine_cache_bytes": {
            "analytic": True, "rules": VLLM_RULES, "block_tokens": BLOCK_TOKENS,
            "bytes": {str(s): facts.engine_cache_bytes(s, batch, dtype) for s in seqs}},
        "weight_bytes": {"analytic": True, "params": facts.weight_params, "dtype": weight_dtype or dtype,
                         "bytes": facts.weight_bytes(weight_dtype or dtype)},
        "fits": {str(gb): {str(tp): {str(s): facts.fits(gb * 10**9, s, tp, dtype, weight_dtype) for s in seqs}
                           for tp in TP_SIZES} for gb in GPU_SIZES_GB},
        "fits_basis": (f"requests of one sequence each whose engine-view cache fits in {GPU_MEMORY_UTILIZATION:g} x "
                       "GPU bytes (GB = 10^9) minus weights (in weight_bytes.dtype) / TP, per GPU; KV heads split "
                       "across ranks (replicated below one head per rank), MLA latent on every rank; activations not "
                       "subtracted; -1: the model keeps no per-request "
                       "cache; analytic"),
        "defaults_used": list(facts.defaults_used),
        "notes": list(facts.notes),
    }
    if facts.mla_layouts:
        out["mla_layout"] = facts.mla_layout
        out["cache_bytes_by_mla_layout"] = {
            layout: {str(s): facts.with_mla_layout(layout).cache_bytes(s, batch, dtype) for s in seqs}
            for layout in facts.mla_layouts}
    return out


def _layers_text(groups: list[dict]) -> str:
    counts: dict[str, int] = {}
    for g in groups:
        counts[g["kind"]] = counts.get(g["kind"], 0) + g["count"]
    return " + ".join(f"{n} {k}" for k, n in counts.items())


def _short(seq: int) -> str:
    return f"{seq // 1024}k" if seq % 1024 == 0 else str(seq)


def _table(records: list[dict], seqs: list[int], dtype: str, batch: int) -> list[str]:
    gib = "  ".join(f"{_short(s):>8}" for s in seqs)
    fit = " ".join(f"{_short(s):>5}" for s in seqs)
    lines = [f"KV cache per {'request' if batch == 1 else f'batch of {batch}'} in GiB ({dtype}; transformers' "
             "layout), weights and requests that fit on one 80 GB GPU (engine view, analytic)",
             f"{'model':<24} {'weights GB':>10}  {gib}  fits 80GB: {fit}  layers"]
    beyond = False
    for r in records:
        def cell(s):  # "*": past the model's context limit, arithmetic only
            nonlocal beyond
            past = r["max_positions"] is not None and s > r["max_positions"]
            beyond |= past
            return f"{r['cache_bytes'][str(s)] / GIB:>7.3f}{'*' if past else ' '}"
        cache = "  ".join(cell(s) for s in seqs)
        fits = " ".join(f"{r['fits']['80']['1'][str(s)]:>5}" for s in seqs)
        lines.append(f"{r['name'][:24]:<24} {r['weight_bytes']['bytes'] / 1e9:>10.1f}  {cache}  "
                     f"{'':>10} {fits}  {_layers_text(r['layers'])}")
    if beyond:
        lines.append("* past the model's context limit (max_position_embeddings): arithmetic only")
    return lines


def models(
    names: Annotated[list[str] | None, typer.Argument(
        help="Catalogue names, config.json files or folders holding one (default: every built-in model).",
        show_default=False)] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    seq: Annotated[str, typer.Option("--seq", help="Sequence lengths in tokens, comma-separated.")] = DEFAULT_SEQS,
    dtype: Annotated[str, typer.Option("--dtype", help="Cache and weight dtype: float32, float16, bfloat16.")]
    = "bfloat16",
    batch: Annotated[int, typer.Option("--batch", help="Sequences per request batch.")] = 1,
    weight_dtype: Annotated[str | None, typer.Option(
        "--weight-dtype", help="Weights' dtype for what fits (default: --dtype), e.g. float8 for an FP8 "
        "checkpoint.", show_default=False)] = None,
):
    """What each model's KV cache costs per request, from its config alone (no torch, nothing downloaded)."""
    seqs = _seqs(seq)
    if dtype not in DTYPE_BYTES:
        raise UserError(f"--dtype {dtype}: expected one of {', '.join(DTYPE_BYTES)}")
    if batch < 1:
        raise UserError(f"--batch {batch}: must be >= 1")
    if weight_dtype is not None and weight_dtype not in DTYPE_BYTES:
        raise UserError(f"--weight-dtype {weight_dtype}: expected one of {', '.join(DTYPE_BYTES)}")
    skipped = []
    if names:
        facts = [load(n) for n in names]  # every name checked before anything is printed
    else:  # the whole catalogue: a model the facts do not cover yet is named on stderr, not fatal
        facts = []
        for n in builtin_names():
            try:
                facts.append(load(n))
            except ModelFactsError as exc:
                skipped.append(f"{n} ({str(exc).split('; supported:')[0].removeprefix(f'catalogue model {n}: ')})")
    records = [describe(f, seqs, dtype, batch, weight_dtype) for f in facts]
    if skipped:
        typer.echo(f"not described yet: {'; '.join(skipped)}", err=True)
    if json_out:
        typer.echo(json.dumps(records, indent=2))
        return
    for line in _table(records, seqs, dtype, batch):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("models")(models)
