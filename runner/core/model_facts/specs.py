"""The cache specs: what one layer's cache of one kind holds per sequence (transformers' layout) and per request
in a paged engine (vLLM's v1 specs). Nothing else lives here, as vLLM keeps vllm/v1/kv_cache_interface.py."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from .common import BLOCK_TOKENS, cdiv, dtype_bytes

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


def kv_heads_per_rank(heads: int, tp: int) -> int:
    """Attention heads one rank keeps: split across ranks, one replicated head where heads < tp."""
    return max(1, cdiv(heads, tp))


@dataclass(frozen=True)
class FullAttentionSpec(CacheSpec):
    kind: ClassVar[str] = "full"
    num_kv_heads: int
    head_dim: int
    head_dim_v: int | None = None       # None: same as head_dim
    engine_kv_heads: int | None = None  # where an engine keeps fewer heads than transformers (Falcon-40B)
    # an "indexed_attention" layer (cache_utils.DynamicIndexedLayer) also keeps one index_head_dim indexer key
    # per token, counted with the keys
    indexer_head_dim: int = 0
    # tokens the model itself puts ahead of every prompt and caches with it (CPM-Ant's prompt_length)
    prefix_tokens: int = 0

    @property
    def k_per_token(self) -> int:
        return self.num_kv_heads * self.head_dim + self.indexer_head_dim

    def tokens_held(self, seq_len: int) -> int:
        return super().tokens_held(seq_len + self.prefix_tokens)

    @property
    def v_per_token(self) -> int:
        return self.num_kv_heads * (self.head_dim_v or self.head_dim)

    def engine_pages(self, seq_len: int) -> int:
        return cdiv(seq_len + self.prefix_tokens, BLOCK_TOKENS)

    def describe(self) -> dict:
        out = super().describe()
        for key in ("indexer_head_dim", "prefix_tokens"):  # named only where set: other groups read as before
            if not out[key]:
                out.pop(key)
        return out

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        heads = kv_heads_per_rank(self.engine_kv_heads or self.num_kv_heads, tp)
        page = BLOCK_TOKENS * (heads * (self.head_dim + (self.head_dim_v or self.head_dim)) + self.indexer_head_dim) \
            * dtype_bytes(dtype)
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
        return cdiv(seq_len, BLOCK_TOKENS) - skipped // BLOCK_TOKENS


@dataclass(frozen=True)
class ChunkedLocalAttentionSpec(FullAttentionSpec):
    kind: ClassVar[str] = "chunked"
    attention_chunk_size: int = 0

    @property
    def cap(self) -> int:
        return self.attention_chunk_size - 1  # a DynamicSlidingWindowLayer with the chunk as its window

    def engine_pages(self, seq_len: int) -> int:
        skipped = seq_len // self.attention_chunk_size * self.attention_chunk_size  # ChunkedLocalAttentionManager
        return cdiv(seq_len, BLOCK_TOKENS) - skipped // BLOCK_TOKENS


@dataclass(frozen=True)
class MLALatentSpec(CacheSpec):
    """transformers 5.24's MLA cache: keys = latent (kv_lora_rank), values = rotary key, one head."""
    kind: ClassVar[str] = "mla_latent"
    kv_lora_rank: int
    qk_rope_head_dim: int
    # DSA (DeepSeek-V3.2, GLM-5): cache_utils.DynamicIndexedLayer also keeps the indexer's key, one
    # index_head_dim vector per token (`indexer_keys`), counted with the keys here
    indexer_head_dim: int = 0
    # a sliding-window MLA layer (dots3_note's "sliding_attention" layers): a DynamicSlidingWindowLayer holding
    # the latents of window - 1 tokens; 0: every token
    sliding_window: int = 0

    @property
    def cap(self) -> int | None:
        return self.sliding_window - 1 if self.sliding_window else None

    def describe(self) -> dict:
        out = super().describe()
        if not out["sliding_window"]:  # named only where set: other groups read as before
            out.pop("sliding_window")
        return out

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
        return cdiv(seq_len, BLOCK_TOKENS) * page


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
        conv = cdiv(conv_dim, tp) * (self.conv_kernel - 1)
        heads, *rest = self.recurrent_shape
        recurrent = cdiv(heads, tp) * math.prod(rest)
        return (conv + recurrent) * dtype_bytes(dtype)  # one page, mamba_ssm_cache_dtype "auto"


