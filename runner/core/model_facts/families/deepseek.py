"""MLA families: DeepSeek-V2/V3, Kimi-K2, DeepSeek-V3.2 and GLM-5 (DSA indexer keys)."""
from __future__ import annotations

from ..specs import MLALatentSpec, MLAPerHeadSpec
from ..config import ConfigReader, Built
from ..params import mlp_params, experts_params, embed_params


# Which MLA layout each transformers release caches, read (not measured) in each wheel's
# models/deepseek_v3/modeling_deepseek_v3.py and deepseek_v2: DeepseekV3Attention.forward calls
# `update(key_states, value_states, ...)` with per-head K/V, or `update(kv_nope, k_rot, ...)` with the latent.
# Only versions whose source was read are listed; for any other, the measurement decides.
MLA_LAYOUT_BY_TRANSFORMERS = {
    "4.57.6": "mla_per_head", "5.0.0": "mla_per_head", "5.5.4": "mla_per_head", "5.10.4": "mla_per_head",
    "5.14.1": "mla_per_head", "5.15.1": "mla_latent", "5.16.1": "mla_latent", "5.17.0": "mla_latent",
    "5.24.0": "mla_latent",
}


# Families whose attention changed layout in other releases than DeepSeek-V3's, each release read in its
# models/<family>/modeling_<family>.py: 5.17.0 updates the cache with the decompressed per-head K/V
# (`past_key_values.update(key_states, value_states, self.layer_idx)`: deepseek_v32 line 460, glm_moe_dsa 428,
# axk2 623, hy_v4 457), 5.25.0 with the latent (`cache.update(k_pass, k_rot, ...)`: 414, 383, 593, 418).
# The indexer keys are cached beside either layout.
MLA_LAYOUT_BY_FAMILY = {mt: {"5.17.0": "mla_per_head", "5.25.0": "mla_latent"}
                        for mt in ("deepseek_v32", "glm_moe_dsa", "axk2", "hy_v4")}


def mla_layout_read_for(transformers_version: str, model_type: str | None = None) -> str | None:
    """The MLA layout seen in that release's source (for `model_type` where its family's layout changed in other
    releases than DeepSeek-V3's), or None where it was not read (measure it)."""
    if model_type in MLA_LAYOUT_BY_FAMILY:
        return MLA_LAYOUT_BY_FAMILY[model_type].get(transformers_version)
    return MLA_LAYOUT_BY_TRANSFORMERS.get(transformers_version)

def indexer_layers(c: ConfigReader, n_layers: int) -> list[bool]:
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


def deepseek(c: ConfigReader) -> Built:
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
    indexed = indexer_layers(c, n_layers)
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
    # wq_b, wk, k_norm, weights
    indexer = (q_rank or 0) * idx_heads * idx_dim + h * idx_dim + 2 * idx_dim + h * idx_heads
    first_dense = c.opt("first_k_dense_replace", 3 if v3 else 0)
    dense = c.maybe("mlp_layer_types")
    dense = [t == "dense" for t in dense] if isinstance(dense, list) else [i < first_dense for i in range(n_layers)]
    e = c.opt("n_routed_experts", 256 if v3 else 64)
    moe_inter = c.opt("moe_intermediate_size", 2048 if v3 else 1407)
    shared = c.opt("n_shared_experts", 1 if v3 else 2)
    inter = c.req("intermediate_size")
    params = embed_params(c, c.req("vocab_size"), h, False) + h
    for i in range(n_layers):
        params += attn + 2 * h + (indexer if indexed[i] else 0)
        if dense[i]:
            params += mlp_params(h, inter)
        else:  # router, routed experts, shared experts as one MLP (V3's router bias is a buffer, not counted)
            params += h * e + experts_params(h, e, moe_inter) + mlp_params(h, moe_inter * shared)
    notes = []
    if c.raw.get("num_nextn_predict_layers"):
        notes.append(f"weights exclude the {c.raw['num_nextn_predict_layers']} multi-token-prediction layer(s) "
                     "transformers does not build")
    return Built(latent_layers, params, notes, mla_per_head=per_head_layers)

