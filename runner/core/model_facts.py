"""What a model's KV cache holds, read from its config.json alone: no torch, no transformers, stdlib only.

A config is a plain JSON dict (multimodal configs keep the language model under `text_config`). It becomes a
`ModelFacts`: one entry per decoder layer, each a tuple of small frozen cache specs in the spirit of vLLM's
KV cache specs (FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec, MLAAttentionSpec,
MambaSpec). A layer with no cache (an MLP or MoE block of a hybrid) has no spec: its kind is "none".

Kinds and what each holds per sequence (transformers 5.24's own layout, `DynamicCache(config=...)`):
- full:         K and V of every token: n_kv_heads x head_dim each (cache_utils.DynamicLayer.update).
- sliding:      the same, but at most window-1 tokens. cache_utils.DynamicSlidingWindowLayer.update keeps
                `full_key_states[:, :, -self.sliding_window + 1:, :]`, so min(seq, window-1) tokens.
- chunked:      Llama 4's chunked attention. cache_utils.DYNAMIC_LAYER_TYPE_MAPPING maps "chunked_attention"
                to DynamicSlidingWindowLayer and get_layer_types_and_kwargs passes attention_chunk_size as its
                window, so at most chunk-1 tokens.
- mla_latent:   DeepSeek-V2/V3, Kimi-K2 in transformers 5.24: keys hold the normalised latent (kv_lora_rank)
                and values the rotary key (qk_rope_head_dim), one head each
                (models/deepseek_v3/modeling_deepseek_v3.py, DeepseekV3Attention.forward: `cache.update(kv_nope,
                k_rot, ...)`; deepseek_v2 the same). 576 values per token for DeepSeek-V3.
- mla_per_head: the decompressed layout older transformers releases cache: K = n_heads x (qk_nope + qk_rope),
                V = n_heads x v_head_dim. MLA facts carry both (`ModelFacts.mla_layouts`); which one a given
                transformers version uses is for the measurement to say (`with_mla_layout`).
- linear_state: Qwen3-Next's gated delta-net layers (cache_utils.LinearAttentionLayer): a conv state
                [conv_dim, kernel] in the model dtype and a recurrent state [v_heads, k_head_dim, v_head_dim]
                kept in float32 (modeling_qwen3_next.torch_chunk_gated_delta_rule computes the state in float32
                and LinearAttentionLayer.lazy_initialization allocates `zeros_like` it).
- mamba_state:  Mamba layers (Jamba: Mamba-1; Nemotron-H, Falcon-H1, Bamba: Mamba-2): conv state [conv_dim,
                d_conv] in the model dtype, SSM state in float32 (modeling_jamba.mamba_selective_scan and
                modeling_nemotron_h.mamba2_chunk_scan both return a float32 final state). Constant in seq.
Falcon-H1 layers are "hybrid": attention and Mamba side by side, so such a layer has two specs.

`cache_bytes(seq, batch, dtype)` is then exact for transformers' layout: per layer, batch x (K + V elements per
token x tokens held x dtype bytes + state elements x their dtype bytes). Bookkeeping scalars are not counted.

The engine view (`engine_cache_bytes`) follows vLLM's v1 KV cache specs and managers, as read in
vllm-project/vllm at commit 001cabc1be16a59a70d720ed61a13b678c060a18 (vllm/v1/kv_cache_interface.py) with the
managers of vllm/v1/core/single_type_kv_cache_manager.py and MambaStateShapeCalculator of
vllm/model_executor/layers/mamba/mamba_utils.py. It is analytic, never measured:
- pages of 16 tokens; a layer group's page = 16 x (K + V elements per token) x dtype bytes;
- full attention holds cdiv(seq, 16) pages; a sliding window frees the pages wholly before token
  seq - window + 1 (SlidingWindowManager.get_num_skipped_tokens), chunked attention those before the current
  chunk's start, (seq // chunk) x chunk (ChunkedLocalAttentionManager.get_num_skipped_tokens);
- MLA caches the latent (kv_lora_rank + qk_rope_head_dim) once per token, no K/V pair (MLAAttentionSpec);
- a Mamba or gated delta-net layer holds one page per request: conv state with kernel-1 columns plus the
  recurrent state, both in the model dtype (vLLM's default mamba_ssm_cache_dtype "auto"); vLLM's padding of
  Mamba pages to the attention page size in hybrid models is not modelled;
- transformers' Falcon new_decoder_architecture caches K/V broadcast to every query head; vLLM keeps the
  num_kv_heads, and so does the engine view.

`fits(gpu_bytes, seq, tp)` counts the requests whose engine-view cache fits beside the weights on one GPU of a
tensor-parallel group: budget = 0.9 x GPU bytes (vLLM's default gpu_memory_utilization) - weights / tp; per
request, attention K/V heads are split across ranks (each rank keeps max(1, ceil(kv_heads / tp)): fewer KV heads
than ranks are replicated), the MLA latent is replicated on every rank, Mamba and linear-attention states are
split by heads (Mamba-2 groups replicated up to the rank count, as MambaStateShapeCalculator does). Activations
and the CUDA runtime are not subtracted: an upper bound.

`weight_bytes(dtype)` is analytic: parameters counted from the config (embeddings, attention including MLA
projections, MLP or experts including shared experts, norms, lm_head unless tied) x dtype bytes, for the
language model transformers builds (no vision tower, no multi-token-prediction layers).

Families (model_type): gpt2, llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, falcon, minimax_m2,
gemma3 / gemma3_text, gemma4 / gemma4_text, mimo_v2_flash, gpt_oss, llama4 / llama4_text, deepseek_v2, deepseek_v3, kimi_k2, deepseek_v32, glm_moe_dsa,
qwen3_next,
qwen3_5 / qwen3_5_text, qwen3_5_moe / qwen3_5_moe_text, jamba, nemotron_h. Each is checked against the installed
transformers' own prefill and parameter count on tiny configs (tests/test_model_facts_transformers.py).

Fields missing from a config take the default of transformers' config class (5.24), and the facts list every
default used; a field without such a default, or an unknown model_type, is a ModelFactsError naming it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from .errors import UserError
from .builtin_configs import BUILTIN, LEGACY_MODEL_TYPES, TEST_MODELS

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8": 1}
BLOCK_TOKENS = 16  # vLLM's default block size
VLLM_RULES = ("vLLM v1 KV cache specs, vllm-project/vllm commit 001cabc1be16a59a70d720ed61a13b678c060a18 "
              "(vllm/v1/kv_cache_interface.py, vllm/v1/core/single_type_kv_cache_manager.py)")
GPU_SIZES_GB = (24, 80, 141, 192)
TP_SIZES = (1, 2, 4, 8)
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default share of GPU memory it plans with
KINDS = ("full", "sliding", "chunked", "mla_latent", "mla_per_head", "linear_state", "mamba_state", "none")
CATALOGUE = Path(__file__).resolve().parent / "catalogue"


# Which MLA layout each transformers release caches, read (not measured) in each wheel's
# models/deepseek_v3/modeling_deepseek_v3.py and deepseek_v2: DeepseekV3Attention.forward calls
# `update(key_states, value_states, ...)` with per-head K/V, or `update(kv_nope, k_rot, ...)` with the latent.
# Only versions whose source was read are listed; for any other, the measurement decides.
MLA_LAYOUT_BY_TRANSFORMERS = {
    "4.57.6": "mla_per_head", "5.0.0": "mla_per_head", "5.5.4": "mla_per_head", "5.10.4": "mla_per_head",
    "5.14.1": "mla_per_head", "5.15.1": "mla_latent", "5.16.1": "mla_latent", "5.17.0": "mla_latent",
    "5.24.0": "mla_latent",
}


def mla_layout_read_for(transformers_version: str) -> str | None:
    """The MLA layout seen in that release's source, or None where it was not read (measure it)."""
    return MLA_LAYOUT_BY_TRANSFORMERS.get(transformers_version)


