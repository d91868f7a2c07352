"""What a vLLM release would accept and log for one model: weights as stored, KV blocks, requests that fit.

Analytic throughout (vllm_rules.py and layout.py hold the rules). The KV budget of a GPU is
gpu_memory_utilization x the device's memory - the weights one rank holds; activations, CUDA graphs and the
runtime are not subtracted, so every count is an upper bound. `--kv-memory` skips that guess: it is the
"Available KV cache memory" a real vLLM log printed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model_facts import ModelFacts, dtype_bytes
from .gpus import GIB
from .layout import EngineLayout, build_layout
from .vllm_rules import EngineError, VllmProfile

# Bits per weight of each stored format. mxfp4: 4-bit values plus one 8-bit scale per 32 (OCP MX spec);
# int4 (AWQ/GPTQ): 4-bit values plus a 16-bit scale and a 4-bit zero point per group (group_size, default 128).
WEIGHT_FORMATS = ("float32", "float16", "bfloat16", "float8", "mxfp4", "int4")


def text_config(raw: dict | None) -> dict:
    """The language model's fields (multimodal configs keep them under text_config)."""
    raw = raw or {}
    text = raw.get("text_config")
    return {**raw, **text} if isinstance(text, dict) else raw


def _int(d: dict, key: str, default: int = 0) -> int:
    v = d.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


@dataclass(frozen=True)
class Weights:
    bytes_total: int
    stored_as: str
    basis: str


def weights(facts: ModelFacts, raw: dict | None, weight_dtype: str | None = None,
            model_dtype: str = "bfloat16") -> Weights:
    """Weight bytes as the checkpoint stores them: quantization_config (fp8, mxfp4, awq/gptq int4) or
    `weight_dtype`. Embeddings and lm_head stay at the model dtype; MXFP4 covers the MoE experts only."""
    text = text_config(raw)
    q = (raw or {}).get("quantization_config") or text.get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    fmt = weight_dtype or {"fp8": "float8", "mxfp4": "mxfp4", "awq": "int4", "gptq": "int4"}.get(method)
    if fmt is None:
        note = f"quantization_config quant_method {method!r} not read: weights at the model dtype" if method else ""
        return Weights(facts.weight_bytes(model_dtype), model_dtype, note or "every parameter at the model dtype")
    if fmt not in WEIGHT_FORMATS:
        raise EngineError(f"--weight-dtype {fmt}: expected one of {', '.join(WEIGHT_FORMATS)}")
    if fmt in ("float32", "float16", "bfloat16"):
        return Weights(facts.weight_bytes(fmt), fmt, "every parameter at that dtype")
    h, vocab = _int(text, "hidden_size"), _int(text, "vocab_size")
    embed = vocab * h * (1 if text.get("tie_word_embeddings") else 2)
    rest = max(0, facts.weight_params - embed)
    base = dtype_bytes(model_dtype)
    if fmt == "float8":
        total = embed * base + rest
        basis = "fp8: one byte per parameter, embeddings and lm_head at the model dtype"
    elif fmt == "int4":
        bits = _int(q, "bits", 4) if isinstance(q, dict) else 4
        group = _int(q, "group_size", 128) if isinstance(q, dict) else 128
        per = bits + (16 + bits) / max(group, 1)
        total = embed * base + int(rest * per / 8)
        basis = (f"int{bits}: {per:g} bits per parameter with group scales/zeros (group {group}); "
                 "embeddings at the model dtype")
    else:
        experts = _int(text, "num_local_experts", _int(text, "num_experts"))
        inter, layers = _int(text, "intermediate_size"), _int(text, "num_hidden_layers")
        expert_params = min(rest, layers * experts * 3 * h * inter)
        total = int(expert_params * 4.25 / 8) + (facts.weight_params - expert_params) * base
        basis = "mxfp4: MoE expert weights at 4.25 bits, every other parameter at the model dtype"
    return Weights(total, fmt, basis)


