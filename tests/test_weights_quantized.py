"""Weights as a compressed-tensors checkpoint stores them: the quantized group read from config_groups and the
ignore list, every expected figure worked out here from the config's own numbers by the rule the engine
module states (values at num_bits, one model-dtype scale per group, zero points only when asymmetric)."""
import copy
import json

import pytest

from kvreport.runner.core import engine
from kvreport.runner.core.model_facts import load
from conftest import cli_in_process

BF16 = 2


def kimi(quant=None):
    """kimi-k2.5's facts and raw config, its quantization_config replaced by `quant` when given."""
    target, raw = engine.resolve("kimi-k2.5")
    raw = copy.deepcopy(raw)
    if quant is not None:
        raw["text_config"]["quantization_config"] = quant
    return load(target), raw


def quant_config(raw):
    return copy.deepcopy(raw["text_config"]["quantization_config"])


def routed_experts(text):
    moe_layers = text["num_hidden_layers"] - text["first_k_dense_replace"]
    return moe_layers * text["n_routed_experts"] * 3 * text["hidden_size"] * text["moe_intermediate_size"]


def test_kimi_int4_routed_experts_and_everything_else_at_bf16():
    facts, raw = kimi()
    text, q = raw["text_config"], raw["text_config"]["quantization_config"]
    args = q["config_groups"]["group_0"]["weights"]
    bits_per_param = args["num_bits"] + 8 * BF16 / args["group_size"]  # symmetric: no zero points stored
    experts = routed_experts(text)
    expected = int(experts * bits_per_param / 8) + (facts.weight_params - experts) * BF16
    w = engine.weights(facts, raw)
    assert w.bytes_total == expected and w.stored_as == "int4"
    assert "routed experts" in w.basis and "scale per 32" in w.basis
    assert w.bytes_total < 0.3 * facts.weight_bytes("bfloat16")
    fit = engine.fits(facts, raw, engine.PROFILES["0.34.0"], engine.gpu_bytes("h200"), [32768], tp=8,
                      gpu_name="h200")
    assert fit["weights_stored_as"] == "int4" and fit["requests"]["32768"]["requests"] > 0


def test_asymmetric_stores_zero_points_and_lm_head_counts_when_not_ignored():
    facts, raw = kimi()
    q = quant_config(raw)
    q["config_groups"]["group_0"]["weights"]["symmetric"] = False
    q["ignore"] = [p for p in q["ignore"] if p != "lm_head"]
    text = raw["text_config"]
    quantized = routed_experts(text) + text["vocab_size"] * text["hidden_size"]
    per = 4 + (8 * BF16 + 4) / 32
    w = engine.weights(facts, kimi(q)[1])
    assert w.bytes_total == int(quantized * per / 8) + (facts.weight_params - quantized) * BF16
    assert "zero point" in w.basis and "lm_head" in w.basis


def test_float8_weights_and_every_linear_quantized():
    facts, raw = kimi()
    q = quant_config(raw)
    q["config_groups"]["group_0"]["weights"] = {"num_bits": 8, "type": "float", "strategy": "channel"}
    q["ignore"] = ["lm_head"]
    text = raw["text_config"]
    embed_and_head = 2 * text["vocab_size"] * text["hidden_size"]
    w = engine.weights(facts, kimi(q)[1])
    assert w.stored_as == "float8"
    assert w.bytes_total == (facts.weight_params - embed_and_head) + embed_and_head * BF16


@pytest.mark.parametrize("ignore,named", [
    (["lm_head", "re:.*vision_tower.*"], "re:.*vision_tower.*"),
    (["lm_head", "re:.*self_attn.*"], "attention only"),  # attention alone: kvreport cannot count it apart
])
def test_ignore_lists_kvreport_cannot_count_fall_back_with_a_note(ignore, named):
    facts, raw = kimi()
    q = quant_config(raw)
    q["ignore"] = ignore
    w = engine.weights(facts, kimi(q)[1])
    assert w.bytes_total == facts.weight_bytes("bfloat16") and w.stored_as == "bfloat16"
    assert named in w.basis and "weights at the model dtype" in w.basis


