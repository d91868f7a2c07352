"""A config.json is data from someone else: the generic reading of unknown families, the schema every field
kvreport reads is held to, bounded JSON reading, and a property test feeding random JSON to each field."""
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kvreport.runner.core import model_facts as mf
from kvreport.runner.core.model_facts import ModelFactsError, facts_from_config
from kvreport.runner.core.model_facts import config as cfg

OLMO2 = {"model_type": "olmo2", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16,
         "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 100352}
LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128}


def test_an_unknown_family_with_the_standard_fields_is_read_generically():
    f = facts_from_config(OLMO2)
    assert f.rules == "generic" and any(n.startswith("rules: generic") for n in f.notes)
    assert f.bytes_per_token("bfloat16") == 16 * 2 * 4 * 128 * 2
    assert facts_from_config(LLAMA).rules == "family"
    assert facts_from_config({**OLMO2, "model_type": "newfam-v2.1"}).rules == "generic"  # dashes, dots are fine
    with pytest.raises(ModelFactsError, match="'model_type' is 'x y<', not a model type name"):
        facts_from_config({**OLMO2, "model_type": "x y<"})


def test_the_generic_reading_follows_layer_types_windows_aliases_and_per_layer_overrides():
    raw = {"model_type": "newfam", "n_layer": 3, "n_head": 4, "d_model": 64, "sliding_window": 8,
           "layer_types": ["sliding_attention", "full_attention", "mlp"],
           "per_layer_config": {"1": {"head_dim": 32, "num_key_value_heads": 1}}}
    f = facts_from_config(raw)
    assert [mf.layer_kind(layer) for layer in f.layers] == ["sliding", "full", "none"]
    assert (f.layers[0][0].num_kv_heads, f.layers[0][0].head_dim, f.layers[0][0].cap) == (4, 16, 7)
    assert (f.layers[1][0].num_kv_heads, f.layers[1][0].head_dim) == (1, 32)
    chunked = facts_from_config({**OLMO2, "attention_chunk_size": 64})
    assert chunked.caps == (63,)


@pytest.mark.parametrize("raw,needle", [
    ({"model_type": "newfam", "hidden_size": 64, "num_attention_heads": 4}, "'num_hidden_layers' is missing"),
    ({"model_type": "newfam", "num_hidden_layers": 2, "hidden_size": 64}, "'num_attention_heads' is missing"),
    ({"model_type": "newfam", "num_hidden_layers": 2, "num_attention_heads": 4}, "'head_dim' and 'hidden_size'"),
    ({**OLMO2, "layer_types": ["mystery_attention"] * 16}, "layer type 'mystery_attention' \\(layer 0\\)"),
    ({**OLMO2, "layer_types": ["linear_attention"] * 16}, "layer 0 is 'linear_attention' but config field "
                                                           "'linear_num_key_heads' is missing"),
    ({**OLMO2, "layer_types": ["conv"] * 16}, "layer 0 is 'conv' but config field 'conv_L_cache' is missing"),
])
def test_an_unknown_family_without_them_is_refused_naming_the_field(raw, needle):
    with pytest.raises(ModelFactsError, match="x/config.json: .*" + needle):
        facts_from_config(raw, where="x/config.json")


def test_gemma4_as_transformers_saves_it_reads_per_layer_config():
    """5.24's save_pretrained writes per_layer_config, not global_head_dim: full layers take its head_dim."""
    base = {"model_type": "gemma4_text", "num_hidden_layers": 6, "num_attention_heads": 4, "hidden_size": 64,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 96, "sliding_window": 8}
    saved = {**base, "per_layer_config": {"5": {"head_dim": 48}}}
    assert facts_from_config(saved).layers[5][0].head_dim == 48
    assert facts_from_config(saved).cache_bytes(100) == facts_from_config({**base, "global_head_dim": 48}).cache_bytes(100)


# Hostile values, one field at a time: each is refused in one line naming the field (no traceback, no negative
# bytes). These are the classes an attacker tried: zero divisors, negative sizes, overflow, wrong types.
@pytest.mark.parametrize("field,value", [
    ("num_attention_heads", 0), ("head_dim", -128), ("num_hidden_layers", 1e300), ("num_hidden_layers", 10**9),
    ("num_hidden_layers", "many"), ("num_key_value_heads", 3), ("hidden_size", math.inf), ("hidden_size", math.nan),
    ("sliding_window", -1), ("vocab_size", [1]), ("layer_types", "full_attention"), ("attention_bias", "yes"),
    ("hidden_size", 2), ("per_layer_config", {"1": {"head_dim": -1}}),
])
def test_hostile_field_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ModelFactsError, match=f"x.json: config field '{field}|x.json: config field 'head_dim'"):
        facts_from_config({**LLAMA, field: value}, where="x.json")


@pytest.mark.parametrize("field,value", [("sliding_window_pattern", 0), ("full_attention_interval", 0)])
def test_zero_patterns_are_refused_before_any_division(field, value):
    mt = "gemma3_text" if field == "sliding_window_pattern" else "qwen3_next"
    with pytest.raises(ModelFactsError, match=f"config field '{field}' is 0"):
        facts_from_config({**LLAMA, "model_type": mt, field: value}, where="x.json")


