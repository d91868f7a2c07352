"""The cache adapter reads every cache shape transformers has returned across releases."""
from types import SimpleNamespace

import torch

from kvreport.runner.kv_cache import cache_bytes, cache_bytes_per_layer, cache_layers, cache_seq_len


def _kv(seq=5):
    return torch.zeros(2, 3, seq, 4, dtype=torch.float16), torch.ones(2, 3, seq, 4, dtype=torch.float16)


def test_transformers5_layers_api():
    cache = SimpleNamespace(layers=[SimpleNamespace(keys=k, values=v) for k, v in [_kv(), _kv()]])
    assert len(cache_layers(cache)) == 2
    assert cache_bytes(cache) == 2 * 2 * (2 * 3 * 5 * 4 * 2)


def test_transformers4_key_cache_api():
    k0, v0 = _kv(7)
    cache = SimpleNamespace(key_cache=[k0], value_cache=[v0])
    assert cache_bytes_per_layer(cache) == [(k0.numel() * 2, v0.numel() * 2)]
    assert cache_seq_len(cache) == 7


def test_legacy_tuple_cache():
    legacy = (_kv(3), _kv(3), _kv(3))
    assert len(cache_layers(legacy)) == 3
    assert cache_seq_len(legacy) == 3


def test_unfilled_layers_are_skipped():
    k, v = _kv()
    cache = SimpleNamespace(layers=[SimpleNamespace(keys=k, values=v), SimpleNamespace(keys=None, values=None)])
    assert len(cache_layers(cache)) == 1


def test_unknown_cache_type_is_a_clear_error():
    import pytest

    with pytest.raises(TypeError, match="unrecognised cache type"):
        cache_layers(object())
    with pytest.raises(ValueError, match="no cache"):
        cache_layers(None)


def test_real_model_cache_is_read():
    from kvreport.runner.kv_cache import forward_with_cache
    from kvreport.runner.models import load_model

    lm = load_model("tiny-llama-gqa", torch.device("cpu"), torch.float32)
    with torch.no_grad():
        _, cache = forward_with_cache(lm.model, torch.randint(0, 512, (2, 9)))
    # 2 layers x (K+V) x batch 2 x 2 kv heads x 9 tokens x head_dim 16 x 4 bytes
    assert cache_bytes(cache) == 2 * 2 * 2 * 2 * 9 * 16 * 4


def test_step_weight_bytes_leaves_out_an_untied_input_embedding():
    from kvreport.runner.models import load_model

    tied = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    assert tied.step_weight_bytes() == tied.weight_bytes()  # GPT-2's output layer reads the whole table
    untied = load_model("tiny-llama-gqa", torch.device("cpu"), torch.float32)
    emb = untied.model.get_input_embeddings().weight
    assert untied.step_weight_bytes() == untied.weight_bytes() - emb.numel() * 4
    assert emb.numel() == 512 * 64
