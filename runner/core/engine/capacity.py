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


# compressed-tensors checkpoints (quant_method "compressed-tensors"). What pack-quantized stores per quantized
# Linear, from neuralmagic/compressed-tensors:
#  - values: num_bits each, packed into int32 (compressors/quantized_compressors/pack_quantized.py,
#    PackedQuantizationCompressor.compression_param_info, commit 0199c6e7f96f7ac581138849ed8c7140f9842fe1);
#  - zero points: only when symmetric is false (group/channel strategy), packed at num_bits (same function);
#  - scales: one per group at the weight's own dtype (quantization/lifecycle/initialize.py initialize_qparams,
#    "scale_dtype = observed_dtype", commit 9ead292f3f13df0b9ab720f3e843eddf975c7455);
#  - defaults num_bits 8, type int, symmetric true (quantization/quant_args.py QuantizationArgs, commit
#    f0b6078911c0c4bc0abb74dd7be43f7dc6b14916).
# Float weights (type "float", num_bits 8) are fp8: one byte per parameter, scales not counted (as for fp8).
# kvreport knows parameter groups, not module names, so only these ignore patterns are read; anything else
# puts the whole model at the model dtype, with the pattern named.
_IGNORE_GROUPS = {
    "lm_head": "lm_head", "re:lm_head": "lm_head", "re:.*lm_head": "lm_head", "re:.*lm_head.*": "lm_head",
    "model.embed_tokens": "embeddings", "re:.*embed_tokens.*": "embeddings", "re:.*embed_tokens": "embeddings",
    "re:.*self_attn.*": "attention", "re:.*self_attn": "attention",
    "re:.*shared_experts.*": "shared experts", "re:.*shared_expert.*": "shared experts",
    "re:.*mlp\\.(gate|up|gate_up|down)_proj.*": "dense MLP", "re:.*mlp\\.(gate|up|down)_proj.*": "dense MLP",
    "re:.*mlp\\.(gate_up|down)_proj.*": "dense MLP",
    "re:.*mlp.gate$": "router", "re:.*mlp\\.gate$": "router",
}
# Every Linear but the routed experts (and the router and lm_head, counted on their own).
_ALL_BUT_EXPERTS = {"attention", "shared experts", "dense MLP"}
_MAX_GROUP = 1 << 20