def test_json_is_read_with_bounds(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ModelFactsError, match="nested deeper than"):
        cfg.read_json_file(deep)
    digits = tmp_path / "digits.json"
    digits.write_text('{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}")
    with pytest.raises(ModelFactsError, match="a number of 5000 digits"):
        cfg.read_json_file(digits)
    big = tmp_path / "big.json"
    big.write_text('{"x": "' + "a" * (cfg.MAX_CONFIG_BYTES + 10) + '"}')
    with pytest.raises(ModelFactsError, match="larger than 8 MiB"):
        cfg.read_json_file(big)


def test_transformers_special_floats_are_decoded(tmp_path):
    """configuration_utils._encode_special_floats (transformers 5.24) writes inf as {"__float__": "Infinity"}."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "time_step_limit": [0.0, {"__float__": "Infinity"}],
                                "x": {"__float__": "NaN"}, "y": {"__float__": "other"}}))
    raw = cfg.read_json_file(path)
    assert raw["time_step_limit"] == [0.0, math.inf] and math.isnan(raw["x"]) and raw["y"] == {"__float__": "other"}
    assert mf.load(str(path)).bytes_per_token() == 4 * 2 * 2 * 16 * 2


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=8)
BASES = {
    "llama": LLAMA,
    "generic": OLMO2,
    "gemma3_text": {**LLAMA, "model_type": "gemma3_text", "sliding_window": 8},
    "gemma4_text": {**LLAMA, "model_type": "gemma4_text", "sliding_window": 8, "num_kv_shared_layers": 1},
    "deepseek_v3": {**LLAMA, "model_type": "deepseek_v3", "kv_lora_rank": 16, "qk_rope_head_dim": 8},
    "qwen3_next": {**LLAMA, "model_type": "qwen3_next"},
    "nemotron_h": {**LLAMA, "model_type": "nemotron_h", "hybrid_override_pattern": "M*-E"},
    "jamba": {**LLAMA, "model_type": "jamba"},
    "llama4_text": {**LLAMA, "model_type": "llama4_text"},
}
FIELDS = sorted(set(cfg._POSITIVE) | set(cfg._NON_NEGATIVE) | set(cfg._BOOLS) | set(cfg._STRING_LISTS) |
                set(cfg._INT_LISTS) | {"hybrid_override_pattern", "index_topk_pattern", "mamba_dt_rank",
                                       "per_layer_config", "model_type", "text_config"})


@pytest.mark.slow
@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(BASES)), field=st.sampled_from(FIELDS), value=JSON_VALUES)
def test_random_json_in_any_field_gives_facts_or_one_line(base, field, value):
    """Whatever JSON value a field holds: facts whose every figure is a finite non-negative integer, or a
    ModelFactsError of one line naming the file."""
    try:
        f = facts_from_config({**BASES[base], field: value}, where="x.json")
    except ModelFactsError as exc:
        assert str(exc).startswith("x.json: ") and "\n" not in str(exc)
        return
    figures = [f.bytes_per_token(), f.cache_bytes(1000), f.cache_bytes(0), f.weight_params,
               f.engine_cache_bytes(1000, 1, "bfloat16", 2), *f.pricing_terms()[::2]]
    assert all(isinstance(x, int) and x >= 0 for x in figures), figures


def _nested(levels: int) -> dict:
    """LLAMA with one more field whose value makes the whole document `levels` deep, counted as the reader
    counts (the top object is 1, a number in it 2)."""
    value: object = 1
    for _ in range(levels - 2):
        value = [value]
    doc = {**LLAMA, "x": value}
    assert cfg._depth(doc, 10**6) == levels
    return doc


@pytest.mark.parametrize("levels", [cfg.MAX_DEPTH + 1, 900])
def test_a_config_nested_too_deep_is_one_line_naming_the_file(tmp_path, levels):
    """33 levels is past the bound yet parses; 900 is under Python's recursion limit, so json parses it too:
    only the depth check refuses either."""
    from conftest import cli_in_process, one_clear_line

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_nested(levels)))
    r = cli_in_process("models", path)
    assert r.returncode == 2
    assert f"nested deeper than {cfg.MAX_DEPTH} levels" in one_clear_line(r) and "config.json" in r.stderr
    path.write_text(json.dumps(_nested(cfg.MAX_DEPTH)))
    assert cli_in_process("models", path).returncode == 0


def test_a_sliding_window_of_0_means_no_window():
    """Qwen2-MoE's __post_init__ writes sliding_window 0 when use_sliding_window is off (transformers 5.25.0
    models/qwen2_moe/configuration_qwen2_moe.py): every layer is then full attention."""
    facts = facts_from_config({**OLMO2, "sliding_window": 0})
    assert {layer[0].kind for layer in facts.layers} == {"full"}
    assert facts.cache_bytes(100, 1, "float32") == facts_from_config(OLMO2).cache_bytes(100, 1, "float32")


HYBRIDS = {
    "zamba2": ({"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
                "num_key_value_heads": 4, "vocab_size": 100, "intermediate_size": 128},
               "layers_block_type", ["linear_attention", "hybrid"]),
    "bamba": ({"model_type": "bamba", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
               "num_key_value_heads": 4, "vocab_size": 100, "intermediate_size": 128},
              "layer_types", ["mamba", "attention"]),
}


@pytest.mark.parametrize("family", sorted(HYBRIDS))
def test_a_hybrid_layer_list_is_read_or_refused_naming_its_field(family):
    base, field, (state_layer, attention_layer) = HYBRIDS[family]
    good = facts_from_config({**base, field: [state_layer, attention_layer, state_layer, state_layer]})
    assert good.bytes_per_token() > 0
    for bad, says in (([state_layer, "weird", state_layer, state_layer], "has 'weird'"),
                      ([state_layer], "shorter than num_hidden_layers")):
        with pytest.raises(ModelFactsError) as exc:
            facts_from_config({**base, field: bad}, where="x.json")
        assert str(exc.value).startswith(f"x.json: config field '{field}'") and says in str(exc.value)