class ModelFactsError(UserError):
    """A config that cannot be described: the message names the file and the field."""


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ModelFactsError(f"dtype {dtype!r}: expected one of {', '.join(DTYPE_BYTES)}") from None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------------------------- cache specs


@dataclass(frozen=True)
class CacheSpec:
    """One layer's cache of one kind. Elements are per sequence (multiply by the batch)."""
    kind: ClassVar[str] = "none"

    @property
    def k_per_token(self) -> int:
        return 0

    @property
    def v_per_token(self) -> int:
        return 0

    @property
    def cap(self) -> int | None:
        """Most tokens held (None: every token)."""
        return None

    def tokens_held(self, seq_len: int) -> int:
        return seq_len if self.cap is None else min(seq_len, self.cap)

    def state_elements(self) -> tuple[tuple[str, int, str | None], ...]:
        """Constant tensors: (name, elements, dtype or None for the model dtype)."""
        return ()

    def k_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        return batch * self.k_per_token * self.tokens_held(seq_len) * dtype_bytes(dtype)

    def v_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        return batch * self.v_per_token * self.tokens_held(seq_len) * dtype_bytes(dtype)

    def state_bytes(self, batch: int, dtype: str) -> int:
        return batch * sum(n * dtype_bytes(d or dtype) for _, n, d in self.state_elements())

    def cache_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        return self.k_bytes(seq_len, batch, dtype) + self.v_bytes(seq_len, batch, dtype) + \
            self.state_bytes(batch, dtype)

    # The engine view (vLLM): bytes one request holds on one rank of a TP group.
    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        raise NotImplementedError

    def describe(self) -> dict:
        out = {"kind": self.kind, "k_per_token": self.k_per_token, "v_per_token": self.v_per_token,
               "cap": self.cap}
        out.update({k: v for k, v in self.__dict__.items()})
        if self.state_elements():
            out["state"] = [{"name": n, "elements": e, "dtype": d or "model"} for n, e, d in self.state_elements()]
        return out


def _kv_heads_per_rank(heads: int, tp: int) -> int:
    """Attention heads one rank keeps: split across ranks, one replicated head where heads < tp."""
    return max(1, _cdiv(heads, tp))


