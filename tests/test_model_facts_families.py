"""Family rules for the cache kinds the census found unmodelled: constructed configs, expected bytes worked out by
hand from the transformers 5.25.0 layouts each family module cites (float32, one sequence)."""
import pytest

from kvreport.runner.core.model_facts import ModelFactsError, facts_from_config

F32 = "float32"


def facts(**raw):
    return facts_from_config(raw, name=raw["model_type"])


def kinds(f):
    return ["+".join(s.kind for s in layer) or "none" for layer in f.layers]


def test_kimi_linear_reads_its_checkpoint_sub_config_with_one_indexed_layers():
    f = facts(model_type="kimi_linear", num_hidden_layers=4, hidden_size=32, num_attention_heads=2, vocab_size=10,
              intermediate_size=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
              linear_attn_config={"full_attn_layers": [4], "kda_layers": [1, 2, 3], "head_dim": 8, "num_heads": 2,
                                  "short_conv_kernel_size": 4})
    assert kinds(f) == ["linear_state"] * 3 + ["mla_latent"]
    # KDA: conv 3 x 2 heads x 8 x kernel 4 = 192, recurrent 2 x 8 x 8 = 128; MLA: (16 + 8) x 10 tokens
    assert f.cache_bytes(10, 1, F32) == (3 * (192 + 128) + 24 * 10) * 4


def test_bailing_hybrid_closes_each_group_with_a_full_layer():
    f = facts(model_type="bailing_hybrid", num_hidden_layers=6, layer_group_size=3, hidden_size=32, vocab_size=10,
              num_attention_heads=2, head_dim=8, kv_lora_rank=16, qk_rope_head_dim=8, intermediate_size=32)
    assert kinds(f) == ["linear_state", "linear_state", "mla_latent"] * 2


def test_deepseek_v4_legacy_compress_ratios_and_rates():
    f = facts(model_type="deepseek_v4", num_hidden_layers=3, hidden_size=32, vocab_size=10, head_dim=8,
              sliding_window=4, index_head_dim=4, compress_ratios=[0, 4, 128], compress_rate_csa=2)
    assert kinds(f) == ["sliding", "compressed", "compressed"]
    sliding = 2 * 8 * 3                            # K and V apart, window - 1 tokens
    csa = 8 * 3 + (2 * 8 + 2 * 1 * 16 + 2 * 2 * 8) + (2 * 4 + 2 * 1 * 8 + 2 * 2 * 4)  # 5 tokens: 2 entries, 1 buffered
    hca = 8 * 3 + 2 * 5 * 8                        # rate 128: all 5 tokens buffered
    assert f.cache_bytes(5, 1, F32) == (sliding + csa + hca) * 4


def test_dbrx_kv_heads_come_from_attn_config():
    base = dict(model_type="dbrx", n_heads=8, d_model=64, n_layers=2, vocab_size=10, num_key_value_heads=8)
    assert facts(**base, attn_config={"kv_n_heads": 2}).bytes_per_token(F32) == 2 * 2 * 2 * 8 * 4
    assert facts(**base).bytes_per_token(F32) == 2 * 2 * 1 * 8 * 4  # DbrxAttentionConfig's default: one KV head


def test_xlstm_rounds_widths_up_to_64():
    f = facts(model_type="xlstm", num_blocks=3, hidden_size=96, num_heads=2, vocab_size=10)
    # qk 48 -> 64 (32 a head), v 96 -> 128 (64 a head): C + n + m per block
    assert f.cache_bytes(7, 1, F32) == 3 * (2 * 32 * 64 + 2 * 32 + 2) * 4


def test_kolibri_layers_that_reuse_kv_hold_none():
    f = facts(model_type="kolibri1_1", num_hidden_layers=10, hidden_size=32, vocab_size=10, num_key_value_heads=2,
              head_dim=4, sliding_window=3)
    assert f.layers[9] == () and kinds(f)[4] == "full"  # layer 9 reads layer 4's K/V (default sources)
    assert f.cache_bytes(6, 1, F32) == (8 * 2 * 8 * 2 + 2 * 8 * 6) * 4


def test_inkling2_loop_caches_the_looped_layers_once_per_pass():
    f = facts(model_type="inkling2_loop_text", num_hidden_layers=3, hidden_size=16, layer_types=["hybrid"] * 3,
              loop_config={"core_start": 1, "core_end": 2, "num_passes": 3})
    assert len(f.layers) == 5 and kinds(f)[0] == "full+conv_state+conv_state"


def test_zaya_sliding_layers_need_a_window():
    raw = dict(model_type="zaya", num_hidden_layers=2, layer_types=["hybrid_sliding", "hybrid"])
    with pytest.raises(ModelFactsError, match="sliding_window"):
        facts(**raw)
    assert kinds(facts(**raw, sliding_window=4)) == ["sliding+linear_state", "full+linear_state"]


def test_mla_layers_take_per_layer_sizes_and_windows():
    f = facts(model_type="some_mla", num_hidden_layers=2, hidden_size=32, num_attention_heads=2, kv_lora_rank=16,
              qk_rope_head_dim=8, index_head_dim=4, sliding_window=4,
              layer_types=["indexed_attention", "sliding_attention"], per_layer_config={"1": {"kv_lora_rank": 32}})
    assert f.cache_bytes(10, 1, F32) == ((16 + 4 + 8) * 10 + (32 + 8) * 3) * 4