@dataclass(frozen=True)
class LinearAttentionStateSpec(_StateSpec):
    kind: ClassVar[str] = "linear_state"


@dataclass(frozen=True)
class ShortConvStateSpec(CacheSpec):
    """LFM2's short-conv layers (models/lfm2/modeling_lfm2.py, Lfm2ShortConv, transformers 5.25.0): a conv
    state of [hidden_size, conv_L_cache] in the model dtype (cache_utils.LinearAttentionLayer.update_conv_state
    pads the prefill to the kernel and keeps its last conv_L_cache columns), no recurrent state."""
    kind: ClassVar[str] = "conv_state"
    conv_dim: int
    conv_kernel: int
    state_dtype: str | None = None  # None: the model dtype; Inkling's convolutions keep theirs in float32

    def state_elements(self):
        return (("conv", self.conv_dim * self.conv_kernel, self.state_dtype),)

    def describe(self) -> dict:
        out = super().describe()
        if out["state_dtype"] is None:  # named only where set
            out.pop("state_dtype")
        return out

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        return cdiv(self.conv_dim, tp) * (self.conv_kernel - 1) * dtype_bytes(dtype)  # vLLM's conv state: kernel-1


@dataclass(frozen=True)
class RWKVStateSpec(CacheSpec):
    """RWKV-4's per-layer state (models/rwkv/modeling_rwkv.py, RwkvModel.forward, transformers 5.25.0): five
    [batch, hidden_size, layers] tensors, the two token shifts in the model dtype and the three WKV numerator,
    denominator and max in float32; one hidden_size slice of each per layer."""
    kind: ClassVar[str] = "rwkv_state"
    hidden_size: int

    def state_elements(self):
        return (("shifts", 2 * self.hidden_size, None), ("wkv", 3 * self.hidden_size, "float32"))

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        return 5 * cdiv(self.hidden_size, tp) * dtype_bytes(dtype)  # not a vLLM v1 spec: the state, model dtype


@dataclass(frozen=True)
class CompressedAttentionSpec(CacheSpec):
    """DeepSeek-V4's compressed attention layer (transformers 5.25.0 models/deepseek_v4/modeling_deepseek_v4.py,
    DeepseekV4HCACache and DeepseekV4CSACache): one sliding-window K=V head of head_dim (keys and values are
    one tensor, window - 1 tokens kept), and per compressor (the attention's own at head_dim; on CSA layers
    also the indexer's at indexer_head_dim) the compressed entries, one per compress_rate tokens, at its dim;
    the kv and gate buffers of the tokens since the last full window, at twice its dim where the windows
    overlap (CSA) and once otherwise (HCA); and on CSA layers, once a window has closed, the last window's
    overlap kv and gate, compress_rate x its dim each. Every token's share is counted with the keys; the
    pricing terms (k_per_token) see the sliding keys only, the compressed entries being a fraction of a
    vector per token."""
    kind: ClassVar[str] = "compressed"
    head_dim: int
    sliding_window: int
    compress_rate: int
    overlap: bool = False
    indexer_head_dim: int = 0

    @property
    def k_per_token(self) -> int:
        return self.head_dim

    @property
    def cap(self) -> int:
        return self.sliding_window - 1

    def _compressor_elements(self, seq_len: int, dim: int) -> int:
        rate = self.compress_rate
        entries, buffered = divmod(seq_len, rate)
        width = 2 * dim if self.overlap else dim
        overlap = 2 * rate * dim if self.overlap and entries else 0
        return entries * dim + 2 * buffered * width + overlap

    def k_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        elements = self.head_dim * self.tokens_held(seq_len) + self._compressor_elements(seq_len, self.head_dim)
        if self.indexer_head_dim:
            elements += self._compressor_elements(seq_len, self.indexer_head_dim)
        return batch * elements * dtype_bytes(dtype)

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        # no vLLM v1 spec is modelled for it: the transformers layout, one request
        return self.k_bytes(seq_len, 1, dtype)