@dataclass(frozen=True)
class FullAttentionSpec(CacheSpec):
    kind: ClassVar[str] = "full"
    num_kv_heads: int
    head_dim: int
    head_dim_v: int | None = None       # None: same as head_dim
    engine_kv_heads: int | None = None  # where an engine keeps fewer heads than transformers (Falcon-40B)

    @property
    def k_per_token(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def v_per_token(self) -> int:
        return self.num_kv_heads * (self.head_dim_v or self.head_dim)

    def engine_pages(self, seq_len: int) -> int:
        return _cdiv(seq_len, BLOCK_TOKENS)

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        heads = _kv_heads_per_rank(self.engine_kv_heads or self.num_kv_heads, tp)
        page = BLOCK_TOKENS * heads * (self.head_dim + (self.head_dim_v or self.head_dim)) * dtype_bytes(dtype)
        return self.engine_pages(seq_len) * page


@dataclass(frozen=True)
class SlidingWindowSpec(FullAttentionSpec):
    kind: ClassVar[str] = "sliding"
    sliding_window: int = 0

    @property
    def cap(self) -> int:
        return self.sliding_window - 1  # DynamicSlidingWindowLayer keeps window-1 tokens

    def engine_pages(self, seq_len: int) -> int:
        skipped = max(0, seq_len - self.sliding_window + 1)  # SlidingWindowManager.get_num_skipped_tokens
        return _cdiv(seq_len, BLOCK_TOKENS) - skipped // BLOCK_TOKENS


@dataclass(frozen=True)
class ChunkedLocalAttentionSpec(FullAttentionSpec):
    kind: ClassVar[str] = "chunked"
    attention_chunk_size: int = 0

    @property
    def cap(self) -> int:
        return self.attention_chunk_size - 1  # a DynamicSlidingWindowLayer with the chunk as its window

    def engine_pages(self, seq_len: int) -> int:
        skipped = seq_len // self.attention_chunk_size * self.attention_chunk_size  # ChunkedLocalAttentionManager
        return _cdiv(seq_len, BLOCK_TOKENS) - skipped // BLOCK_TOKENS


@dataclass(frozen=True)
class MLALatentSpec(CacheSpec):
    """transformers 5.24's MLA cache: keys = latent (kv_lora_rank), values = rotary key, one head."""
    kind: ClassVar[str] = "mla_latent"
    kv_lora_rank: int
    qk_rope_head_dim: int
    # DSA (DeepSeek-V3.2, GLM-5): cache_utils.DynamicIndexedLayer also keeps the indexer's key, one
    # index_head_dim vector per token (`indexer_keys`), counted with the keys here
    indexer_head_dim: int = 0

    @property
    def k_per_token(self) -> int:
        return self.kv_lora_rank + self.indexer_head_dim

    @property
    def v_per_token(self) -> int:
        return self.qk_rope_head_dim

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        # MLAAttentionSpec: one head of kv_lora_rank + qk_rope_head_dim, replicated on every TP rank; a DSA
        # indexer key per token beside it, at the same dtype (vLLM's FP8 indexer cache is not modelled)
        page = BLOCK_TOKENS * (self.kv_lora_rank + self.qk_rope_head_dim + self.indexer_head_dim) * dtype_bytes(dtype)
        return _cdiv(seq_len, BLOCK_TOKENS) * page


@dataclass(frozen=True)
class MLAPerHeadSpec(CacheSpec):
    """The decompressed MLA layout: per-head K (nope + rope) and V."""
    kind: ClassVar[str] = "mla_per_head"
    num_heads: int
    qk_head_dim: int
    v_head_dim: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    indexer_head_dim: int = 0

    @property
    def k_per_token(self) -> int:
        return self.num_heads * self.qk_head_dim + self.indexer_head_dim

    @property
    def v_per_token(self) -> int:
        return self.num_heads * self.v_head_dim

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        # an engine caches the latent whatever transformers does
        return MLALatentSpec(self.kv_lora_rank, self.qk_rope_head_dim, self.indexer_head_dim).engine_bytes(
            seq_len, dtype, tp)


@dataclass(frozen=True)
class _StateSpec(CacheSpec):
    """A constant-size recurrent cache: a causal-conv window and a recurrent (SSM / delta-rule) state."""
    conv_dim: int
    conv_kernel: int
    recurrent_shape: tuple[int, ...]
    recurrent_dtype: str | None = "float32"  # transformers' torch paths keep it in float32
    # Mamba-2: groups are replicated up to the TP size by vLLM (MambaStateShapeCalculator.mamba2_state_shape)
    n_groups: int = 0
    ssm_state_size: int = 0

    def state_elements(self):
        return (("conv", self.conv_dim * self.conv_kernel, None),
                ("recurrent", math.prod(self.recurrent_shape), self.recurrent_dtype))

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        conv_dim = self.conv_dim
        if self.n_groups and self.n_groups % tp:
            conv_dim += 2 * (tp - self.n_groups) * self.ssm_state_size  # extra_groups_for_head_shards
        conv = _cdiv(conv_dim, tp) * (self.conv_kernel - 1)
        heads, *rest = self.recurrent_shape
        recurrent = _cdiv(heads, tp) * math.prod(rest)
        return (conv + recurrent) * dtype_bytes(dtype)  # one page, mamba_ssm_cache_dtype "auto"


@dataclass(frozen=True)
class LinearAttentionStateSpec(_StateSpec):
    kind: ClassVar[str] = "linear_state"


@dataclass(frozen=True)
class MambaStateSpec(_StateSpec):
    kind: ClassVar[str] = "mamba_state"


LayerCache = tuple[CacheSpec, ...]


def layer_kind(layer: LayerCache) -> str:
    return "+".join(s.kind for s in layer) or "none"


# ---------------------------------------------------------------------------------------------- the facts


@dataclass(frozen=True)
class ModelFacts:
    name: str
    model_type: str
    layers: tuple[LayerCache, ...]
    weight_params: int
    source: str = ""
    max_positions: int | None = None  # the config's context limit (max_position_embeddings / n_positions)
    defaults_used: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # MLA models: both layouts, each a full tuple of layers; `layers` is the one named by mla_layout.
    mla_layout: str | None = None
    mla_layouts: dict = field(default_factory=dict, compare=False, hash=False)

    # --- transformers' layout
    def layer_cache_bytes(self, index: int, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> dict:
        """K, V and state bytes of one layer after seq_len tokens (transformers' layout)."""
        specs = self.layers[index]
        k = sum(s.k_bytes(seq_len, batch, dtype) for s in specs)
        v = sum(s.v_bytes(seq_len, batch, dtype) for s in specs)
        st = sum(s.state_bytes(batch, dtype) for s in specs)
        return {"kind": layer_kind(specs), "k_bytes": k, "v_bytes": v, "state_bytes": st, "bytes": k + v + st}

    def cache_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> int:
        _check_shape(seq_len, batch)
        return sum(s.cache_bytes(seq_len, batch, dtype) for layer in self.layers for s in layer)

    def kind_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16") -> dict[str, int]:
        """Bytes per cache kind (a hybrid Falcon-H1 layer counts under both of its kinds)."""
        out: dict[str, int] = {}
        for layer in self.layers:
            for s in layer:
                out[s.kind] = out.get(s.kind, 0) + s.cache_bytes(seq_len, batch, dtype)
        return out

    def bytes_per_token(self, dtype: str = "bfloat16") -> int:
        """What one more token adds while no cap is reached (the textbook figure)."""
        return sum((s.k_per_token + s.v_per_token) * dtype_bytes(dtype) for layer in self.layers for s in layer)

    def pricing_terms(self, dtype: str = "bfloat16") -> tuple[int, tuple[tuple[int, int], ...], int]:
        """cache_bytes(t, 1) = t x per_token - sum(b x max(0, t - cap)) + constant, as
        (per_token, ((b, cap), ...) with one entry per distinct cap, constant)."""
        per_token, constant, capped = 0, 0, {}
        for layer in self.layers:
            for s in layer:
                b = (s.k_per_token + s.v_per_token) * dtype_bytes(dtype)
                per_token += b
                if s.cap is not None and b:
                    capped[s.cap] = capped.get(s.cap, 0) + b
                constant += s.state_bytes(1, dtype)
        return per_token, tuple(sorted((b, cap) for cap, b in capped.items())), constant

    @property
    def caps(self) -> tuple[int, ...]:
        return tuple(sorted({s.cap for layer in self.layers for s in layer if s.cap is not None}))

    def groups(self) -> list[dict]:
        """Identical layers counted together, in order of first appearance."""
        seen: dict[LayerCache, int] = {}
        for layer in self.layers:
            seen[layer] = seen.get(layer, 0) + 1
        out = []
        for layer, count in seen.items():
            row = {"kind": layer_kind(layer), "count": count}
            if len(layer) == 1:
                row.update({k: v for k, v in layer[0].describe().items() if k != "kind"})
            elif layer:
                row["parts"] = [s.describe() for s in layer]
            out.append(row)
        return out

    def with_mla_layout(self, layout: str) -> "ModelFacts":
        if not self.mla_layouts:
            raise ModelFactsError(f"{self.name}: not an MLA model, it has no {layout!r} layout")
        if layout not in self.mla_layouts:
            raise ModelFactsError(f"MLA layout {layout!r}: expected one of {', '.join(self.mla_layouts)}")
        return replace(self, layers=self.mla_layouts[layout], mla_layout=layout)

    # --- the paged engine view (analytic, vLLM's rules)
    def engine_cache_bytes(self, seq_len: int, batch: int = 1, dtype: str = "bfloat16", tp: int = 1) -> int:
        """Bytes a vLLM-style paged engine holds for `batch` requests of seq_len tokens, on one TP rank."""
        _check_shape(seq_len, batch)
        return batch * sum(s.engine_bytes(seq_len, dtype, tp) for layer in self.layers for s in layer)

    # --- weights and what fits beside them
    def weight_bytes(self, dtype: str = "bfloat16") -> int:
        return self.weight_params * dtype_bytes(dtype)

    def fits(self, gpu_bytes: int, seq_len: int, tp: int = 1, dtype: str = "bfloat16",
             weight_dtype: str | None = None) -> int:
        """Requests of seq_len tokens whose engine-view cache (in `dtype`) fits beside the weights (in
        `weight_dtype`, default the same) on each GPU of a TP group."""
        budget = int(GPU_MEMORY_UTILIZATION * gpu_bytes) - _cdiv(self.weight_bytes(weight_dtype or dtype), tp)
        per_request = self.engine_cache_bytes(seq_len, 1, dtype, tp)
        if budget <= 0:
            return 0
        return budget // per_request if per_request else -1  # -1: no per-request cache at all

    def fits_table(self, seqs, dtype: str = "bfloat16", weight_dtype: str | None = None) -> list[dict]:
        return [{"gpu_gb": gb, "tp": tp, "seq": seq, "requests": self.fits(gb * 10**9, seq, tp, dtype, weight_dtype)}
                for gb in GPU_SIZES_GB for tp in TP_SIZES for seq in seqs]


def _check_shape(seq_len: int, batch: int) -> None:
    if seq_len < 0 or batch < 1:
        raise ModelFactsError(f"seq_len {seq_len} and batch {batch}: need seq_len >= 0 and batch >= 1")


# ---------------------------------------------------------------------------------------------- reading configs


class _Config:
    """A config dict read the way transformers' config class would: missing fields take the class default
    (recorded), fields without one are an error naming them. JSON null counts as missing, as the classes'
    `x if x is not None else default` do."""

    def __init__(self, raw: dict, where: str, model_type: str):
        self.raw, self.where, self.model_type = raw, where, model_type
        self.defaults_used: list[str] = []

    def req(self, key: str, *aliases: str) -> int:
        for k in (key, *aliases):
            if self.raw.get(k) is not None:
                return self._int(k, self.raw[k])
        raise ModelFactsError(f"{self.where}: config field {key!r} is missing (model_type {self.model_type})")

    def opt(self, key: str, default, *aliases: str):
        for k in (key, *aliases):
            if k in self.raw and self.raw[k] is not None:
                value = self.raw[k]
                return self._int(k, value) if isinstance(default, int) and not isinstance(default, bool) \
                    and isinstance(value, (int, float)) else value
        self.defaults_used.append(f"{key}={default!r}")
        return default

    def maybe(self, key: str):
        """A field transformers reads with getattr(config, key, None): no default to record."""
        return self.raw.get(key)

    def _int(self, key: str, value) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
            raise ModelFactsError(f"{self.where}: config field {key!r} is {value!r}, expected a non-negative integer")
        return int(value)


_LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention"}  # configuration_utils.py


def _layer_types_from(c: _Config, n_layers: int, default: list[str]) -> list[str]:
    types = c.raw.get("layer_types")
    if types is None:
        return default
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ModelFactsError(f"{c.where}: config field 'layer_types' must be a list of strings")
    if len(types) < n_layers:
        raise ModelFactsError(f"{c.where}: config field 'layer_types' has {len(types)} entries for "
                              f"{n_layers} layers")
    return [_LEGACY_LAYER_TYPES.get(t, t) for t in types[:n_layers]]


def _kv_heads(c: _Config, n_heads: int, class_default: int) -> int:
    """num_key_value_heads: missing takes the class default, an explicit null means n_heads (each class's
    `if self.num_key_value_heads is None: self.num_key_value_heads = self.num_attention_heads`)."""
    if "num_key_value_heads" in c.raw and c.raw["num_key_value_heads"] is None:
        return n_heads
    return c.opt("num_key_value_heads", class_default)


def _generic_layer_types(n_layers: int, sliding_window, chunk) -> list[str]:
    """cache_utils.get_layer_types_and_kwargs without `layer_types`: every layer sliding if the config has a
    sliding_window, else chunked if it has an attention_chunk_size, else full."""
    kind = "sliding_attention" if sliding_window is not None else \
        "chunked_attention" if chunk is not None else "full_attention"
    return [kind] * n_layers


def _attention_spec(c: _Config, layer_type: str, n_kv: int, head_dim: int, window, chunk, **kw) -> LayerCache:
    if layer_type == "full_attention":
        return (FullAttentionSpec(n_kv, head_dim, **kw),)
    if layer_type == "sliding_attention":
        if not window:
            raise ModelFactsError(f"{c.where}: a sliding_attention layer needs config field 'sliding_window'")
        return (SlidingWindowSpec(n_kv, head_dim, sliding_window=int(window), **kw),)
    if layer_type == "chunked_attention":
        if not chunk:
            raise ModelFactsError(f"{c.where}: a chunked_attention layer needs config field 'attention_chunk_size'")
        return (ChunkedLocalAttentionSpec(n_kv, head_dim, attention_chunk_size=int(chunk), **kw),)
    if layer_type in ("moe", "mlp", "dummy"):
        return ()
    raise ModelFactsError(f"{c.where}: layer type {layer_type!r} is not supported for model_type {c.model_type}")


# Parameter counts (biases where the module has them). Each returns a number of parameters.
def _attn_params(h: int, n_heads: int, n_kv: int, hd: int, qkv_bias=False, o_bias=False, q_factor=1) -> int:
    q = h * n_heads * hd * q_factor + (n_heads * hd * q_factor if qkv_bias else 0)
    kv = 2 * (h * n_kv * hd + (n_kv * hd if qkv_bias else 0))
    o = n_heads * hd * h + (h if o_bias else 0)
    return q + kv + o


def _mlp_params(h: int, inter: int, gated=True, bias=False) -> int:
    n = (3 if gated else 2) * h * inter
    return n + ((2 * inter + h if gated else inter + h) if bias else 0)


def _experts_params(h: int, n_experts: int, inter: int) -> int:
    return n_experts * 3 * h * inter  # gate, up and down per expert


def _embed_params(c: _Config, vocab: int, h: int, tie_default: bool) -> int:
    tied = bool(c.opt("tie_word_embeddings", tie_default))
    return vocab * h * (1 if tied else 2)


@dataclass
class _Built:
    layers: list[LayerCache]
    params: int
    notes: list[str] = field(default_factory=list)
    mla_per_head: list[LayerCache] | None = None


def _llama_like(c: _Config) -> _Built:
    """llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, phi3, minimax_m2: GQA with an optional explicit head_dim; sliding windows per
    each config class's rules (models/<family>/configuration_<family>.py, __post_init__)."""
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = _kv_heads(c, n_heads, {"mistral": 8, "qwen2": 32, "qwen3": 32, "qwen3_moe": 4, "mixtral": 8,
                                  "minimax_m2": 8}.get(mt, n_heads))
    head_dim = c.opt("head_dim", 128) if mt in ("qwen3", "minimax_m2") else (c.maybe("head_dim") or h // n_heads)
    if mt in ("qwen2", "qwen3", "qwen3_moe"):  # sliding_window only counts with use_sliding_window
        window = c.opt("sliding_window", 4096) if c.opt("use_sliding_window", False) else None
    elif mt == "mistral":
        window = c.opt("sliding_window", 4096)
    else:
        window = c.maybe("sliding_window")
    chunk = c.maybe("attention_chunk_size")
    if mt in ("qwen2", "qwen3"):
        max_window = c.opt("max_window_layers", 28)
        default = ["sliding_attention" if window is not None and i >= max_window else "full_attention"
                   for i in range(n_layers)]
    else:
        default = _generic_layer_types(n_layers, window, chunk)
    types = _layer_types_from(c, n_layers, default)
    layers = [_attention_spec(c, t, n_kv, head_dim, window, chunk) for t in types]

    vocab = c.req("vocab_size")
    qkv_bias = mt == "qwen2" or (mt in ("llama", "qwen3", "qwen3_moe") and c.opt("attention_bias", False))
    o_bias = mt in ("llama", "qwen3", "qwen3_moe") and c.opt("attention_bias", False)
    attn = _attn_params(h, n_heads, n_kv, head_dim, qkv_bias, o_bias)
    if mt in ("qwen3", "qwen3_moe"):
        attn += 2 * head_dim  # q_norm, k_norm
    elif mt == "minimax_m2":
        attn += (n_heads + n_kv) * head_dim  # q_norm and k_norm over all heads
    params = _embed_params(c, vocab, h, False) + h  # + final norm
    inter = c.req("intermediate_size")
    mlp_bias = mt == "llama" and c.opt("mlp_bias", False)
    for i in range(n_layers):
        params += attn + 2 * h
        if mt == "qwen3_moe" and i not in (c.opt("mlp_only_layers", []) or []) and c.opt("num_experts", 128) > 0 \
                and (i + 1) % c.opt("decoder_sparse_step", 1) == 0:
            e = c.opt("num_experts", 128)
            params += h * e + _experts_params(h, e, c.opt("moe_intermediate_size", 768))
        elif mt in ("mixtral", "minimax_m2"):  # every layer MoE: router and experts, no shared expert
            e = c.opt("num_local_experts", 8 if mt == "mixtral" else 256)
            params += h * e + _experts_params(h, e, inter)
        else:
            params += _mlp_params(h, inter, bias=mlp_bias)
    return _Built(layers, params)


def _gpt2(c: _Config) -> _Built:
    n_layers, n_heads, h = c.req("n_layer", "num_hidden_layers"), c.req("n_head", "num_attention_heads"), \
        c.req("n_embd", "hidden_size")
    inner = c.opt("n_inner", 4 * h)
    layers = [(FullAttentionSpec(n_heads, h // n_heads),)] * n_layers
    per_layer = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h)
    params = c.opt("vocab_size", 50257) * h + c.opt("n_positions", 1024) * h + n_layers * per_layer + 2 * h
    return _Built(layers, params)  # lm_head tied to wte


def _falcon(c: _Config) -> _Built:
    """modeling_falcon.FalconAttention: multi_query caches one K/V head; new_decoder_architecture caches K/V
    broadcast to every query head (forward: num_kv_heads = self.num_heads if new_decoder_architecture)."""
    n_layers, n_heads, h = c.req("num_hidden_layers", "n_layer"), c.req("num_attention_heads", "n_head"), \
        c.req("hidden_size", "n_embed")
    hd = h // n_heads
    new_arch = bool(c.opt("new_decoder_architecture", False))
    multi_query = bool(c.opt("multi_query", True))
    n_kv_cfg = c.opt("num_kv_heads", n_heads)
    if new_arch:
        spec = FullAttentionSpec(n_heads, hd, engine_kv_heads=n_kv_cfg)
        qkv_out = (n_kv_cfg * 2 + n_heads) * hd
    elif multi_query:
        spec, qkv_out = FullAttentionSpec(1, hd), h + 2 * hd
    else:
        spec, qkv_out = FullAttentionSpec(n_heads, hd), 3 * h
    bias = bool(c.opt("bias", False))
    ffn = c.opt("ffn_hidden_size", 4 * h)
    n_ln = c.opt("num_ln_in_parallel_attn", 2 if new_arch else 1) if new_arch else \
        (1 if c.opt("parallel_attn", True) else 2)
    per_layer = (h * qkv_out + (qkv_out if bias else 0)) + (h * h + (h if bias else 0)) + \
        (h * ffn + (ffn if bias else 0)) + (ffn * h + (h if bias else 0)) + n_ln * 2 * h
    params = _embed_params(c, c.req("vocab_size"), h, True) + n_layers * per_layer + 2 * h
    return _Built([(spec,)] * n_layers, params)


def _gemma3_text(c: _Config) -> _Built:
    """configuration_gemma3.Gemma3TextConfig.__post_init__: 5 sliding : 1 full by sliding_window_pattern."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 256)
    window = c.opt("sliding_window", 4096)
    if c.opt("use_bidirectional_attention", False):
        window = window // 2 + 1
    pattern = c.opt("sliding_window_pattern", 6)
    default = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    types = _layer_types_from(c, n_layers, default)
    layers = [_attention_spec(c, t, n_kv, hd, window, None) for t in types]
    attn = _attn_params(h, n_heads, n_kv, hd, c.opt("attention_bias", False), c.opt("attention_bias", False))
    per_layer = attn + 2 * hd + 4 * h + _mlp_params(h, c.req("intermediate_size"))
    params = _embed_params(c, c.opt("vocab_size", 262_208), h, True) + n_layers * per_layer + h
    return _Built(layers, params)


def _gemma4_text(c: _Config) -> _Built:
    """configuration_gemma4.Gemma4TextConfig: 5 sliding : 1 full (the last layer always full); full layers take
    global_head_dim and, with attention_k_eq_v, num_global_key_value_heads (per_layer_config); the last
    num_kv_shared_layers reuse an earlier layer's cache and hold none (kv_sharing_modes "reuse" -> DummyLayer).
    With attention_k_eq_v a full layer has no v_proj, but its cache still keeps V beside K
    (modeling_gemma4.Gemma4TextAttention.forward: value_states = key_states, then cache.update)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 256)
    window = c.opt("sliding_window", 512)
    if c.maybe("use_bidirectional_attention") == "all":
        window = window // 2 + 1
    default = ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n_layers)]
    types = list(_layer_types_from(c, n_layers, default))
    types[-1] = "full_attention"  # __post_init__ forces the last layer to full attention
    k_eq_v = bool(c.opt("attention_k_eq_v", False))
    global_hd = c.opt("global_head_dim", 512)
    global_kv = c.maybe("num_global_key_value_heads") if k_eq_v else None
    global_kv = int(global_kv) if global_kv else n_kv
    shared = c.opt("num_kv_shared_layers", 0)
    first_shared = n_layers - shared
    bias = c.opt("attention_bias", False)
    inter, per_layer_in = c.req("intermediate_size"), c.opt("hidden_size_per_layer_input", 256)
    moe = bool(c.opt("enable_moe_block", False))
    layers, params = [], 0
    for i, t in enumerate(types):
        full = t == "full_attention"
        head_dim, kv = (global_hd, global_kv) if full else (hd, n_kv)
        reuse = i >= first_shared
        layers.append(() if reuse else _attention_spec(c, t, kv, head_dim, window, None))
        params += h * n_heads * head_dim + head_dim + n_heads * head_dim * h + ((n_heads * head_dim + h) if bias else 0)
        if not reuse:  # k_norm, k_proj and (unless K doubles as V) v_proj
            n_proj = 1 if (k_eq_v and full) else 2
            params += head_dim + n_proj * (h * kv * head_dim + (kv * head_dim if bias else 0))
        wide = 2 if (c.opt("use_double_wide_mlp", False) and reuse) else 1
        params += 4 * h + _mlp_params(h, inter * wide)
        if per_layer_in:
            params += 2 * h * per_layer_in + h
        if moe:
            e, moe_inter = c.req("num_experts"), c.req("moe_intermediate_size")
            params += h * e + h + e + _experts_params(h, e, moe_inter) + 3 * h
    vocab = c.opt("vocab_size", 262_144)
    params += _embed_params(c, vocab, h, True) + h
    if per_layer_in:
        params += c.opt("vocab_size_per_layer_input", 262_144) * n_layers * per_layer_in + \
            h * n_layers * per_layer_in + per_layer_in
    return _Built(layers, params)


def _mimo_v2_flash(c: _Config) -> _Built:
    """configuration_mimo_v2_flash: full attention at layer 0 and every 6th, sliding elsewhere with a window of
    sliding_window_size + 1; modeling_mimo_v2_flash.MiMoV2FlashAttention gives sliding layers twice the KV heads,
    and V its own head dim (v_head_dim)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd, v_hd = c.opt("num_key_value_heads", 4), c.opt("head_dim", 192), c.opt("v_head_dim", 128)
    window = c.maybe("sliding_window_size")
    window = int(window) + 1 if window is not None else c.opt("sliding_window", 129)
    default = ["full_attention" if i == 0 or not (i + 1) % 6 else "sliding_attention" for i in range(n_layers)]
    types = _layer_types_from(c, n_layers, default)
    mlp_types = c.maybe("mlp_layer_types") or ["dense"] + ["sparse"] * (n_layers - 1)
    bias = c.opt("attention_bias", False)
    e, moe_inter, inter = c.opt("n_routed_experts", 256), c.opt("moe_intermediate_size", 2048), \
        c.req("intermediate_size")
    layers, params = [], _embed_params(c, c.opt("vocab_size", 152576), h, False) + h
    for t, mlp in zip(types, mlp_types):
        swa = t == "sliding_attention"
        kv = 2 * n_kv if swa else n_kv
        layers.append(_attention_spec(c, t, kv, hd, window, None, head_dim_v=v_hd))
        params += h * n_heads * hd + h * kv * (hd + v_hd) + n_heads * v_hd * h + \
            ((n_heads * hd + kv * (hd + v_hd)) if bias else 0) + (n_heads if swa else 0) + 2 * h
        params += h * e + _experts_params(h, e, moe_inter) if mlp == "sparse" else _mlp_params(h, inter)
    return _Built(layers, params)


def _gpt_oss(c: _Config) -> _Built:
    """configuration_gpt_oss.GptOssConfig.__post_init__: sliding and full layers alternate."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = _kv_heads(c, n_heads, 8), c.opt("head_dim", 64)
    window = c.opt("sliding_window", 128)
    default = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n_layers)]
    types = _layer_types_from(c, n_layers, default)
    layers = [_attention_spec(c, t, n_kv, hd, window, None) for t in types]
    bias = c.opt("attention_bias", True)
    e, inter = c.opt("num_local_experts", 128, "num_experts"), c.req("intermediate_size")
    experts = e * (h * 2 * inter + 2 * inter + inter * h + h)  # gate_up and down, with biases
    per_layer = _attn_params(h, n_heads, n_kv, hd, bias, bias) + n_heads + 2 * h + (h * e + e) + experts
    params = _embed_params(c, c.req("vocab_size"), h, False) + n_layers * per_layer + h
    return _Built(layers, params)


