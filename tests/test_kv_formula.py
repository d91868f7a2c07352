"""The analytic formula: expected values from the issue, GQA, explicit head_dim, sliding windows."""
import pytest

from kvreport.runner.core.kv_formula import kv_shape
from kvreport.runner.measure.models import BUILTIN, builtin_config

EXPECTED_16BIT = {
    "gpt2": 36_864,
    "gpt2-medium": 98_304,
    "llama-2-7b": 524_288,
    "llama-3.1-8b": 131_072,
    "qwen2.5-0.5b": 12_288,
}


@pytest.mark.parametrize("name,expected", sorted(EXPECTED_16BIT.items()))
def test_formula_matches_published_values(name, expected):
    assert kv_shape(builtin_config(name)).bytes_per_token(2) == expected


def test_gqa_uses_kv_heads_not_attention_heads():
    shape = kv_shape(builtin_config("llama-3.1-8b"))
    assert (shape.n_heads, shape.n_kv_heads) == (32, 8)
    # The seed's formula (n_heads) would say 4x more for a GQA model.
    assert shape.bytes_per_token(2) * 4 == 2 * 32 * 32 * 128 * 2


def test_explicit_head_dim_wins_over_hidden_over_heads():
    from transformers import LlamaConfig

    cfg = LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                      num_hidden_layers=3, intermediate_size=64, vocab_size=32)
    assert kv_shape(cfg).head_dim == 32
    assert kv_shape(cfg).bytes_per_token(2) == 2 * 3 * 2 * 32 * 2


def test_qwen_sliding_window_switched_off_is_ignored():
    assert not kv_shape(builtin_config("qwen2.5-7b")).has_sliding_window


def test_sliding_window_cap_matches_what_transformers_keeps():
    """Mistral-style window of 8: the cache really keeps min(seq, window - 1) tokens once seq >= window."""
    import torch
    from transformers import AutoModelForCausalLM, MistralConfig

    from kvreport.runner.measure.kv_cache import cache_bytes, forward_with_cache

    cfg = MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, vocab_size=64, sliding_window=8)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    shape = kv_shape(cfg)
    for seq in (4, 7, 8, 9, 20):
        with torch.no_grad():
            _, cache = forward_with_cache(model, torch.randint(0, 64, (1, seq)))
        assert cache_bytes(cache) == shape.cache_bytes(seq, 1, 4), seq


def test_every_builtin_architecture_has_a_formula():
    for name in BUILTIN:
        assert kv_shape(builtin_config(name)).bytes_per_token(2) > 0


def test_fits_rows_are_formula_rows_for_every_gpu_tp_and_length():
    """kv_fits_formula's rows (written by the crossover experiment): analytic, one per GPU size x TP x length,
    transformers' layout from model_facts (llama-3.1-8b: 32 layers x K and V x 8 KV heads x 128 x 2 bytes)."""
    from kvreport.runner.core import model_facts
    from kvreport.runner.core.kv_formula import fits_rows

    facts = model_facts.load("llama-3.1-8b")
    rows = fits_rows("llama-3.1-8b", facts, "bfloat16")
    assert len(rows) == 4 * 4 * 3 and {r["source"] for r in rows} == {"formula"}
    row = next(r for r in rows if (r["gpu_gb"], r["tp"], r["seq_len"]) == (80, 1, 4096))
    assert row["cache_bytes_per_request"] == 32 * 2 * 8 * 128 * 2 * 4096
    budget = int(0.9 * 80e9) - row["weight_bytes"]
    assert row["requests_transformers"] == budget // row["cache_bytes_per_request"]