def refusals(facts: ModelFacts, raw: dict | None, profile: VllmProfile, tp: int) -> list[str]:
    """Why this release would not start this model at this TP size (empty: it would)."""
    out = []
    archs = [a for a in (raw or {}).get("architectures") or [] if isinstance(a, str)]
    missing = [a for a in archs if a in profile.added_architectures]
    if missing:
        out.append(f"vLLM {profile.release} has no {', '.join(missing)} (model_executor/models/registry.py)")
    text = text_config(raw)
    for model_type, key, letters, source in profile.layer_patterns:
        pattern = text.get(key)
        if text.get("model_type") == model_type and isinstance(pattern, str) and set(pattern) - set(letters):
            out.append(f"vLLM {profile.release} builds no {''.join(sorted(set(pattern) - set(letters)))} layer "
                       f"of {key} ({source})")
    heads = _int(text, "num_attention_heads")
    if heads and heads % tp:
        out.append(f"TP {tp}: total number of attention heads ({heads}) must be divisible by tensor parallel size "
                   f"({tp}) (config/model.py verify_with_parallel_config)")
    if not out:
        try:
            layout_for(facts, raw, profile, tp)
        except EngineError as exc:
            out.append(str(exc))
    return out


def layout_for(facts: ModelFacts, raw: dict | None, profile: VllmProfile, tp: int = 1,
               kv_cache_dtype: str = "auto") -> EngineLayout:
    return build_layout(facts, text_config(raw), profile, tp, kv_cache_dtype)


def vllm_log(layout: EngineLayout, kv_memory: int, max_model_len: int, max_num_batched_tokens: int) -> dict:
    """What the release logs for `kv_memory` bytes of KV cache per worker (see VllmProfile.log_source)."""
    p = layout.profile
    blocks = layout.num_blocks(kv_memory)
    per_request = sum(g.spec.max_blocks(max_model_len, max_num_batched_tokens) for g in layout.groups)
    concurrency = blocks / per_request if per_request else 0.0
    if p.log_style == "blocks":
        tokens = blocks // max(1, len(layout.groups)) * min((g.spec.block_size for g in layout.groups), default=0)
        lines = [f"GPU KV cache size: {tokens:,} tokens",
                 f"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x"]
        meaning = "num_blocks // number of KV cache groups x the smallest block size"
    else:
        tokens = int(concurrency * max_model_len)
        lines = [f"GPU KV cache size: {tokens:,} tokens, Maximum concurrency for {max_model_len:,} tokens per "
                 f"request: {concurrency:.2f}x"]
        meaning = "maximum concurrency x max_model_len"
    return {"profile": p.name, "available_kv_cache_memory_gib": round(kv_memory / GIB, 2),
            "num_gpu_blocks": blocks, "gpu_kv_cache_tokens": tokens, "max_concurrency": round(concurrency, 4),
            "max_model_len": max_model_len, "max_num_batched_tokens": max_num_batched_tokens,
            "token_line_meaning": meaning, "source": p.log_source,
            "lines": [f"Available KV cache memory: {kv_memory / GIB:.2f} GiB", *lines]}


def fits(facts: ModelFacts, raw: dict | None, profile: VllmProfile, gpu_bytes: int, seqs: list[int], tp: int = 1,
         utilization: float | None = None, kv_cache_dtype: str = "auto", weight_dtype: str | None = None,
         gpu_name: str = "") -> dict:
    """Requests of each length this release would hold at once on a TP group of `gpu_bytes` GPUs."""
    util = profile.gpu_memory_utilization if utilization is None else utilization
    gib = gpu_bytes / GIB
    out: dict[str, Any] = {"gpu": gpu_name or f"{gib:.2f} GiB", "gpu_gib": round(gib, 2), "tp": tp,
                           "gpu_memory_utilization": util,
           "max_num_seqs": profile.max_num_seqs(gib, gpu_name), "requests": {}, "refused": refusals(
               facts, raw, profile, tp)}
    if out["refused"]:
        return out
    w = weights(facts, raw, weight_dtype)
    budget = int(util * gpu_bytes) - -(-w.bytes_total // tp)
    layout = layout_for(facts, raw, profile, tp, kv_cache_dtype)
    blocks = layout.num_blocks(max(budget, 0))
    out.update({"weights_per_rank_bytes": -(-w.bytes_total // tp), "weights_stored_as": w.stored_as,
                "kv_budget_bytes": budget, "num_gpu_blocks": blocks})
    for s in seqs:
        if facts.max_positions is not None and s > facts.max_positions:
            out["requests"][str(s)] = {"past_context": f"{s:,} tokens is past max_position_embeddings "
                                                       f"({facts.max_positions:,}): vLLM refuses max_model_len {s:,}"}
            continue
        held = layout.held_blocks(s)
        pool = (blocks - 1) // held if (held and blocks > 0) else (0 if held else -1)  # one block is the null block
        out["requests"][str(s)] = {"pool": max(pool, 0) if held else -1, "held_blocks": held,
                                   "requests": min(max(pool, 0), out["max_num_seqs"]) if held else out["max_num_seqs"]}
    return out