@dataclass(frozen=True)
class XLSTMStateSpec(CacheSpec):
    """One mLSTM block's state (transformers 5.25.0 models/xlstm/modeling_xlstm.py, xLSTMCache): the matrix
    memory C [num_heads, qk_head_dim, v_head_dim], the normaliser n [num_heads, qk_head_dim] and the stabiliser
    m [num_heads, 1], all in the dtype of the input embeddings."""
    kind: ClassVar[str] = "xlstm_state"
    num_heads: int
    qk_head_dim: int
    v_head_dim: int

    def state_elements(self):
        h = self.num_heads
        return (("C", h * self.qk_head_dim * self.v_head_dim, None), ("n", h * self.qk_head_dim, None),
                ("m", h, None))

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        return self.state_bytes(1, dtype)  # not a vLLM v1 spec: the transformers state, one request


@dataclass(frozen=True)
class PositionHistorySpec(CacheSpec):
    """Position ids a cache keeps beside the keys: `rows` int64 values per token (transformers 5.25.0
    models/qwen4_exp/modeling_qwen4_exp.py: the 3-D positions every indexer shares, kept on the first indexed
    layer as `indexer_position_ids`). Not a per-token figure of the model dtype, so outside the pricing terms;
    no engine keeps it."""
    kind: ClassVar[str] = "positions"
    rows: int

    def k_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        return batch * self.rows * self.tokens_held(seq_len) * 8

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        return 0


@dataclass(frozen=True)
class ReformerStateSpec(CacheSpec):
    """A Reformer layer's cache (transformers 5.25.0 models/reformer/modeling_reformer.py, ReformerDynamicCache):
    every token's layer input, hidden_size values in the model dtype (counted as keys, the per-token figure),
    and on an LSH layer `bucket_ids` int64 ids per token (heads x num_hashes) once the prompt, padded to a
    multiple of `pad_multiple` when longer than `shortest_chunk`, exceeds `lsh_chunk` (shorter prompts attend
    unchunked and hash nothing). The ids are a step, not a per-token figure, so outside the pricing terms."""
    kind: ClassVar[str] = "hidden_states"
    hidden_size: int
    bucket_ids: int = 0
    lsh_chunk: int = 0
    pad_multiple: int = 1
    shortest_chunk: int = 0

    @property
    def k_per_token(self) -> int:
        return self.hidden_size

    def hashed(self, seq_len: int) -> bool:
        padded = seq_len
        if seq_len > self.shortest_chunk and seq_len % self.pad_multiple:
            padded = cdiv(seq_len, self.pad_multiple) * self.pad_multiple
        return bool(self.bucket_ids) and padded > self.lsh_chunk

    def k_bytes(self, seq_len: int, batch: int, dtype: str) -> int:
        ids = self.bucket_ids * seq_len * 8 if self.hashed(seq_len) else 0
        return batch * (self.hidden_size * seq_len * dtype_bytes(dtype) + ids)

    def engine_bytes(self, seq_len: int, dtype: str, tp: int = 1) -> int:
        return self.k_bytes(seq_len, 1, dtype)  # not a vLLM v1 spec: the transformers cache, one request


@dataclass(frozen=True)
class MambaStateSpec(_StateSpec):
    kind: ClassVar[str] = "mamba_state"


LayerCache = tuple[CacheSpec, ...]


def layer_kind(layer: LayerCache) -> str:
    return "+".join(s.kind for s in layer) or "none"

