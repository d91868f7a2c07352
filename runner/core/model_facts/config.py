"""Reading a config the way transformers reads it, and checking it first: it is data from someone else.

`read_json_file` reads a config.json with bounds (size, nesting depth, digits of a number) and decodes the
`{"__float__": "Infinity"}` objects transformers 5.24 writes for inf / -inf / NaN
(configuration_utils.PreTrainedConfig._encode_special_floats / _decode_special_floats). `check_fields` holds
every field the model facts read to a schema (type, range, finite) and says which field of which file is wrong
in one line. `ConfigReader` then reads fields as the config classes do: class defaults recorded, attribute_map
aliases followed, `per_layer_config` overrides applied per layer.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from .common import ModelFactsError
from .specs import FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec, LayerCache


class ConfigReader:
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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                value != int(value) or value < 0:
            raise ModelFactsError(f"{self.where}: config field {key!r} is {value!r}, expected a non-negative integer")
        return int(value)


# configuration_utils._LEGACY_LAYER_TYPE_REMAP (transformers 5.25.0): the names older releases wrote (5.17.0's
# "deepseek_sparse_attention", a cache_utils.DynamicIndexedLayer there as "indexed_attention" is now)
LEGACY_LAYER_TYPES = {"mamba": "linear_attention", "attention": "full_attention",
                      "deepseek_sparse_attention": "indexed_attention", "qwen_sparse_attention": "indexed_attention"}


def layer_types_from(c: ConfigReader, n_layers: int, default: list[str]) -> list[str]:
    types = c.raw.get("layer_types")
    if types is None:
        return default
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise ModelFactsError(f"{c.where}: config field 'layer_types' must be a list of strings")
    if len(types) < n_layers:
        raise ModelFactsError(f"{c.where}: config field 'layer_types' has {len(types)} entries for "
                              f"{n_layers} layers")
    return [LEGACY_LAYER_TYPES.get(t) or t for t in types[:n_layers]]


def hybrid_layer_types(c: ConfigReader, types: object, field: str, n_layers: int, allowed: set[str]) -> list[str]:
    """The first n_layers entries of a hybrid model's layer list (read from `field`), legacy names mapped;
    a missing or short list, or a type outside `allowed`, is refused naming the field."""
    mt = c.raw.get("model_type")
    if not isinstance(types, list) or len(types) < n_layers or not all(isinstance(t, str) for t in types):
        raise ModelFactsError(f"{c.where}: config field '{field}' is missing, shorter than num_hidden_layers or "
                              f"not a list of strings (model_type {mt})")
    out = [LEGACY_LAYER_TYPES.get(str(t), str(t)) for t in types[:n_layers]]
    unknown = sorted(set(out) - allowed)
    if unknown:
        raise ModelFactsError(f"{c.where}: config field '{field}' has {unknown[0]!r} (model_type {mt})")
    return out


def kv_heads(c: ConfigReader, n_heads: int, class_default: int) -> int:
    """num_key_value_heads: missing takes the class default, an explicit null means n_heads (each class's
    `if self.num_key_value_heads is None: self.num_key_value_heads = self.num_attention_heads`)."""
    if "num_key_value_heads" in c.raw and c.raw["num_key_value_heads"] is None:
        return n_heads
    return c.opt("num_key_value_heads", class_default)


def generic_layer_types(n_layers: int, sliding_window, chunk) -> list[str]:
    """cache_utils.get_layer_types_and_kwargs without `layer_types`: every layer sliding if the config has a
    sliding_window, else chunked if it has an attention_chunk_size, else full."""
    kind = "sliding_attention" if sliding_window else \
        "chunked_attention" if chunk is not None else "full_attention"
    return [kind] * n_layers


def attention_spec(c: ConfigReader, layer_type: str, n_kv: int, head_dim: int, window, chunk, **kw) -> LayerCache:
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




@dataclass
class Built:
    layers: Sequence[LayerCache]
    params: int
    notes: list[str] = field(default_factory=list)
    mla_per_head: Sequence[LayerCache] | None = None



# ---------------------------------------------------------------------------------------------- untrusted input

MAX_CONFIG_BYTES = 8 * 2**20  # published config.json files are a few KB; the largest per-layer ones ~100 KB
MAX_DEPTH = 32                # transformers' configs nest three or four levels (text_config, rope_scaling)
MAX_NUMBER_CHARS = 40         # an integer of more digits is no size any model has
MAX_LAYERS = 4096             # the deepest published decoders have ~160 layers
MAX_DIM = 2**24               # heads, head dims, widths, vocab: far above any published model
MAX_TOKENS = 2**34            # windows, chunks and context limits
_FLOAT_TAGS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}  # configuration_utils._FLOAT_TAG_VALUES


def decode_special_floats(obj):
    """transformers 5.24's _decode_special_floats: {"__float__": "Infinity"} (alone in its object) -> inf."""
    if isinstance(obj, dict):
        if set(obj) == {"__float__"} and obj["__float__"] in _FLOAT_TAGS:
            return _FLOAT_TAGS[obj["__float__"]]
        return {k: decode_special_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_special_floats(v) for v in obj]
    return obj


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} digits")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters")
    return float(text)