def _llama4_text(c: _Config) -> _Built:
    """configuration_llama4.Llama4TextConfig.__post_init__: layers with RoPE (no_rope_layers[i] == 1) are
    chunked, the NoPE layers (every no_rope_layer_interval-th) are full."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = _kv_heads(c, n_heads, 8), c.opt("head_dim", 128)
    chunk = c.opt("attention_chunk_size", 8192)
    rope = c.maybe("no_rope_layers") or \
        [int((i + 1) % c.opt("no_rope_layer_interval", 4) != 0) for i in range(n_layers)]
    default = ["chunked_attention" if r and chunk is not None else "full_attention" for r in rope]
    types = _layer_types_from(c, n_layers, default)
    layers = [_attention_spec(c, t, n_kv, hd, None, chunk) for t in types]
    step = c.opt("interleave_moe_layer_step", 1)
    moe = c.maybe("moe_layers")
    moe = set(moe if moe is not None else range(step - 1, n_layers, step))
    e, inter = c.opt("num_local_experts", 16), c.req("intermediate_size")
    attn = _attn_params(h, n_heads, n_kv, hd, c.opt("attention_bias", False), c.opt("attention_bias", False))
    params = _embed_params(c, c.opt("vocab_size", 202048), h, False) + h
    for i in range(n_layers):
        params += attn + 2 * h
        if i in moe:
            params += h * e + _experts_params(h, e, inter) + _mlp_params(h, inter)  # router, experts, shared
        else:
            params += _mlp_params(h, c.opt("intermediate_size_mlp", 16384))
    return _Built(layers, params)


def _indexer_layers(c: _Config, n_layers: int) -> list[bool]:
    """Which DSA layers run an indexer and so cache its keys: every DeepSeek-V3.2 layer; GLM-5's "shared" layers
    reuse the previous layer's selection (configuration_glm_moe_dsa.GlmMoeDsaConfig.__post_init__)."""
    if c.model_type == "deepseek_v32":
        return [True] * n_layers
    if c.model_type != "glm_moe_dsa":
        return [False] * n_layers
    types = c.maybe("indexer_types")
    pattern = c.maybe("index_topk_pattern")
    if types is None and pattern is not None:
        types = [{"F": "full", "S": "shared"}.get(ch, ch) for ch in pattern] if isinstance(pattern, str) \
            else list(pattern)
    if types is None:
        freq, offset = max(c.raw.get("index_topk_freq", 1) or 1, 1), c.raw.get("index_skip_topk_offset", 2)
        types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(n_layers)]
    return [t == "full" for t in types[:n_layers]]


