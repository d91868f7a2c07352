"""The generic reading: a model_type without family rules, read from the fields every transformers config
uses, the way transformers' own cache reads them (cache_utils.get_layer_types_and_kwargs and
DynamicCache(config=...) in transformers 5.24):

- layers: num_hidden_layers; heads: num_attention_heads; KV heads: num_key_value_heads (null or missing: the
  attention heads, each config class's `if num_key_value_heads is None` rule); head_dim, else
  hidden_size // num_attention_heads (every attention module's `getattr(config, "head_dim", ...)`);
- layer kinds: `layer_types` when given, else sliding if `sliding_window` is set, else chunked if
  `attention_chunk_size` is set, else full; "moe", "mlp" and "dummy" layers hold nothing;
- `per_layer_config` ({"5": {"head_dim": 48}}) overrides fields for one layer (configuration_utils'
  HeterogeneousConfigMixin);
- the attribute_map aliases transformers' config classes declare (n_layer, n_head, d_model, kv_channels...).

- MLA where the config has kv_lora_rank (DeepSeek-V2's fields: the latent and the rotary key, one head);
- "indexed_attention" layers (cache_utils.DynamicIndexedLayer) add one index_head_dim indexer key per token;
- "linear_attention" layers with Qwen3-Next's gated delta-net fields (linear_num_key_heads ...);
- "conv" layers: LFM2's short conv, a [hidden_size, conv_L_cache] state;
- num_kv_shared_layers: the last layers reuse an earlier layer's cache and hold none (Gemma 3n);
- sliding_window 0 means no window; intermediate_size may be one per layer (weights only).

A layer kind it does not know (a Mamba or conv state) is refused naming it, never guessed.
Weights are counted as a Llama-shaped decoder (gated MLP of intermediate_size), and the facts say so.
"""
from __future__ import annotations

from ..common import ModelFactsError
from ..config import Built, ConfigReader, attention_spec, generic_layer_types, layer_types_from
from ..params import attn_params, embed_params, mlp_params
from ..specs import LayerCache, LinearAttentionStateSpec, MLALatentSpec, MLAPerHeadSpec, ShortConvStateSpec

# attribute_map aliases of transformers 5.24's causal-LM config classes (each class's `attribute_map`,
# collected over transformers.models.auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES): the name a
# config.json may store a standard field under.
ALIASES = {
    "num_hidden_layers": ("n_layer", "n_layers", "num_layers", "decoder_layers"),
    # (not "num_heads": Mamba-2 configs store their SSM heads under it)
    "num_attention_heads": ("n_head", "n_heads", "attention_heads", "decoder_attention_heads"),
    "hidden_size": ("n_embd", "d_model", "emb_dim"),
    "head_dim": ("kv_channels", "attention_head_dim"),
    "sliding_window": ("sliding_window_size", "attention_window_size"),
    "layer_types": ("layers_block_type",),
    "intermediate_size": ("ffn_hidden_size",),
    "vocab_size": ("n_words", "n_token"),
}
CACHE_LESS = ("moe", "mlp", "dummy")


def _field(c: ConfigReader, key: str, overrides: dict):
    for k in (key, *ALIASES.get(key, ())):
        if overrides.get(k) is not None:
            return overrides[k], k
    for k in (key, *ALIASES.get(key, ())):
        if c.raw.get(k) is not None:
            return c.raw[k], k
    return None, key


def _int_field(c: ConfigReader, key: str, overrides: dict | None = None):
    value, name = _field(c, key, overrides or {})
    return None if value is None else c._int(name, value)


def _list_or_int(c: ConfigReader, key: str, i: int):
    """A field that may be one integer or one per layer (intermediate_size of a heterogeneous config)."""
    value, name = _field(c, key, {})
    if isinstance(value, list):
        value = value[i] if i < len(value) else None
    return None if value is None else c._int(name, value)


