"""`kvreport models`: what each model's KV cache costs, from its config alone (runner/model_facts.py, no torch)."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from ..errors import UserError

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


def describe(facts, seqs: list[int], dtype: str, batch: int) -> dict:
    """The JSON record of one model (the keys issue 24 names, plus the detail behind them)."""
    from ..model_facts import BLOCK_TOKENS, GPU_MEMORY_UTILIZATION, GPU_SIZES_GB, TP_SIZES, VLLM_RULES

    out = {
        "name": facts.name,
        "source": facts.source,
        "model_type": facts.model_type,
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
        "weight_bytes": {"analytic": True, "params": facts.weight_params, "bytes": facts.weight_bytes(dtype)},
        "fits": {str(gb): {str(tp): {str(s): facts.fits(gb * 10**9, s, tp, dtype) for s in seqs}
                           for tp in TP_SIZES} for gb in GPU_SIZES_GB},
        "fits_basis": (f"requests of one sequence each whose engine-view cache fits in {GPU_MEMORY_UTILIZATION:g} x "
                       "GPU bytes (GB = 10^9) minus weights / TP, per GPU; -1: the model keeps no per-request "
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
    for r in records:
        cache = "  ".join(f"{r['cache_bytes'][str(s)] / GIB:>8.3f}" for s in seqs)
        fits = " ".join(f"{r['fits']['80']['1'][str(s)]:>5}" for s in seqs)
        lines.append(f"{r['name'][:24]:<24} {r['weight_bytes']['bytes'] / 1e9:>10.1f}  {cache}  "
                     f"{'':>10} {fits}  {_layers_text(r['layers'])}")
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
):
    """What each model's KV cache costs per request, from its config alone (no torch, nothing downloaded)."""
    from ..model_facts import DTYPE_BYTES, builtin_names, load

    seqs = _seqs(seq)
    if dtype not in DTYPE_BYTES:
        raise UserError(f"--dtype {dtype}: expected one of {', '.join(DTYPE_BYTES)}")
    if batch < 1:
        raise UserError(f"--batch {batch}: must be >= 1")
    facts = [load(n) for n in (names or builtin_names())]  # every name checked before anything is printed
    records = [describe(f, seqs, dtype, batch) for f in facts]
    if json_out:
        typer.echo(json.dumps(records, indent=2))
        return
    for line in _table(records, seqs, dtype, batch):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    app.command("models")(models)
