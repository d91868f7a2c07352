"""The cache adapter reads every cache shape transformers has returned across releases."""
from types import SimpleNamespace

import torch

import pytest

from kvreport.runner.measure.kv_cache import (CacheLayoutError, cache_bytes, cache_bytes_per_layer, cache_layers,
                                      cache_seq_len, read_cache, storage_bytes)


def _kv(seq=5):
    return torch.zeros(2, 3, seq, 4, dtype=torch.float16), torch.ones(2, 3, seq, 4, dtype=torch.float16)


def _dynamic_layer(k, v):
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()
    layer.update(k, v)
    return layer


def test_transformers5_layers_api():
    cache = SimpleNamespace(layers=[_dynamic_layer(k, v) for k, v in [_kv(), _kv()]])
    assert len(cache_layers(cache)) == 2
    assert cache_bytes(cache) == 2 * 2 * (2 * 3 * 5 * 4 * 2)


def test_linear_attention_states_are_counted_and_scalars_are_not():
    """A gated delta-net / Mamba layer holds conv and recurrent states (dicts of tensors), no K/V; a 0-d
    tensor (a window length, a counter) is bookkeeping."""
    from transformers.cache_utils import LinearAttentionLayer

    layer = LinearAttentionLayer()
    conv = torch.zeros(2, 24, 4, dtype=torch.bfloat16)
    rec = torch.zeros(2, 3, 8, 8, dtype=torch.float32)
    layer.update_conv_state(conv)
    layer.update_recurrent_state(rec)
    layer.some_counter = torch.tensor(7)
    (read,) = read_cache(SimpleNamespace(layers=[layer]))
    assert (read.k_bytes, read.v_bytes) == (0, 0)
    assert read.state_bytes == conv.numel() * 2 + rec.numel() * 4
    assert cache_bytes(SimpleNamespace(layers=[layer, _dynamic_layer(*_kv())])) == read.state_bytes + 2 * 240


def test_sliding_layer_counts_the_window_and_storage_counts_the_view_base():
    from transformers.cache_utils import DynamicSlidingWindowLayer

    layer = DynamicSlidingWindowLayer(sliding_window=4)
    k, v = _kv(10)
    layer.update(k, v)
    (read,) = read_cache(SimpleNamespace(layers=[layer]))
    assert read.cached_tokens == 3 and read.k_bytes == 2 * 3 * 3 * 4 * 2
    assert storage_bytes(read.tensors()) >= read.k_bytes + read.v_bytes


def test_unknown_layer_type_fails_loudly():
    class PagedThing:  # not a transformers cache layer: its bytes cannot be accounted for
        keys = torch.zeros(1, 1, 1, 1)

    with pytest.raises(CacheLayoutError, match="PagedThing"):
        cache_bytes(SimpleNamespace(layers=[_dynamic_layer(*_kv()), PagedThing()]))
    with pytest.raises(CacheLayoutError, match="PagedThing"):
        cache_layers(SimpleNamespace(layers=[PagedThing()]))


def test_mamba_hybrid_list_cache_counts_states():
    """The pre-5.x hybrid caches (HybridMambaAttentionDynamicCache): lists of K, V, conv and SSM states,
    empty tensors standing in for the layers of the other kind."""
    k, v = _kv(6)
    empty = torch.tensor([])
    conv, ssm = torch.zeros(2, 16, 4), torch.zeros(2, 16, 8)
    cache = SimpleNamespace(key_cache=[empty, k], value_cache=[empty, v], conv_states=[conv, empty],
                            ssm_states=[ssm, empty])
    layers = read_cache(cache)
    assert [x.state_bytes for x in layers] == [(conv.numel() + ssm.numel()) * 4, 0]
    assert cache_bytes(cache) == (conv.numel() + ssm.numel()) * 4 + 2 * k.numel() * 2


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
    from transformers.cache_utils import DynamicLayer

    cache = SimpleNamespace(layers=[_dynamic_layer(k, v), DynamicLayer()])
    assert len(cache_layers(cache)) == 1


def test_unknown_cache_type_is_a_clear_error():
    with pytest.raises(TypeError, match="unrecognised cache type"):
        cache_layers(object())
    with pytest.raises(ValueError, match="no cache"):
        cache_layers(None)


def test_real_model_cache_is_read():
    from kvreport.runner.measure.kv_cache import forward_with_cache
    from kvreport.runner.measure.models import load_model

    lm = load_model("tiny-llama-gqa", torch.device("cpu"), torch.float32)
    with torch.no_grad():
        _, cache = forward_with_cache(lm.model, torch.randint(0, 512, (2, 9)))
    # 2 layers x (K+V) x batch 2 x 2 kv heads x 9 tokens x head_dim 16 x 4 bytes
    assert cache_bytes(cache) == 2 * 2 * 2 * 2 * 9 * 16 * 4


def test_step_weight_bytes_leaves_out_an_untied_input_embedding():
    from kvreport.runner.measure.models import load_model

    tied = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    assert tied.step_weight_bytes() == tied.weight_bytes()  # GPT-2's output layer reads the whole table
    untied = load_model("tiny-llama-gqa", torch.device("cpu"), torch.float32)
    emb = untied.model.get_input_embeddings().weight
    assert untied.step_weight_bytes() == untied.weight_bytes() - emb.numel() * 4
    assert emb.numel() == 512 * 64