def test_prophetnet_caches_the_main_stream_of_its_decoder():
    f = facts(model_type="prophetnet", num_decoder_layers=2, hidden_size=64, num_decoder_attention_heads=4)
    assert f.bytes_per_token(F32) == 2 * 2 * 64 * 4


def test_qwen4_exp_keeps_indexer_keys_and_one_position_history():
    f = facts(model_type="qwen4_exp_text", num_hidden_layers=3, hidden_size=16, num_attention_heads=2,
              num_key_value_heads=1, head_dim=4, indexer_head_dim=4, linear_num_key_heads=1,
              linear_num_value_heads=1, linear_key_head_dim=4, linear_value_head_dim=4, linear_conv_kernel_dim=2,
              layer_types=["linear_attention", "indexed_attention", "indexed_attention"])
    assert kinds(f) == ["linear_state", "full+positions", "full"]
    # conv (2 x 4 + 4) x 2 and recurrent 4 x 4 in float32; K (4 + indexer 4) and V 4 a token; 3 int64 positions
    assert f.cache_bytes(10, 1, F32) == (24 + 16 + 2 * 12 * 10) * 4 + 3 * 8 * 10


def test_reformer_caches_hidden_states_and_lsh_bucket_ids_once_chunked():
    f = facts(model_type="reformer", attn_layers=["local", "lsh", "lsh"], hidden_size=16, num_attention_heads=2,
              num_hashes=3, lsh_attn_chunk_length=6, local_attn_chunk_length=4, vocab_size=10)
    assert kinds(f) == ["hidden_states"] * 3
    assert f.cache_bytes(4, 1, F32) == 3 * 16 * 4 * 4   # 4 <= every chunk: states only
    # 5 tokens: within the LSH chunk (6), but longer than the shortest chunk (4) and not a multiple of
    # lcm(6, 4) = 12, so padded to 12 > 6: each LSH layer also keeps 2 heads x 3 hashes int64 ids per prompt token
    assert f.cache_bytes(5, 1, F32) == 3 * 16 * 5 * 4 + 2 * (2 * 3 * 5 * 8)
    assert f.cache_bytes(5, 1, "bfloat16") == 3 * 16 * 5 * 2 + 2 * (2 * 3 * 5 * 8)
    with pytest.raises(ModelFactsError, match="attn_layers"):
        facts(model_type="reformer", attn_layers=["global"], hidden_size=16)


def test_dory_caches_a_copy_of_its_recurrent_layers_per_extra_loop():
    # the released form: attention and mlp blocks, counts in blocks -> 6 layers (1 in, 4 recurrent, 1 out)
    base = dict(model_type="dory", num_hidden_layers=12, n_input_layers=2, n_output_layers=2, n_recurrent_loops=3,
                layer_types=["sliding_attention", "mlp", "full_attention", "mlp"] * 3, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, sliding_window=4, hidden_size=32, vocab_size=10)
    f = facts(**base)
    assert kinds(f) == ["sliding", "full"] * 3 + ["full", "sliding", "full", "sliding"] * 2  # + layers 1-4 twice
    full, sliding = 2 * 2 * 8 * 10, 2 * 2 * 8 * 3    # 10 tokens; the window keeps 3
    assert f.cache_bytes(10, 1, F32) == (3 * (full + sliding) + 2 * 2 * (full + sliding)) * 4
    # last_loop: earlier loops only read the recurrent layers' cache, so no copies
    assert facts(**base, recurrent_kv_cache_mode="last_loop").cache_bytes(10, 1, F32) == 3 * (full + sliding) * 4
    with pytest.raises(ModelFactsError, match="must equal num_hidden_layers"):
        facts(**base, n_recurrent_layers=10)


def test_a_5_17_dsa_layer_type_reads_as_indexed_and_its_release_caches_per_head_k_v():
    from kvreport.runner.core.model_facts import mla_layout_read_for
    f = facts(model_type="axk2", num_hidden_layers=2, layer_types=["deepseek_sparse_attention", "full_attention"],
              num_attention_heads=2, kv_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=8, v_head_dim=8,
              index_head_dim=8, hidden_size=32, vocab_size=10)
    # latent: K = latent 16 (+ indexer key 8 on the DSA layer), V = rotary key 4
    assert f.cache_bytes(10, 1, F32) == ((16 + 8 + 4) + (16 + 4)) * 10 * 4
    # per head (5.17.0): K = 2 heads x (8 + 4) (+ indexer key 8), V = 2 heads x 8
    assert f.with_mla_layout("mla_per_head").cache_bytes(10, 1, F32) == ((24 + 8 + 16) + (24 + 16)) * 10 * 4
    assert mla_layout_read_for("5.17.0", "axk2") == "mla_per_head" and mla_layout_read_for("5.25.0", "hy_v4") == \
        "mla_latent"
    assert mla_layout_read_for("5.17.0", "deepseek_v3") == "mla_latent"  # DeepSeek-V3 was latent already
    assert mla_layout_read_for("5.20.0", "glm_moe_dsa") is None           # not read: the measurement decides