def _depth(obj, limit: int) -> int:
    """Nesting depth of parsed JSON, stopping at limit + 1."""
    stack, deepest = [(obj, 1)], 0
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


def parse_json_text(text: str, where: str):
    """JSON text from outside, bounded in depth and in the digits of a number, special floats decoded."""
    try:
        obj = json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except json.JSONDecodeError as exc:
        raise ModelFactsError(f"{where}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:  # from the number hooks
        raise ModelFactsError(f"{where}: not read: {exc}") from None
    except RecursionError:
        raise ModelFactsError(f"{where}: not read: JSON nested deeper than {MAX_DEPTH} levels") from None
    if _depth(obj, MAX_DEPTH) > MAX_DEPTH:
        raise ModelFactsError(f"{where}: not read: JSON nested deeper than {MAX_DEPTH} levels")
    return decode_special_floats(obj)


def read_json_file(path: Path):
    """A config.json (or catalogue entry) from disk, never more than MAX_CONFIG_BYTES read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ModelFactsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ModelFactsError(f"{path}: not read: larger than {MAX_CONFIG_BYTES // 2**20} MiB, no config is")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFactsError(f"{path}: not read: not UTF-8 text") from None
    return parse_json_text(text, str(path))


# The schema: every field the model facts read, with its type and range. Counts the cache divides by or
# multiplies with must be positive; offsets and optional widths may be 0. Null means "not given" throughout.
_POSITIVE = dict.fromkeys((
    "num_attention_heads", "n_head", "num_key_value_heads", "num_kv_heads", "head_dim", "hidden_size", "n_embd",
    "global_head_dim", "num_global_key_value_heads", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "conv_kernel", "mamba_d_conv", "mamba_d_state", "mamba_expand", "mamba_head_dim",
    "mamba_num_heads", "ssm_state_size", "n_groups", "state_size", "expand", "num_heads", "index_head_dim",
    "vocab_size", "n_inner",
    "sliding_window_pattern", "full_attention_interval", "attn_layer_period", "expert_layer_period",
    "decoder_sparse_step", "interleave_moe_layer_step", "no_rope_layer_interval", "index_topk_freq"), MAX_DIM)
_POSITIVE.update({"num_hidden_layers": MAX_LAYERS, "n_layer": MAX_LAYERS,
                  "sliding_window_size": MAX_TOKENS, "attention_chunk_size": MAX_TOKENS})
_NON_NEGATIVE = dict.fromkeys((
    "intermediate_size_mlp", "moe_intermediate_size", "shared_expert_intermediate_size",
    "moe_shared_expert_intermediate_size", "ffn_hidden_size", "moe_latent_size", "hidden_size_per_layer_input",
    "vocab_size_per_layer_input", "num_experts", "num_local_experts", "n_routed_experts", "n_shared_experts",
    "index_n_heads", "q_lora_rank", "qk_nope_head_dim", "num_ln_in_parallel_attn", "num_nextn_predict_layers",
    "first_k_dense_replace", "attn_layer_offset", "expert_layer_offset", "index_skip_topk_offset",
    "max_window_layers", "num_kv_shared_layers"), MAX_DIM)
# sliding_window 0: no window (Qwen2-MoE's __post_init__ writes 0 when use_sliding_window is off)
_NON_NEGATIVE.update({"max_position_embeddings": MAX_TOKENS, "n_positions": MAX_TOKENS, "sliding_window": MAX_TOKENS})
_BOOLS = ("attention_bias", "bias", "mlp_bias", "multi_query", "new_decoder_architecture", "parallel_attn",
          "use_sliding_window", "attention_k_eq_v", "enable_moe_block", "use_double_wide_mlp", "mamba_conv_bias",
          "mamba_proj_bias", "use_conv_bias", "tie_word_embeddings", "use_bias")
_STRING_LISTS = ("layer_types", "layers_block_type", "mlp_layer_types", "indexer_types")
_INT_LISTS = ("no_rope_layers", "moe_layers", "mlp_only_layers")


def _bad(where: str, key: str, value, expected: str) -> ModelFactsError:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return ModelFactsError(f"{where}: config field {key!r} is {shown}, expected {expected}")


def _is_int(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int) and not isinstance(value, bool) or \
        isinstance(value, float) and math.isfinite(value) and value == int(value)


def check_fields(raw: dict, where: str) -> None:
    """Hold every field kvreport reads to the schema above; the first wrong one is a ModelFactsError naming
    the field and the file. Fields kvreport does not read are left alone (transformers reads them)."""
    for key, value in raw.items():
        if value is None:
            continue
        limits = (1, _POSITIVE[key]) if key in _POSITIVE else (0, _NON_NEGATIVE[key]) if key in _NON_NEGATIVE \
            else None
        if limits is not None:
            low, high = limits
            if not _is_int(value) or not low <= value <= high:
                raise _bad(where, key, value, f"an integer from {low} to {high:,}")
        elif key in _BOOLS and not (isinstance(value, bool) or value in (0, 1)):
            raise _bad(where, key, value, "true or false")
        elif key in _STRING_LISTS and (not isinstance(value, list) or len(value) > MAX_LAYERS
                                       or not all(isinstance(v, str) for v in value)):
            raise _bad(where, key, value, f"a list of at most {MAX_LAYERS} strings")
        elif key in _INT_LISTS and (not isinstance(value, list) or len(value) > MAX_LAYERS
                                    or not all(_is_int(v) and 0 <= v <= MAX_DIM for v in value)):
            raise _bad(where, key, value, f"a list of at most {MAX_LAYERS} non-negative integers")
        elif key == "intermediate_size" and not (
                _is_int(value) and 0 <= value <= MAX_DIM or isinstance(value, list) and len(value) <= MAX_LAYERS
                and all(_is_int(v) and 0 <= v <= MAX_DIM for v in value)):  # one per layer in some configs
            raise _bad(where, key, value, f"an integer from 0 to {MAX_DIM:,} or a list of them, one per layer")
        elif key == "hybrid_override_pattern" and (not isinstance(value, str) or len(value) > MAX_LAYERS):
            raise _bad(where, key, value, f"a string of at most {MAX_LAYERS} characters")
        elif key == "index_topk_pattern" and not (isinstance(value, (str, list)) and len(value) <= MAX_LAYERS):
            raise _bad(where, key, value, f"a string or list of at most {MAX_LAYERS} entries")
        elif (key in ("mamba_dt_rank", "time_step_rank") and value != "auto"
              and not (_is_int(value) and 1 <= value <= MAX_DIM)):
            raise _bad(where, key, value, f'"auto" or an integer from 1 to {MAX_DIM:,}')
        elif key == "per_layer_config" and not (isinstance(value, dict) and len(value) <= MAX_LAYERS and
                                                all(isinstance(v, dict) for v in value.values())):
            raise _bad(where, key, value, "an object of layer index -> object of fields")
    for overrides in (raw.get("per_layer_config") or {}).values():
        check_fields(overrides, where)
    heads, kv = raw.get("num_attention_heads"), raw.get("num_key_value_heads")
    if _is_int(heads) and _is_int(kv) and heads % kv and raw.get("model_type") != "falcon":
        raise ModelFactsError(f"{where}: config field 'num_key_value_heads' is {kv}, which does not divide "
                              f"num_attention_heads ({heads}): each KV head must serve a whole group of heads")
    hidden = raw.get("hidden_size")
    if raw.get("head_dim") is None and _is_int(heads) and _is_int(hidden) and hidden < heads:
        raise ModelFactsError(f"{where}: config field 'hidden_size' is {hidden}, fewer than num_attention_heads "
                              f"({heads}) and no head_dim: each head would be 0 wide")
