"""How a vLLM release lays out one model's KV cache on one tensor-parallel rank: groups, pages, blocks.

Input: the per-layer cache specs of `model_facts.ModelFacts` (the public CacheSpec subclasses) and the raw
config fields vLLM's config classes read. Output: an `EngineLayout` whose groups hold what
vllm/v1/core/kv_cache_utils.py get_kv_cache_groups would build, with the block arithmetic of
single_type_kv_cache_manager.py. Rules come from a `VllmProfile` (vllm_rules.py); analytic, never measured.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..model_facts import (ChunkedLocalAttentionSpec, FullAttentionSpec, LinearAttentionStateSpec, MambaStateSpec,
                           MLALatentSpec, MLAPerHeadSpec, ModelFacts, SlidingWindowSpec, dtype_bytes)
from .vllm_rules import EngineError, VllmProfile

ATTENTION_KINDS = ("full", "mla", "indexer")  # FullAttentionSpec and its MLAAttentionSpec subclass


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LayerSpec:
    """One layer's cache on one rank, as vLLM's KVCacheSpec would be (equal specs share groups)."""
    kind: str                # full, sliding, chunked, mla, indexer, mamba
    block_size: int          # tokens per block (Mamba: 1 block per request whatever the size)
    token_bytes: int = 0     # attention: bytes per token; 0 for Mamba
    state_bytes: int = 0     # Mamba: conv + recurrent state bytes before padding
    page_padded: int | None = None
    window: int | None = None

    @property
    def page_bytes(self) -> int:
        if self.page_padded is not None:
            return self.page_padded
        return self.state_bytes if self.kind == "mamba" else self.block_size * self.token_bytes

    def type_key(self) -> tuple:
        """UniformTypeKVCacheSpecs.is_uniform_type: what may share one group despite other page sizes."""
        if self.kind in ATTENTION_KINDS:
            return ("full", self.block_size)
        return (self.kind, self.block_size, self.window)

    @property
    def span(self) -> int:
        """The window of a sliding or chunked layer (set for those kinds; vllm_rules builds none without)."""
        if self.window is None:
            raise ValueError(f"a {self.kind} layer with no window")
        return self.window

    def held_blocks(self, seq: int) -> int:
        """Blocks one request of `seq` tokens holds once its last token is allocated (num_computed = seq - 1)."""
        if self.kind == "mamba":
            return 1 if seq else 0
        total = _cdiv(seq, self.block_size)
        if self.kind == "sliding":  # SlidingWindowManager.get_num_skipped_tokens(seq - 1)
            skipped = max(0, (seq - 1) - self.span + 1)
        elif self.kind == "chunked":  # ChunkedLocalAttentionManager.get_num_skipped_tokens(seq - 1)
            skipped = max(0, seq - 1) // self.span * self.span
        else:
            skipped = 0
        return total - min(skipped // self.block_size, total)

    def max_blocks(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """KVCacheSpec.max_memory_usage_bytes / page: what the startup log budgets for one request."""
        if self.kind == "mamba":
            return 1
        if self.kind == "sliding":
            return _cdiv(min(self.span - 1 + max_num_batched_tokens, max_model_len), self.block_size) + 1
        if self.kind == "chunked":
            return _cdiv(min(self.span + max_num_batched_tokens, max_model_len), self.block_size)
        return _cdiv(max_model_len, self.block_size)


@dataclass(frozen=True)
class Group:
    spec: LayerSpec
    layers: int              # real layers in the group
    slots: int               # layers per group incl. padding (group_size), 1 for a merged uniform-type group
    page_bytes: int          # one block of one slot (a uniform-type group: the sum over its layers)


@dataclass(frozen=True)
class EngineLayout:
    profile: VllmProfile
    tp: int
    kv_cache_dtype: str
    groups: tuple[Group, ...]
    block_bytes: int         # bytes one block id costs on this rank (page x layers per group)
    hybrid_block_size: int | None = None
    mamba_padding: float | None = None  # share added to the Mamba page
    padding_layers: int = 0
    notes: tuple[str, ...] = ()

    def num_blocks(self, kv_memory_bytes: int) -> int:
        return max(0, kv_memory_bytes // self.block_bytes) if self.groups else 0

    def held_blocks(self, seq: int) -> int:
        return sum(g.spec.held_blocks(seq) for g in self.groups)

    def request_bytes(self, seq: int) -> int:
        """Bytes one request of `seq` tokens holds on this rank (block ids x what each costs)."""
        return self.held_blocks(seq) * self.block_bytes

    def describe(self) -> list[dict]:
        return [{"kind": g.spec.kind, "block_size": g.spec.block_size, "page_bytes": g.page_bytes,
                 "layers": g.layers, "slots": g.slots, **({"window": g.spec.window} if g.spec.window else {})}
                for g in self.groups]


def _ssm_dtype(facts: ModelFacts, text: dict, profile: VllmProfile, model_dtype: str) -> str:
    """mamba_ssm_cache_dtype after the model's config class (vllm_rules: mamba_ssm_dtype_source)."""
    if profile.mamba_ssm_dtype_from_config:
        if facts.model_type == "nemotron_h":
            return str(text.get("mamba_ssm_cache_dtype") or "float32")
        if facts.model_type in ("qwen3_5_text", "qwen3_5_moe_text") and text.get("mamba_ssm_dtype"):
            return str(text["mamba_ssm_dtype"])
    return model_dtype