def test_moe_layout_it_cannot_read_falls_back():
    facts, raw = kimi()
    del raw["text_config"]["first_k_dense_replace"]
    w = engine.weights(facts, raw)
    assert w.bytes_total == facts.weight_bytes("bfloat16") and "MoE layout is not read" in w.basis


def _weights_args(**over):
    args = {"num_bits": 4, "group_size": 32, "strategy": "group", "symmetric": True, "type": "int"}
    return {**args, **over}


HOSTILE = [
    _weights_args(num_bits=-4), _weights_args(num_bits="4"), _weights_args(num_bits=True),
    _weights_args(num_bits=10**9), _weights_args(num_bits=4.0), _weights_args(group_size=0),
    _weights_args(group_size=-1), _weights_args(group_size=10**12), _weights_args(group_size="32"),
    _weights_args(group_size=None), _weights_args(type="nvfp4"), _weights_args(type="float", num_bits=4),
    _weights_args(symmetric="no"), _weights_args(strategy="block"), None, [], "int4",
]


@pytest.mark.parametrize("args", HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_hostile_weight_args_fall_back_to_the_model_dtype(args):
    facts, raw = kimi()
    q = quant_config(raw)
    q["config_groups"]["group_0"]["weights"] = args
    w = engine.weights(facts, kimi(q)[1])
    assert w.bytes_total == facts.weight_bytes("bfloat16") and w.stored_as == "bfloat16"
    assert "not read" in w.basis or "expected" in w.basis


@pytest.mark.parametrize("field,value", [
    ("config_groups", []), ("config_groups", {}), ("config_groups", None), ("config_groups", "group_0"),
    ("config_groups", {"a": {"targets": ["Linear"], "weights": _weights_args()},
                       "b": {"targets": ["Linear"], "weights": _weights_args()}}),
    ("config_groups", {"group_0": {"targets": "Linear", "weights": _weights_args()}}),
    ("config_groups", {"group_0": 7}), ("ignore", "lm_head"), ("ignore", [None]), ("ignore", [["lm_head"]]),
])
def test_hostile_quantization_config_falls_back_never_raises(field, value):
    facts, raw = kimi()
    q = quant_config(raw)
    q[field] = value
    w = engine.weights(facts, kimi(q)[1])
    assert w.bytes_total == facts.weight_bytes("bfloat16") and w.stored_as == "bfloat16"
    assert "compressed-tensors" in w.basis


def test_the_cli_names_the_fallback_and_shows_no_traceback(tmp_path):
    _, raw = kimi()
    q = quant_config(raw)
    q["config_groups"]["group_0"]["weights"] = _weights_args(num_bits=-4, group_size=10**12)
    raw["text_config"]["quantization_config"] = q
    (tmp_path / "config.json").write_text(json.dumps(raw))
    done = cli_in_process("models", tmp_path / "config.json", "--json", "--gpu", "h200", "--tp", "8",
                          "--seq", "32768")
    assert done.returncode == 0 and "Traceback" not in done.stderr
    weights = json.loads(done.stdout)[0]["engine"]["weights"]
    assert weights["stored_as"] == "bfloat16" and "num_bits -4" in weights["basis"]


def test_every_catalogue_quantization_config_is_read():
    """Each catalogue entry carrying a quantization_config is stored as something other than its dtype."""
    from kvreport.runner.core.engine.capacity import text_config
    from kvreport.runner.core.model_facts.catalogue import CATALOGUE

    names = sorted(p.stem for p in CATALOGUE.glob("*.json"))
    checked = 0
    for name in names:
        target, raw = engine.resolve(name)
        text = text_config(raw)
        if not isinstance(text.get("quantization_config") or (raw or {}).get("quantization_config"), dict):
            continue
        checked += 1
        w = engine.weights(load(target), raw)
        assert w.stored_as != "bfloat16", (name, w.basis)
    assert checked >= 16