def _linear_state(c: ConfigReader, i: int) -> LayerCache:
    """A gated delta-net layer read from Qwen3-Next's field names (linear_num_key_heads ...): conv state over
    q, k and v, recurrent state [v_heads, k_head_dim, v_head_dim] in float32 (see specs.LinearAttentionStateSpec).
    Kimi Delta Attention's fields (linear_num_heads, linear_head_dim) read as its module builds them."""
    if c.raw.get("linear_num_heads") is not None and c.raw.get("linear_num_key_heads") is None:
        return _kimi_delta_state(c, i)
    need = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
            "linear_conv_kernel_dim")
    missing = [k for k in need if c.raw.get(k) is None]
    if missing:
        raise ModelFactsError(f"{c.where}: layer {i} is 'linear_attention' but config field {missing[0]!r} is "
                              f"missing (model_type {c.model_type}, read generically: no family rules)")
    k_heads, v_heads, k_dim, v_dim, kernel = (c._int(k, c.raw[k]) for k in need)
    conv_dim = 2 * k_heads * k_dim + v_heads * v_dim
    return (LinearAttentionStateSpec(conv_dim, kernel, (v_heads, k_dim, v_dim)),)


def _kimi_delta_state(c: ConfigReader, i: int) -> LayerCache:
    """A Kimi Delta Attention layer (transformers 5.25.0 models/kimi_linear/modeling_kimi_linear.py,
    KimiLinearDeltaAttention; models/bailing_hybrid/modeling_bailing_hybrid.py, BailingHybridDeltaAttention):
    one depthwise conv over q, k and v of linear_num_heads * linear_head_dim each (conv_dim = 3 * qkv_dim,
    kernel linear_conv_kernel_dim), and a recurrent state [linear_num_heads, linear_head_dim, linear_head_dim]
    that the chunked kernel computes in float32."""
    need = ("linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim")
    missing = [k for k in need if c.raw.get(k) is None]
    if missing:
        raise ModelFactsError(f"{c.where}: layer {i} is 'linear_attention' but config field {missing[0]!r} is "
                              f"missing (model_type {c.model_type}, read generically: no family rules)")
    heads, head_dim, kernel = (c._int(k, c.raw[k]) for k in need)
    return (LinearAttentionStateSpec(3 * heads * head_dim, kernel, (heads, head_dim, head_dim)),)


def _short_conv(c: ConfigReader, i: int, h: int | None) -> LayerCache:
    """An LFM2 short-conv layer ("conv"): a [hidden_size, conv_L_cache] conv state (specs.ShortConvStateSpec)."""
    kernel = c.raw.get("conv_L_cache")
    if kernel is None or h is None:
        raise ModelFactsError(f"{c.where}: layer {i} is 'conv' but config field "
                              f"{'conv_L_cache' if kernel is None else 'hidden_size'!r} is missing "
                              f"(model_type {c.model_type}, read generically)")
    return (ShortConvStateSpec(h, c._int("conv_L_cache", kernel)),)


def _mla(c: ConfigReader, n_heads: int, indexer: int, over: dict, window: int = 0) -> tuple[LayerCache, LayerCache]:
    """An MLA layer (a config with kv_lora_rank, DeepSeek-V2's fields): the latent layout and the per-head one.
    `over`: the layer's per_layer_config; `window`: a sliding layer's window (transformers 5.25.0
    models/dots3_note/modeling_dots3_note.py: Dots3NoteTextAttention reads its sizes from per_layer_config and
    caches its latents in the layer's sliding or indexed cache layer)."""
    rank, rope = _int_field(c, "kv_lora_rank", over), _int_field(c, "qk_rope_head_dim", over)
    nope, v_dim = _int_field(c, "qk_nope_head_dim", over), _int_field(c, "v_head_dim", over)
    if rope is None:
        raise ModelFactsError(f"{c.where}: config field 'qk_rope_head_dim' is missing beside kv_lora_rank "
                              f"(model_type {c.model_type}, read generically)")
    per_head = MLAPerHeadSpec(n_heads, (nope or 0) + rope, v_dim or 0, rank, rope, indexer)
    return (MLALatentSpec(rank or 0, rope, indexer, window),), (per_head,)