def _deepseek(c: _Config) -> _Built:
    """deepseek_v2 / deepseek_v3 (and Kimi-K2, a DeepSeek-V3 architecture): MLA, dense then MoE layers;
    deepseek_v32 and glm_moe_dsa add DSA's indexer (models/deepseek_v32/modeling_deepseek_v32.py,
    DeepseekV32Indexer: `cache.update_indexer(k)`)."""
    mt = c.model_type
    v3 = mt in ("deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa")
    glm = mt == "glm_moe_dsa"
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    kv_rank, rope = c.opt("kv_lora_rank", 512), c.opt("qk_rope_head_dim", 64)
    nope, v_dim = c.opt("qk_nope_head_dim", 192 if glm else 128), c.opt("v_head_dim", 256 if glm else 128)
    # DeepSeek-V2-Lite writes "q_lora_rank": null: no q compression (a q_proj), unlike a missing field
    q_rank = c.raw["q_lora_rank"] if "q_lora_rank" in c.raw else c.opt("q_lora_rank", 2048 if glm else 1536)
    indexed = _indexer_layers(c, n_layers)
    idx_dim = c.opt("index_head_dim", 128) if any(indexed) else 0
    idx_heads = c.opt("index_n_heads", 32 if glm else 64) if any(indexed) else 0
    latent_layers = [(MLALatentSpec(kv_rank, rope, idx_dim if ix else 0),) for ix in indexed]
    per_head_layers = [(MLAPerHeadSpec(n_heads, nope + rope, v_dim, kv_rank, rope, idx_dim if ix else 0),)
                       for ix in indexed]
    bias = bool(c.opt("attention_bias", False))
    qk = nope + rope
    q = h * n_heads * qk if q_rank is None else \
        (h * q_rank + (q_rank if bias else 0)) + q_rank + q_rank * n_heads * qk
    attn = q + (h * (kv_rank + rope) + ((kv_rank + rope) if bias else 0)) + kv_rank + \
        kv_rank * n_heads * (nope + v_dim) + (n_heads * v_dim * h + (h if bias else 0))
    indexer = (q_rank or 0) * idx_heads * idx_dim + h * idx_dim + 2 * idx_dim + h * idx_heads  # wq_b, wk, k_norm, weights
    first_dense = c.opt("first_k_dense_replace", 3 if v3 else 0)
    dense = c.maybe("mlp_layer_types")
    dense = [t == "dense" for t in dense] if isinstance(dense, list) else [i < first_dense for i in range(n_layers)]
    e = c.opt("n_routed_experts", 256 if v3 else 64)
    moe_inter = c.opt("moe_intermediate_size", 2048 if v3 else 1407)
    shared = c.opt("n_shared_experts", 1 if v3 else 2)
    inter = c.req("intermediate_size")
    params = _embed_params(c, c.req("vocab_size"), h, False) + h
    for i in range(n_layers):
        params += attn + 2 * h + (indexer if indexed[i] else 0)
        if dense[i]:
            params += _mlp_params(h, inter)
        else:  # router, routed experts, shared experts as one MLP (V3's router bias is a buffer, not counted)
            params += h * e + _experts_params(h, e, moe_inter) + _mlp_params(h, moe_inter * shared)
    notes = []
    if c.raw.get("num_nextn_predict_layers"):
        notes.append(f"weights exclude the {c.raw['num_nextn_predict_layers']} multi-token-prediction layer(s) "
                     "transformers does not build")
    return _Built(latent_layers, params, notes, mla_per_head=per_head_layers)


