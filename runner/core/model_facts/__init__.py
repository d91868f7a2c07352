"""What a model's KV cache holds, read from its config.json alone: no torch, no transformers, stdlib only.

Layout, as vLLM keeps its specs apart: `specs` (the cache spec of each layer kind, nothing else), `config`
(reading and checking a config the way transformers reads it), `families/` (one module per family whose
cache needs rules beyond the generic reading), `facts` (ModelFacts and facts_from_config), `catalogue`
(the published configs and built-ins). Every name importable from here before the split still is.

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
- conv_state:   LFM2's short-conv layers: a [hidden_size, conv_L_cache] conv state in the model dtype.
- rwkv_state:   RWKV-4: two hidden_size token shifts (model dtype) and three WKV vectors (float32) per layer.
- hidden_states: Reformer: no K/V; every token's layer input (hidden_size, model dtype), and on LSH layers
                int64 bucket ids once the prompt is attended in chunks (families/reformer.py).
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
gemma3 / gemma3_text, gemma4 / gemma4_text, mimo_v2_flash, gpt_oss, llama4 / llama4_text, deepseek_v2,
deepseek_v3, kimi_k2, deepseek_v32, glm_moe_dsa, qwen3_next,
qwen3_5 / qwen3_5_text, qwen3_5_moe / qwen3_5_moe_text, jamba, nemotron_h, mamba, falcon_mamba,
mamba2, falcon_h1, bamba, granitemoehybrid, zamba, zamba2, rwkv, minimax, mllama, longcat_flash, cpmant,
gpt_bigcode, gpt_neo, reformer, dory and the encoder-only families (bert, roberta ...: families/encoder.py). Any other
model_type is read generically (families/generic.py: standard fields, MLA by kv_lora_rank, indexer keys, gated
delta-net and short-conv states, KV sharing) and says so (`rules`). Each family is checked against the
installed transformers' own prefill and parameter count on tiny configs (tests/test_model_facts_transformers.py),
and every causal-LM family of the installed transformers by the census (tests/test_family_census.py).

Fields missing from a config take the default of transformers' config class (5.24), and the facts list every
default used; a field without such a default is a ModelFactsError naming it, and so is any field
outside the schema of config.py (types, ranges, finite).
"""

from __future__ import annotations

from .catalogue import CATALOGUE, builtin_names, catalogue_names, load
from .common import (BLOCK_TOKENS, DTYPE_BYTES, GPU_MEMORY_UTILIZATION, GPU_SIZES_GB, KINDS, TP_SIZES, VLLM_RULES,
                     ModelFactsError, dtype_bytes)
from .facts import ModelFacts, facts_from_config
from .families import SUPPORTED
from .families.deepseek import MLA_LAYOUT_BY_TRANSFORMERS, mla_layout_read_for
from .specs import (CacheSpec, ChunkedLocalAttentionSpec, FullAttentionSpec, LayerCache, LinearAttentionStateSpec,
                    MambaStateSpec, MLALatentSpec, MLAPerHeadSpec, SlidingWindowSpec, layer_kind)

__all__ = [
    "BLOCK_TOKENS", "CATALOGUE", "DTYPE_BYTES", "GPU_MEMORY_UTILIZATION", "GPU_SIZES_GB", "KINDS",
    "MLA_LAYOUT_BY_TRANSFORMERS", "SUPPORTED", "TP_SIZES", "VLLM_RULES", "CacheSpec", "ChunkedLocalAttentionSpec",
    "FullAttentionSpec", "LayerCache", "LinearAttentionStateSpec", "MLALatentSpec", "MLAPerHeadSpec",
    "MambaStateSpec", "ModelFacts", "ModelFactsError", "SlidingWindowSpec", "builtin_names", "catalogue_names",
    "dtype_bytes", "facts_from_config", "layer_kind", "load", "mla_layout_read_for",
]