def _compressed_tensors(q: dict, text: dict, weight_params: int, base: int) -> tuple[int, str, str] | str:
    """(bytes, stored_as, basis) of a compressed-tensors checkpoint, or why it is not read."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1:
        return "compressed-tensors config_groups: expected exactly one group"
    (name, group), = groups.items()
    w = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(w, dict):
        return f"compressed-tensors config_groups.{name}.weights: expected an object"
    if group.get("targets") != ["Linear"]:
        return f"compressed-tensors config_groups.{name}.targets {group.get('targets')!r}: only ['Linear'] is read"
    bits, kind = w.get("num_bits", 8), w.get("type", "int")
    sym, strategy, gsize = w.get("symmetric", True), w.get("strategy"), w.get("group_size")
    if not isinstance(bits, int) or isinstance(bits, bool) or not 1 <= bits <= 8 or kind not in ("int", "float") \
            or (kind == "float" and bits != 8) or not isinstance(sym, bool):
        return (f"compressed-tensors config_groups.{name}.weights: num_bits {bits!r} type {kind!r} symmetric "
                f"{sym!r} not read (int 1-8 bits or float 8 bits)")
    if kind == "float":
        per, stored, how = 8.0, "float8", "fp8, one byte per parameter"
    elif strategy == "group" and isinstance(gsize, int) and not isinstance(gsize, bool) and 0 < gsize <= _MAX_GROUP:
        per = bits + (8 * base + (0 if sym else bits)) / gsize
        stored = f"int{bits}"
        how = (f"int{bits} with one {8 * base}-bit scale{'' if sym else ' and zero point'} per {gsize}: "
               f"{per:g} bits per parameter")
    else:
        return (f"compressed-tensors config_groups.{name}.weights: strategy {strategy!r} group_size {gsize!r} not "
                f"read (strategy 'group', group_size 1-{_MAX_GROUP})")
    ignore = q.get("ignore", [])
    if not isinstance(ignore, list):
        return "compressed-tensors ignore: expected a list"
    unmapped = [p for p in ignore if not isinstance(p, str) or p not in _IGNORE_GROUPS]
    if unmapped:
        return f"compressed-tensors ignore pattern {unmapped[0]!r} not mapped to a parameter group"
    ignored = {_IGNORE_GROUPS[p] for p in ignore}
    h, vocab = _int(text, "hidden_size"), _int(text, "vocab_size")
    lm_head = 0 if text.get("tie_word_embeddings") else vocab * h
    embed_total = vocab * h + lm_head
    lm_head_quantized = 0 if "lm_head" in ignored else lm_head
    if _ALL_BUT_EXPERTS <= ignored:
        experts = _routed_expert_params(text)
        if experts is None:
            return "compressed-tensors: only routed experts quantized, but the MoE layout is not read"
        quantized = min(max(0, weight_params - embed_total), experts) + lm_head_quantized
        what = "routed experts" + ("" if "lm_head" in ignored else " and lm_head")
    elif not ignored & _ALL_BUT_EXPERTS:
        router = _router_params(text) if "router" in ignored else 0
        if router is None:
            return "compressed-tensors: router ignored, but the MoE layout is not read"
        quantized = max(0, weight_params - embed_total - router) + lm_head_quantized
        what = "every Linear" + ("" if "lm_head" in ignored else " and lm_head")
    else:
        return (f"compressed-tensors ignore covers {', '.join(sorted(ignored & _ALL_BUT_EXPERTS))} only: "
                "kvreport cannot count those groups apart")
    total = int(quantized * per / 8) + (weight_params - quantized) * base
    return total, stored, f"compressed-tensors: {what} at {how}; every other parameter at the model dtype"


def _moe_layers(text: dict) -> int | None:
    """Layers with routed experts, from the DeepSeek (first_k_dense_replace, moe_layer_freq) or Qwen
    (mlp_only_layers, decoder_sparse_step) fields; None where another layout rule applies."""
    layers = _int(text, "num_hidden_layers")
    types = text.get("mlp_layer_types")
    if isinstance(types, list):
        return sum(1 for t in types if t != "dense")
    if _int(text, "moe_layer_freq", 1) != 1 or _int(text, "decoder_sparse_step", 1) != 1:
        return None
    if "n_routed_experts" in text and not isinstance(text.get("first_k_dense_replace"), int):
        return None  # DeepSeek-family defaults for the dense layers differ by version: not guessed here
    only = text.get("mlp_only_layers") or []
    if not isinstance(only, list):
        return None
    return max(0, layers - _int(text, "first_k_dense_replace") - len(set(only)))


def _experts_shape(text: dict) -> tuple[int, int] | None:
    experts = _int(text, "n_routed_experts", _int(text, "num_local_experts", _int(text, "num_experts")))
    inter = _int(text, "moe_intermediate_size", _int(text, "intermediate_size"))
    return (experts, inter) if experts > 0 and inter > 0 else None


def _routed_expert_params(text: dict) -> int | None:
    shape, layers = _experts_shape(text), _moe_layers(text)
    if shape is None or layers is None:
        return None
    return layers * shape[0] * 3 * _int(text, "hidden_size") * shape[1]  # gate, up and down per expert


def _router_params(text: dict) -> int | None:
    shape, layers = _experts_shape(text), _moe_layers(text)
    return None if shape is None or layers is None else layers * shape[0] * _int(text, "hidden_size")


@dataclass(frozen=True)
class Weights:
    bytes_total: int
    stored_as: str
    basis: str


def weights(facts: ModelFacts, raw: dict | None, weight_dtype: str | None = None,
            model_dtype: str = "bfloat16") -> Weights:
    """Weight bytes as the checkpoint stores them: quantization_config (fp8, mxfp4, awq/gptq int4,
    compressed-tensors int/fp8) or `weight_dtype`. Embeddings and lm_head stay at the model dtype; MXFP4
    covers the MoE experts only; compressed-tensors follows its ignore list where kvreport can read it."""
    text = text_config(raw)
    q = (raw or {}).get("quantization_config") or text.get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower() if isinstance(q, dict) else ""
    if weight_dtype is None and method == "compressed-tensors":
        read = _compressed_tensors(q, text, facts.weight_params, dtype_bytes(model_dtype))
        if isinstance(read, str):
            return Weights(facts.weight_bytes(model_dtype), model_dtype, f"{read}: weights at the model dtype")
        return Weights(*read)
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
