"""`kvreport models`: what each model's KV cache costs, from its config alone (runner/core/model_facts.py, no torch),
and what a named vLLM release would allocate, fit and log for it (runner/core/engine)."""
from __future__ import annotations

import json
from typing import Annotated

import typer

from ..core import engine
from ..core.errors import UserError
from ..core.model_facts import (BLOCK_TOKENS, DTYPE_BYTES, GPU_MEMORY_UTILIZATION, GPU_SIZES_GB, TP_SIZES, VLLM_RULES,
                                ModelFactsError, builtin_names, load)
from .options import TOKENS_MAX, size, token_counts, whole

DEFAULT_SEQS = "4096,32768,131072"
GIB = 2**30


def describe(facts, seqs: list[int], dtype: str, batch: int, weight_dtype: str | None = None) -> dict:
    """The JSON record of one model (its headline keys, plus the detail behind them)."""
    out = {
        "name": facts.name,
        "source": facts.source,
        "model_type": facts.model_type,
        "rules": facts.rules,
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


def _fit_cell(cell: dict) -> str:
    if "past_context" in cell:
        return "past"
    n = cell["requests"]
    return f"{n}{'^' if cell['pool'] > n else ''}"


def _table(records: list[dict], seqs: list[int], dtype: str, batch: int) -> list[str]:
    gib = "  ".join(f"{_short(s):>8}" for s in seqs)
    fit = " ".join(f"{_short(s):>5}" for s in seqs)
    first = records[0]["engine"]["gpus"][0] if records else None
    where = f"{first['gpu']} x TP {first['tp']}" if first else ""
    profile = records[0]["engine"]["profile"] if records else ""
    lines = [f"KV cache per {'request' if batch == 1 else f'batch of {batch}'} in GiB ({dtype}; transformers' "
             f"layout), weights and requests that fit on {where} ({profile}, analytic upper bound)",
             f"{'model':<24} {'weights GB':>10}  {gib}  {'fits':>5}: {fit}  layers"]
    beyond = False
    for r in records:
        def cell(s, r=r):  # "*": past the model's context limit, arithmetic only
            nonlocal beyond
            past = r["max_positions"] is not None and s > r["max_positions"]
            beyond |= past
            return f"{r['cache_bytes'][str(s)] / GIB:>7.3f}{'*' if past else ' '}"
        cache = "  ".join(cell(s) for s in seqs)
        g = r["engine"]["gpus"][0]
        fits = "refused".rjust(5 * len(seqs) + len(seqs) - 1) if g["refused"] else \
            " ".join(f"{_fit_cell(g['requests'][str(s)]):>5}" for s in seqs)
        weight_gb = g.get("weights_per_rank_bytes", 0) * g["tp"] / 1e9 if not g["refused"] else \
            r["weight_bytes"]["bytes"] / 1e9
        lines.append(f"{r['name'][:24]:<24} {weight_gb:>10.1f}  {cache}  "
                     f"{'':>5} {fits}  {_layers_text(r['layers'])}")
        lines += [f"  refused: {why}" for why in g["refused"]]
    if beyond:
        lines.append("* past the model's context limit (max_position_embeddings): arithmetic only")
    lines.append("fits: requests the KV pool holds at once, capped at max_num_seqs (^: capped); weights as stored")
    return lines


def engine_record(facts, raw, profile, seqs: list[int], gpus: list[tuple[str, int]], tp: int,
                  utilization: float | None, kv_cache_dtype: str, weight_dtype: str | None,
                  kv_memory: int | None, max_model_len: int | None, batched_tokens: int) -> dict:
    """The engine view of one model under one vLLM profile (JSON key `engine`)."""
    out = {"profile": profile.name, "analytic": True, "tp": tp, "kv_cache_dtype": kv_cache_dtype,
           "rules": {k: v for k, v in vars(profile).items() if k.endswith("_source")},
           "not_modelled": list(profile.not_modelled),
           "gpus": [engine.fits(facts, raw, profile, b, seqs, tp, utilization, kv_cache_dtype, weight_dtype, name)
                    for name, b in gpus]}
    out["refused"] = engine.refusals(facts, raw, profile, tp)
    if out["refused"]:
        return out
    layout = engine.layout_for(facts, raw, profile, tp, kv_cache_dtype)
    w = engine.weights(facts, raw, weight_dtype)
    out.update({"groups": layout.describe(), "block_bytes": layout.block_bytes,
                "hybrid_block_size": layout.hybrid_block_size, "padding_layers": layout.padding_layers,
                "mamba_page_padding": None if layout.mamba_padding is None else round(layout.mamba_padding, 4),
                "held_blocks": {str(s): layout.held_blocks(s) for s in seqs},
                "request_bytes": {str(s): layout.request_bytes(s) for s in seqs},
                "weights": {"bytes": w.bytes_total, "stored_as": w.stored_as, "basis": w.basis}})
    if kv_memory is not None:
        length = max_model_len or facts.max_positions
        if length is None:
            raise UserError(f"{facts.name}: no max_position_embeddings in its config; give --max-model-len")
        out["vllm_log"] = engine.vllm_log(layout, kv_memory, length, batched_tokens)
    return out


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
        "--weight-dtype", help="Weights as stored, for what fits: float32, float16, bfloat16, float8, mxfp4, int4 "
        "(default: the config's quantization_config, else --dtype).", show_default=False)] = None,
    engine_name: Annotated[str | None, typer.Option(
        "--engine", help=f"Engine release whose rules to follow: {', '.join(engine.vllm_rules.names())} "
        f"(default: the newest, {engine.DEFAULT_PROFILE.name}).", show_default=False)] = None,
    kv_memory: Annotated[str | None, typer.Option(
        "--kv-memory", help="KV cache memory per GPU, as vLLM logs it ('Available KV cache memory: 3.81 GiB'): "
        "prints the GPU KV cache size and maximum concurrency that release would log.", show_default=False)] = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel size.")] = 1,
    max_model_len: Annotated[int | None, typer.Option(
        "--max-model-len", help="vLLM's max_model_len (default: the config's max_position_embeddings).",
        show_default=False)] = None,
    kv_cache_dtype: Annotated[str, typer.Option("--kv-cache-dtype", help="vLLM's KV cache dtype: auto or fp8.")]
    = "auto",
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help=f"GPU for what fits: {', '.join(engine.GPUS)} (default: {', '.join(engine.DEFAULT_GPUS)}).",
        show_default=False)] = None,
    gpu_memory: Annotated[str | None, typer.Option(
        "--gpu-memory", help="GPU memory for what fits, e.g. 79.6GiB (instead of --gpu).", show_default=False)]
    = None,
    gpu_memory_utilization: Annotated[float | None, typer.Option(
        "--gpu-memory-utilization", help="Share of GPU memory vLLM plans with (default: the release's).",
        show_default=False)] = None,
):
    """What each model's KV cache costs per request, from its config alone (no torch, nothing downloaded)."""
    seqs = token_counts("--seq", seq, DEFAULT_SEQS)
    if dtype not in DTYPE_BYTES:
        raise UserError(f"--dtype {dtype}: expected one of {', '.join(DTYPE_BYTES)}")
    whole("--batch", batch)
    if weight_dtype is not None and weight_dtype not in engine.capacity.WEIGHT_FORMATS:
        raise UserError(f"--weight-dtype {weight_dtype}: expected one of {', '.join(engine.capacity.WEIGHT_FORMATS)}")
    profile = engine.profile_for(engine_name)
    whole("--tp", tp)
    if kv_cache_dtype not in ("auto", "fp8"):
        raise UserError(f"--kv-cache-dtype {kv_cache_dtype}: expected auto or fp8")
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise UserError(f"--gpu-memory-utilization {gpu_memory_utilization}: expected a share in (0, 1]")
    if max_model_len is not None:
        whole("--max-model-len", max_model_len, high=TOKENS_MAX)
    kv_bytes = size("--kv-memory", kv_memory) if kv_memory is not None else None
    if gpu_memory is not None:
        gpus = [(f"{gpu_memory}", size("--gpu-memory", gpu_memory))]
    else:
        gpus = [(g, engine.gpu_bytes(g)) for g in ([gpu] if gpu else engine.DEFAULT_GPUS)]
    first_gib = gpus[0][1] / engine.gpus.GIB
    batched_tokens = profile.max_num_batched_tokens(first_gib, gpus[0][0])
    skipped = []
    raws: list[dict | None] = []
    if names:
        facts = []
        for n in names:  # every name checked before anything is printed
            target, raw = engine.resolve(n)
            facts.append(load(target))
            raws.append(raw)
            _check_length(facts[-1], max_model_len)
    else:  # the whole catalogue: a model the facts do not cover yet is named on stderr, not fatal
        facts = []
        for n in builtin_names():
            try:
                facts.append(load(n))
                raws.append(engine.resolve(n)[1])
            except ModelFactsError as exc:
                skipped.append(f"{n} ({str(exc).split('; supported:')[0].removeprefix(f'catalogue model {n}: ')})")
    legacy_weight_dtype = weight_dtype if weight_dtype in DTYPE_BYTES else None
    records = []
    for f, raw in zip(facts, raws):
        record = describe(f, seqs, dtype, batch, legacy_weight_dtype)
        record["engine"] = engine_record(f, raw, profile, seqs, gpus, tp, gpu_memory_utilization,
                                         kv_cache_dtype, weight_dtype, kv_bytes, max_model_len, batched_tokens)
        records.append(record)
    if skipped:
        typer.echo(f"not described yet: {'; '.join(skipped)}", err=True)
    if json_out:
        typer.echo(json.dumps(records, indent=2))
        return
    for line in _table(records, seqs, dtype, batch):
        typer.echo(line)
    for r in records:
        log = r["engine"].get("vllm_log")
        if log:
            typer.echo(f"{r['name']}: {log['profile']} would log, per worker (TP {r['engine']['tp']}):")
            for line in log["lines"]:
                typer.echo(f"  {line}")


def _check_length(facts, max_model_len: int | None) -> None:
    """vLLM refuses a max_model_len past the config's context (config/model.py _get_and_verify_max_len)."""
    if max_model_len is not None and facts.max_positions is not None and max_model_len > facts.max_positions:
        raise UserError(f"--max-model-len {max_model_len}: past {facts.name}'s max_position_embeddings "
                        f"({facts.max_positions}); vLLM refuses it")


def register(app: typer.Typer) -> None:
    app.command("models")(models)