def generic(c: ConfigReader) -> Built:
    n_layers = _int_field(c, "num_hidden_layers")
    if n_layers is None:
        raise ModelFactsError(f"{c.where}: config field 'num_hidden_layers' is missing (model_type "
                              f"{c.model_type}, read generically: no family rules)")
    per_layer = c.raw.get("per_layer_config") or {}
    types, _ = _field(c, "layer_types", {})
    if types is not None:
        types = layer_types_from(ConfigReader({"layer_types": types}, c.where, c.model_type), n_layers, [])
    else:
        window, chunk = _field(c, "sliding_window", {})[0], c.raw.get("attention_chunk_size")
        types = generic_layer_types(n_layers, window, chunk)
    # KV sharing (Gemma 3n): the last num_kv_shared_layers reuse an earlier layer's cache and hold none
    # (configuration_gemma3n.Gemma3nTextConfig.kv_sharing_modes -> "reuse" -> cache_utils.DummyLayer)
    first_shared = n_layers - (_int_field(c, "num_kv_shared_layers") or 0)
    mla = c.raw.get("kv_lora_rank") is not None
    # indexer_types: a "shared" layer reuses the previous layer's top-k and runs no indexer, so caches no
    # indexer key (transformers 5.25.0 models/hy_v4/modeling_hy_v4.py: `self.indexer = None if self.skip_topk`)
    index_types = c.raw.get("indexer_types")
    layers: list[LayerCache] = []
    per_head_layers: list[LayerCache] = []
    params = 0
    h = _int_field(c, "hidden_size")
    for i, layer_type in enumerate(types):
        over = per_layer.get(str(i)) or per_layer.get(i) or {}
        if layer_type in CACHE_LESS or i >= first_shared:
            layers.append(())
            per_head_layers.append(())
            continue
        if layer_type in ("linear_attention", "conv"):
            layers.append(_linear_state(c, i) if layer_type == "linear_attention" else _short_conv(c, i, h))
            per_head_layers.append(layers[-1])
            continue
        indexed = layer_type == "indexed_attention"
        if layer_type not in ("full_attention", "sliding_attention", "chunked_attention", "indexed_attention"):
            raise ModelFactsError(f"{c.where}: layer type {layer_type!r} (layer {i}) is not one the generic "
                                  f"reading knows, and model_type {c.model_type} has no family rules")
        n_heads = _int_field(c, "num_attention_heads", over)
        if n_heads is None:
            raise ModelFactsError(f"{c.where}: config field 'num_attention_heads' is missing (model_type "
                                  f"{c.model_type}, read generically: no family rules)")
        indexer = 0
        if indexed and not (isinstance(index_types, list) and i < len(index_types) and index_types[i] == "shared"):
            indexer = _int_field(c, "index_head_dim", over) or 0
            if not indexer:
                raise ModelFactsError(f"{c.where}: layer {i} is 'indexed_attention' but config field "
                                      f"'index_head_dim' is missing (model_type {c.model_type})")
        if mla:
            window = (_int_field(c, "sliding_window", over) or 0) if layer_type == "sliding_attention" else 0
            latent, per_head = _mla(c, n_heads, indexer, over, window)
            layers.append(latent)
            per_head_layers.append(per_head)
            continue
        n_kv = _int_field(c, "num_key_value_heads", over)
        if n_kv is None:
            n_kv = n_heads
            c.defaults_used.append("num_key_value_heads=num_attention_heads")
        head_dim = _int_field(c, "head_dim", over)
        if head_dim is None:
            if h is None:
                raise ModelFactsError(f"{c.where}: config fields 'head_dim' and 'hidden_size' are both missing "
                                      f"(model_type {c.model_type}, read generically)")
            head_dim = h // n_heads
        window = _int_field(c, "sliding_window", over)
        chunk = _int_field(c, "attention_chunk_size", over)
        kind = "full_attention" if indexed else layer_type
        extra = {"indexer_head_dim": indexer} if indexer else {}
        layers.append(attention_spec(c, kind, n_kv, head_dim, window, chunk, **extra))
        per_head_layers.append(layers[-1])
        if h is not None:
            params += attn_params(h, n_heads, n_kv, head_dim) + 2 * h
    vocab = _int_field(c, "vocab_size")
    notes = [f"rules: generic (model_type {c.model_type} has no family rules; read from the standard fields "
             "as transformers' cache reads them)"]
    inters = [_list_or_int(c, "intermediate_size", i) for i in range(n_layers)]
    if h is not None and all(x is not None for x in inters):
        params += sum(mlp_params(h, x) for x in inters if x is not None)
    if h is not None and vocab is not None:
        params += embed_params(c, vocab, h, False) + h
    notes.append("weights: counted as a Llama-shaped decoder (attention, gated MLP, embeddings), analytic"
                 + ("" if h and all(x is not None for x in inters) and vocab else
                    "; fields missing for part of it, so an undercount"))
    return Built(layers, params, notes, mla_per_head=per_head_layers if mla else None)