def _qwen3_next(c: _Config) -> _Built:
    """configuration_qwen3_next (and qwen3_5, qwen3_5_moe): a full-attention layer every full_attention_interval
    (4), gated delta-net layers between (modeling_qwen3_next.Qwen3NextGatedDeltaNet; Qwen3_5GatedDeltaNet holds
    the same states). MLPs: Qwen3-Next MoE by decoder_sparse_step, Qwen3.5 dense, Qwen3.5-MoE MoE everywhere."""
    mt = c.model_type
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv, hd = c.opt("num_key_value_heads", 4 if mt == "qwen3_5_text" else 2), c.opt("head_dim", 256)
    interval = c.opt("full_attention_interval", 4)
    default = ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n_layers)]
    types = _layer_types_from(c, n_layers, default)
    k_heads, v_heads = c.opt("linear_num_key_heads", 16), c.opt("linear_num_value_heads", 32)
    k_dim, v_dim = c.opt("linear_key_head_dim", 128), c.opt("linear_value_head_dim", 128)
    kernel = c.opt("linear_conv_kernel_dim", 4)
    key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
    conv_dim = 2 * key_dim + value_dim
    linear = (LinearAttentionStateSpec(conv_dim, kernel, (v_heads, k_dim, v_dim)),)
    layers = [linear if t == "linear_attention" else _attention_spec(c, t, n_kv, hd, None, None) for t in types]
    bias = c.opt("attention_bias", False)
    full_attn = _attn_params(h, n_heads, n_kv, hd, bias, bias, q_factor=2) + 2 * hd  # gated q, q/k norms
    lin_attn = h * (2 * key_dim + 2 * value_dim) + h * 2 * v_heads + conv_dim * kernel + 2 * v_heads + v_dim + \
        value_dim * h
    e = 0 if mt == "qwen3_5_text" else c.opt("num_experts", 512 if mt == "qwen3_next" else 256)
    mlp_only = (c.opt("mlp_only_layers", []) or []) if mt == "qwen3_next" else []
    step = c.opt("decoder_sparse_step", 1) if mt == "qwen3_next" else 1
    vocab = c.req("vocab_size") if mt == "qwen3_next" else c.opt("vocab_size", 248320)
    params = _embed_params(c, vocab, h, False) + h
    for i, t in enumerate(types):
        params += (lin_attn if t == "linear_attention" else full_attn) + 2 * h
        if i not in mlp_only and e > 0 and (i + 1) % step == 0:
            params += h * e + _experts_params(h, e, c.opt("moe_intermediate_size", 512)) + \
                _mlp_params(h, c.opt("shared_expert_intermediate_size", 512)) + h  # + shared_expert_gate
        else:
            params += _mlp_params(h, c.req("intermediate_size"))
    return _Built(layers, params)