def _divide(n: int, tp: int, what: str) -> int:
    if n % tp:  # vllm.distributed.utils.divide asserts divisibility
        raise EngineError(f"TP {tp}: vLLM refuses it, {what} ({n}) is not divisible by {tp}")
    return n // tp


def _layer_specs(facts: ModelFacts, text: dict, profile: VllmProfile, tp: int, kv_cache_dtype: str,
                 model_dtype: str) -> list[LayerSpec]:
    fp8 = kv_cache_dtype == "fp8"
    kv_bytes = 1 if fp8 else dtype_bytes(model_dtype)
    dsa = any(getattr(s, "indexer_head_dim", 0) for layer in facts.layers for s in layer)
    out = []
    for layer in facts.layers:
        for s in layer:
            if isinstance(s, (MLALatentSpec, MLAPerHeadSpec)):
                width = s.kv_lora_rank + s.qk_rope_head_dim  # MLAAttentionSpec: one head, replicated on ranks
                per_token = profile.sparse_mla_fp8_bytes_per_token if (fp8 and dsa) else width * kv_bytes
                if per_token is None:
                    raise EngineError(f"{facts.name}: vLLM {profile.release} has no fp8 sparse MLA cache")
                out.append(LayerSpec("mla", profile.mla_block_size, per_token))
                if s.indexer_head_dim:
                    if profile.indexer_bytes_per_token is None:
                        raise EngineError(f"{facts.name}: vLLM {profile.release} has no DSA indexer cache")
                    out.append(LayerSpec("indexer", profile.mla_block_size, profile.indexer_bytes_per_token))
            elif isinstance(s, FullAttentionSpec):
                heads = max(1, (s.engine_kv_heads or s.num_kv_heads) // tp)  # ModelConfig.get_num_kv_heads
                per_token = heads * (s.head_dim + (s.head_dim_v or s.head_dim)) * kv_bytes
                if isinstance(s, SlidingWindowSpec):
                    out.append(LayerSpec("sliding", profile.block_size, per_token, window=s.sliding_window))
                elif isinstance(s, ChunkedLocalAttentionSpec):
                    out.append(LayerSpec("chunked", profile.block_size, per_token, window=s.attention_chunk_size))
                else:
                    out.append(LayerSpec("full", profile.block_size, per_token))
            elif isinstance(s, (MambaStateSpec, LinearAttentionStateSpec)):
                conv_dim = s.conv_dim
                if s.n_groups and s.n_groups % tp:  # MambaStateShapeCalculator.extra_groups_for_head_shards
                    conv_dim += 2 * (tp - s.n_groups) * s.ssm_state_size
                heads, *rest = s.recurrent_shape
                conv = _divide(conv_dim, tp, "the Mamba conv dimension") * (s.conv_kernel - 1)
                recurrent = _divide(heads, tp, "the Mamba / linear-attention heads") * math.prod(rest)
                ssm = _ssm_dtype(facts, text, profile, model_dtype)
                out.append(LayerSpec("mamba", 0, state_bytes=conv * dtype_bytes(model_dtype) +
                                     recurrent * dtype_bytes(ssm)))
    return out


def aligned_specs(facts: ModelFacts, text: dict, profile: VllmProfile, tp: int = 1, kv_cache_dtype: str = "auto",
                  model_dtype: str = "bfloat16") -> tuple[list[LayerSpec], int | None, float | None]:
    """Every layer's spec after the hybrid block-size alignment, before grouping; with the raised block size and
    the share added to the Mamba page (None, None for a model without both attention and Mamba layers)."""
    if kv_cache_dtype not in ("auto", "fp8"):
        raise EngineError(f"--kv-cache-dtype {kv_cache_dtype}: expected auto or fp8")
    specs = _layer_specs(facts, text, profile, tp, kv_cache_dtype, model_dtype)
    hybrid_block, padding = None, None
    attn = [s for s in specs if s.kind != "mamba"]
    mamba = [s for s in specs if s.kind == "mamba"]
    if attn and mamba:  # the hybrid alignment of vllm_rules.hybrid_alignment_source
        one_token = attn[0].token_bytes
        mamba_page = max(s.state_bytes for s in mamba)
        align = 16 if profile.hybrid_alignment == "multiple_of_16" else max(16, attn[0].block_size)
        if attn[0].kind == "mla" and profile.hybrid_mla_align:
            align = max(align, profile.hybrid_mla_align)  # TRTLLM/FlashInfer MLA decode kernels' alignment
        block = max(attn[0].block_size, align * _cdiv(mamba_page, align * one_token))
        hybrid_block = block
        page = block * one_token
        padding = (page - mamba_page) / mamba_page
        specs = [replace(s, page_padded=page) if s.kind == "mamba" else replace(s, block_size=block) for s in specs]
    return specs, hybrid_block, padding


def build_layout(facts: ModelFacts, text: dict, profile: VllmProfile, tp: int = 1, kv_cache_dtype: str = "auto",
                 model_dtype: str = "bfloat16") -> EngineLayout:
    """The groups vLLM `profile` builds for this model on one of `tp` ranks."""
    specs, hybrid_block, padding = aligned_specs(facts, text, profile, tp, kv_cache_dtype, model_dtype)
    if not specs:
        return EngineLayout(profile, tp, kv_cache_dtype, (), 0)
    notes = []
    if len(set(specs)) == 1:
        s = specs[0]
        groups = (Group(s, len(specs), len(specs), s.page_bytes),)
        return EngineLayout(profile, tp, kv_cache_dtype, groups, s.page_bytes * len(specs), hybrid_block, padding)
    if profile.uniform_type_group and len({s.type_key() for s in specs}) == 1:
        total = sum(s.page_bytes for s in specs)  # UniformTypeKVCacheSpecs: one group, page = sum of the pages
        groups = (Group(specs[0], len(specs), 1, total),)
        return EngineLayout(profile, tp, kv_cache_dtype, groups, total, hybrid_block, padding)
    largest = max(s.page_bytes for s in specs)  # unify_kv_cache_spec_page_size
    unified = []
    for s in specs:
        if s.page_bytes != largest:
            if largest % s.page_bytes or s.kind == "mamba":
                raise EngineError(f"{facts.name}: vLLM {profile.release} cannot unify its page sizes "
                                  f"({s.page_bytes} and {largest} bytes)")
            s = replace(s, block_size=s.block_size * (largest // s.page_bytes))
        unified.append(s)
    by_spec: dict[LayerSpec, int] = {}
    for s in unified:
        by_spec[s] = by_spec.get(s, 0) + 1
    fewest, most = min(by_spec.values()), max(by_spec.values())
    size = most if (profile.group_size_rule == "min_or_max_1.5" and most < fewest * 1.5) else fewest
    grouped: list[Group] = []
    pad = 0
    for s, n in by_spec.items():
        k = _cdiv(n, size)
        pad += k * size - n
        for i in range(k):
            grouped.append(Group(s, min(size, n - i * size), size, largest))
    if pad:
        notes.append(f"{pad} padding layer slot(s) (kv_cache_utils._get_kv_cache_groups_uniform_page_size)")
    return EngineLayout(profile, tp, kv_cache_dtype, tuple(grouped), largest * size, hybrid_block, padding, pad,
                        tuple(notes))