def _jamba(c: _Config) -> _Built:
    """configuration_jamba.JambaConfig.layers_block_type: attention where i % attn_layer_period ==
    attn_layer_offset, Mamba-1 elsewhere (modeling_jamba.JambaMambaMixer)."""
    n_layers, n_heads, h = c.req("num_hidden_layers"), c.req("num_attention_heads"), c.req("hidden_size")
    n_kv = _kv_heads(c, n_heads, 8)
    hd = c.maybe("head_dim") or h // n_heads
    period, offset = c.opt("attn_layer_period", 8), c.opt("attn_layer_offset", 4)
    d_state, d_conv, expand = c.opt("mamba_d_state", 16), c.opt("mamba_d_conv", 4), c.opt("mamba_expand", 2)
    inter_m = expand * h
    dt_rank = c.opt("mamba_dt_rank", "auto")
    dt_rank = math.ceil(h / 16) if dt_rank == "auto" else int(dt_rank)
    mamba = (MambaStateSpec(inter_m, d_conv, (inter_m, d_state)),)
    attn_layers = {i for i in range(n_layers) if i % period == offset}
    layers = [(FullAttentionSpec(n_kv, hd),) if i in attn_layers else mamba for i in range(n_layers)]
    conv_bias, proj_bias = c.opt("mamba_conv_bias", True), c.opt("mamba_proj_bias", False)
    mamba_params = h * 2 * inter_m + (2 * inter_m if proj_bias else 0) + inter_m * d_conv + \
        (inter_m if conv_bias else 0) + inter_m * (dt_rank + 2 * d_state) + dt_rank * inter_m + inter_m + \
        inter_m * d_state + inter_m + inter_m * h + (h if proj_bias else 0) + dt_rank + 2 * d_state
    e_period, e_offset = c.opt("expert_layer_period", 2), c.opt("expert_layer_offset", 1)
    e, inter = c.opt("num_experts", 16), c.req("intermediate_size")
    params = _embed_params(c, c.opt("vocab_size", 65536), h, False) + h
    for i in range(n_layers):
        params += (_attn_params(h, n_heads, n_kv, hd) if i in attn_layers else mamba_params) + 2 * h
        params += h * e + _experts_params(h, e, inter) if (i % e_period == e_offset and e > 1) \
            else _mlp_params(h, inter)
    return _Built(layers, params)


def _nemotron_h(c: _Config) -> _Built:
    """configuration_nemotron_h: hybrid_override_pattern / layers_block_type: M = Mamba-2, * = attention,
    - = MLP, E = MoE (no cache); modeling_nemotron_h.NemotronHMamba2Mixer holds the state."""
    h = c.req("hidden_size")
    pattern = c.maybe("hybrid_override_pattern")
    types = c.maybe("layers_block_type") or c.maybe("layer_types")
    if types is None and pattern is not None:
        table = {"M": "linear_attention", "E": "moe", "*": "full_attention", "-": "mlp"}
        bad = sorted(set(pattern) - set(table))
        if bad:
            raise ModelFactsError(f"{c.where}: config field 'hybrid_override_pattern' has unknown symbol(s) {bad}")
        types = [table[ch] for ch in pattern]
    if types is None:
        raise ModelFactsError(f"{c.where}: config field 'hybrid_override_pattern' is missing (model_type nemotron_h)")
    types = [_LEGACY_LAYER_TYPES.get(t, t) for t in types]
    n_heads = c.opt("num_attention_heads", 32)
    n_kv, hd = _kv_heads(c, n_heads, 8), c.opt("head_dim", 128)
    m_heads, m_head_dim = c.opt("mamba_num_heads", 128), c.opt("mamba_head_dim", 64)
    inter_m = m_heads * m_head_dim
    groups = c.opt("n_groups", 8, "mamba_n_groups")
    state = c.opt("ssm_state_size", 128)
    kernel = c.opt("conv_kernel", 4, "mamba_d_conv")
    mamba = (MambaStateSpec(inter_m + 2 * groups * state, kernel, (m_heads, m_head_dim, state), n_groups=groups,
                            ssm_state_size=state),)
    layers = [mamba if t == "linear_attention" else _attention_spec(c, t, n_kv, hd, None, None) for t in types]
    conv_dim = inter_m + 2 * groups * state
    mamba_params = h * (2 * inter_m + 2 * groups * state + m_heads) + conv_dim * kernel + \
        (conv_dim if c.opt("use_conv_bias", True, "mamba_conv_bias") else 0) + 3 * m_heads + inter_m + inter_m * h
    bias = c.opt("attention_bias", False)
    inter = c.opt("intermediate_size", 21504)
    mlp_bias = c.opt("mlp_bias", False)
    params = _embed_params(c, c.opt("vocab_size", 131072), h, False) + h
    for t in types:
        params += h  # one norm per block
        if t == "linear_attention":
            params += mamba_params
        elif t == "full_attention":
            params += _attn_params(h, n_heads, n_kv, hd, bias, bias)
        elif t == "mlp":
            params += _mlp_params(h, inter, gated=False, bias=mlp_bias)
        else:  # NemotronHMoE: router, up/down experts (no gate), shared experts, optional latent projections
            e = c.opt("n_routed_experts", 8)
            latent = c.maybe("moe_latent_size")
            width = latent or h
            params += e * h + e * 2 * c.opt("moe_intermediate_size", 7688) * width + \
                _mlp_params(h, c.opt("moe_shared_expert_intermediate_size", 7688), gated=False, bias=mlp_bias)
            if latent:
                params += 2 * h * latent + ((latent + h) if mlp_bias else 0)
    return _Built(layers, params)


_FAMILIES = {
    "gpt2": _gpt2, "llama": _llama_like, "mistral": _llama_like, "qwen2": _llama_like, "qwen3": _llama_like,
    "qwen3_moe": _llama_like, "phi3": _llama_like, "falcon": _falcon, "gemma3_text": _gemma3_text,
    "gpt_oss": _gpt_oss, "llama4_text": _llama4_text, "deepseek_v2": _deepseek, "deepseek_v3": _deepseek,
    "kimi_k2": _deepseek, "deepseek_v32": _deepseek, "glm_moe_dsa": _deepseek, "qwen3_next": _qwen3_next, "jamba": _jamba, "nemotron_h": _nemotron_h,
    "gemma4_text": _gemma4_text, "mimo_v2_flash": _mimo_v2_flash, "mixtral": _llama_like, "minimax_m2": _llama_like, "qwen3_5_text": _qwen3_next, "qwen3_5_moe_text": _qwen3_next,
}
# Multimodal wrappers whose language model sits under text_config, and its model_type when not given there.
_WRAPPERS = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
             "qwen3_5_moe": "qwen3_5_moe_text"}
SUPPORTED = tuple(sorted(set(_FAMILIES) | set(_WRAPPERS)))


def facts_from_config(raw: dict, name: str = "", where: str = "config.json", source: str = "") -> ModelFacts:
    """Describe the cache of the model whose config.json is `raw`."""
    if not isinstance(raw, dict):
        raise ModelFactsError(f"{where}: a config must be a JSON object, got {type(raw).__name__}")
    model_type = raw.get("model_type")
    if not isinstance(model_type, str):
        raise ModelFactsError(f"{where}: config field 'model_type' is missing")
    text = raw
    if model_type in _WRAPPERS:
        text = raw.get("text_config")
        if not isinstance(text, dict):
            raise ModelFactsError(f"{where}: config field 'text_config' is missing (model_type {model_type})")
        text = {**({"tie_word_embeddings": raw["tie_word_embeddings"]} if "tie_word_embeddings" in raw else {}),
                **text}
        model_type = text.get("model_type") or _WRAPPERS[model_type]
    if model_type not in _FAMILIES:
        raise ModelFactsError(f"{where}: model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED)}")
    c = _Config(text, where, model_type)
    built = _FAMILIES[model_type](c)
    notes = list(built.notes)
    if model_type == "kimi_k2":
        notes.append("kimi_k2 read as the DeepSeek-V3 architecture it uses")
    if text is not raw:
        notes.append("weights: the language model only (no vision tower)")
    layers = tuple(built.layers)
    mla_layouts = {}
    if built.mla_per_head is not None:
        mla_layouts = {"mla_latent": layers, "mla_per_head": tuple(built.mla_per_head)}
    limit = text.get("max_position_embeddings", text.get("n_positions"))
    return ModelFacts(name=name or where, model_type=model_type, layers=layers, weight_params=built.params,
                      source=source, max_positions=limit if isinstance(limit, int) and limit > 0 else None,
                      defaults_used=tuple(dict.fromkeys(c.defaults_used)), notes=tuple(notes),
                      mla_layout="mla_latent" if mla_layouts else None, mla_layouts=mla_layouts)


# ---------------------------------------------------------------------------------------------- finding configs

def catalogue_names() -> list[str]:
    """Models in runner/core/catalogue/ (files with a "config"; mla_layouts.json and the like are not models)."""
    names = []
    for path in sorted(CATALOGUE.glob("*.json")) if CATALOGUE.is_dir() else []:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            names.append(path.stem)  # listed, so that loading it reports what is wrong with it
            continue
        if isinstance(entry, dict) and "config" in entry:
            names.append(path.stem)
    return names


def _catalogue_entry(name: str) -> tuple[dict, str] | None:
    path = CATALOGUE / f"{name}.json"
    if not path.is_file():
        return None
    entry = _read_json(path)
    if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
        raise ModelFactsError(f"{path}: a catalogue entry needs a 'config' object")
    src = entry.get("source")
    return entry["config"], src if isinstance(src, str) else json.dumps(src, sort_keys=True)


def _legacy(name: str) -> tuple[dict, str] | None:
    table = {**BUILTIN, **TEST_MODELS}
    if name not in table:
        return None
    cls, kwargs = table[name]
    return {"model_type": LEGACY_MODEL_TYPES[cls], **kwargs}, "runner/core/builtin_configs.py (built-in hyperparameters)"


def builtin_names() -> list[str]:
    """Every built-in architecture: the catalogue's and the hand-written ones it does not carry."""
    return sorted(set(catalogue_names()) | set(BUILTIN))


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelFactsError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFactsError(f"{path}: cannot read: {exc}") from None


def load(name_or_path: str) -> ModelFacts:
    """Facts of a catalogue name, a legacy built-in name, a config.json file or a folder holding one."""
    found = _catalogue_entry(name_or_path) if "/" not in name_or_path and name_or_path not in (".", "..") else None
    if found is None and "/" not in name_or_path:
        found = _legacy(name_or_path)
    if found is not None:
        config, source = found
        return facts_from_config(config, name=name_or_path, where=f"catalogue model {name_or_path}", source=source)
    path = Path(name_or_path)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ModelFactsError(f"{name_or_path}: no config.json in this folder")
    elif not path.is_file():
        raise ModelFactsError(f"unknown model {name_or_path!r}: not a built-in model ({', '.join(builtin_names())})"
                              " and no such config.json file or folder")
    return facts_from_config(_read_json(path), name=name_or_path, where=str(path), source=f"local:{path}")
