"""runner/core/model_facts.py against figures worked out by hand from the config fields (the arithmetic is written
out in each test), and the torch-free `kvreport models` command. Synthetic configs: no real model's facts here."""
import json
import subprocess
import sys

import pytest

from kvreport.runner.core import model_facts as mf
from kvreport.runner.core.model_facts import ModelFactsError, facts_from_config
from conftest import cli_in_process as _kvreport

BF16, F32 = "bfloat16", "float32"


def facts(**raw):
    return facts_from_config(raw, name=raw["model_type"])


LLAMA = dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
             num_attention_heads=32, num_key_value_heads=8, vocab_size=128256)


@pytest.mark.parametrize("dtype,nbytes", [(BF16, 2), (F32, 4)])
@pytest.mark.parametrize("batch", [1, 2])
def test_gqa_full_attention(dtype, nbytes, batch):
    f = facts(**LLAMA)
    # 2 (K, V) x 32 layers x 8 KV heads x (4096 / 32 = 128) dims
    per_token = 2 * 32 * 8 * 128 * nbytes
    assert f.bytes_per_token(dtype) == per_token
    for seq in (1, 4096, 131072):
        assert f.cache_bytes(seq, batch, dtype) == batch * seq * per_token
    layer = f.layer_cache_bytes(3, 1000, batch, dtype)
    assert layer == {"kind": "full", "k_bytes": batch * 1000 * 8 * 128 * nbytes,
                     "v_bytes": batch * 1000 * 8 * 128 * nbytes, "state_bytes": 0,
                     "bytes": 2 * batch * 1000 * 8 * 128 * nbytes}


def test_explicit_head_dim_and_qwen3_default():
    f = facts(**{**LLAMA, "model_type": "qwen3", "num_attention_heads": 64, "head_dim": 128})
    assert f.bytes_per_token(BF16) == 2 * 32 * 8 * 128 * 2  # head_dim 128, not 4096 / 64 = 64
    g = facts(**{**LLAMA, "model_type": "qwen3", "num_attention_heads": 64})
    assert g.bytes_per_token(BF16) == 2 * 32 * 8 * 128 * 2 and "head_dim=128" in g.defaults_used


def test_null_kv_heads_means_every_head_but_missing_takes_the_class_default():
    raw = {k: v for k, v in LLAMA.items() if k != "num_key_value_heads"}
    assert facts(**{**raw, "model_type": "mistral"}).bytes_per_token(BF16) == 2 * 32 * 8 * 128 * 2  # default 8
    assert facts(**{**raw, "model_type": "mistral", "num_key_value_heads": None}).bytes_per_token(BF16) == \
        2 * 32 * 32 * 128 * 2


SMALL = dict(hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=128)


@pytest.mark.parametrize("seq", [5, 7, 8, 9, 40])  # below, at the cap (window - 1), at the window, above
@pytest.mark.parametrize("batch", [1, 2])
def test_gemma3_five_sliding_to_one_full(seq, batch):
    f = facts(model_type="gemma3_text", head_dim=16, sliding_window=8, **SMALL)
    assert [g["kind"] for g in f.groups()] == ["sliding", "full"] and [g["count"] for g in f.groups()] == [5, 1]
    per_layer_token = 2 * 2 * 16 * 2  # K and V x 2 KV heads x 16 dims x 2 bytes
    assert f.cache_bytes(seq, batch, BF16) == batch * per_layer_token * (5 * min(seq, 7) + seq)
    assert f.layer_cache_bytes(0, seq, batch, BF16)["bytes"] == batch * per_layer_token * min(seq, 7)
    assert f.layer_cache_bytes(5, seq, batch, BF16)["bytes"] == batch * per_layer_token * seq


def test_gemma3_wrapper_reads_text_config():
    wrapped = facts_from_config({"model_type": "gemma3", "text_config": dict(head_dim=16, sliding_window=8, **SMALL)})
    plain = facts(model_type="gemma3_text", head_dim=16, sliding_window=8, **SMALL)
    assert wrapped.layers == plain.layers and wrapped.weight_params == plain.weight_params
    assert any("language model only" in n for n in wrapped.notes)


@pytest.mark.parametrize("seq", [3, 7, 8, 9, 100])
def test_llama4_chunked_every_fourth_layer_full(seq):
    f = facts(model_type="llama4_text", head_dim=16, attention_chunk_size=8, num_local_experts=2,
              intermediate_size_mlp=80, **{**SMALL, "num_hidden_layers": 8})
    kinds = [mf.layer_kind(layer) for layer in f.layers]
    assert kinds == ["chunked", "chunked", "chunked", "full"] * 2
    per = 2 * 2 * 16 * 4  # K, V x 2 heads x 16 dims x float32
    assert f.cache_bytes(seq, 1, F32) == per * (6 * min(seq, 7) + 2 * seq)  # chunk - 1 = 7 tokens held


def test_gpt_oss_alternates_sliding_and_full():
    f = facts(model_type="gpt_oss", head_dim=64, sliding_window=128, num_local_experts=4, **{**SMALL, "num_hidden_layers": 4})
    assert [mf.layer_kind(layer) for layer in f.layers] == ["sliding", "full", "sliding", "full"]
    per = 2 * 2 * 64 * 2
    assert f.cache_bytes(1000, 1, BF16) == per * (2 * 127 + 2 * 1000)


def test_qwen2_sliding_only_above_max_window_layers_and_only_when_switched_on():
    on = facts(model_type="qwen2", use_sliding_window=True, sliding_window=8, max_window_layers=4, **SMALL)
    assert [mf.layer_kind(layer) for layer in on.layers] == ["full"] * 4 + ["sliding"] * 2
    off = facts(model_type="qwen2", use_sliding_window=False, sliding_window=8, **SMALL)
    assert {mf.layer_kind(layer) for layer in off.layers} == {"full"}


def test_mistral_window_applies_to_every_layer():
    f = facts(model_type="mistral", sliding_window=4096, **SMALL)
    assert f.caps == (4095,) and f.cache_bytes(10_000, 1, BF16) == 6 * 2 * 2 * 16 * 2 * 4095


DSV3 = dict(model_type="deepseek_v3", hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
            num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128, vocab_size=129280,
            kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, q_lora_rank=1536,
            n_routed_experts=256, n_shared_experts=1, first_k_dense_replace=3)


@pytest.mark.parametrize("dtype,nbytes", [(BF16, 2), (F32, 4)])
def test_mla_latent_and_per_head(dtype, nbytes):
    f = facts(**DSV3)
    assert f.mla_layout == "mla_latent"
    assert f.bytes_per_token(dtype) == 61 * (512 + 64) * nbytes  # the latent plus the rotary key, one head
    per_head = f.with_mla_layout("mla_per_head")
    # K: 128 heads x (128 nope + 64 rope); V: 128 heads x 128
    assert per_head.bytes_per_token(dtype) == 61 * 128 * (192 + 128) * nbytes
    assert per_head.cache_bytes(4096, 2, dtype) == 2 * 4096 * 61 * 128 * 320 * nbytes
    assert f.engine_cache_bytes(4096, 1, dtype) == per_head.engine_cache_bytes(4096, 1, dtype) == \
        4096 // 16 * 16 * 61 * 576 * nbytes  # vLLM caches the latent whatever transformers does
    with pytest.raises(ModelFactsError, match="not an MLA model"):
        facts(**LLAMA).with_mla_layout("mla_per_head")


def test_mla_layout_read_per_transformers_version():
    assert mf.mla_layout_read_for("5.24.0") == "mla_latent" and mf.mla_layout_read_for("5.14.1") == "mla_per_head"
    assert mf.mla_layout_read_for("9.9.9") is None  # not read: the measurement decides


def test_deepseek_v2_lite_without_q_lora():
    raw = {**DSV3, "model_type": "deepseek_v2", "q_lora_rank": None}
    with_q = facts(**{**raw, "q_lora_rank": 1536})
    # q_proj (7168 x 128 x 192) replaces q_a (7168 x 1536) + its norm (1536) + q_b (1536 x 128 x 192), per layer
    diff = 61 * (7168 * 128 * 192 - (7168 * 1536 + 1536 + 1536 * 128 * 192))
    assert facts(**raw).weight_params - with_q.weight_params == diff


QWEN3_NEXT = dict(model_type="qwen3_next", head_dim=256, linear_num_key_heads=16, linear_num_value_heads=32,
                  linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
                  full_attention_interval=4, hidden_size=2048, intermediate_size=5120, num_hidden_layers=48,
                  num_attention_heads=16, num_key_value_heads=2, vocab_size=151936, num_experts=512,
                  moe_intermediate_size=512, shared_expert_intermediate_size=512)


@pytest.mark.parametrize("batch", [1, 2])
def test_linear_attention_state_is_constant(batch):
    f = facts(**QWEN3_NEXT)
    assert [g["count"] for g in f.groups()] == [36, 12]  # 3 gated delta-net : 1 full, 48 layers
    conv = (2 * 16 * 128 + 32 * 128) * 4 * 2           # conv_dim (2 x key_dim + value_dim) x kernel x bf16
    recurrent = 32 * 128 * 128 * 4                       # v_heads x k_dim x v_dim in float32
    attn_per_token = 12 * 2 * 2 * 256 * 2                # 12 full layers x K,V x 2 heads x 256 x bf16
    for seq in (1, 4096, 131072):
        assert f.cache_bytes(seq, batch, BF16) == batch * (36 * (conv + recurrent) + seq * attn_per_token)
    assert f.layer_cache_bytes(0, 99, batch, BF16) == {"kind": "linear_state", "k_bytes": 0, "v_bytes": 0,
                                                      "state_bytes": batch * (conv + recurrent),
                                                      "bytes": batch * (conv + recurrent)}
    # the engine keeps kernel - 1 conv columns and the state in the model dtype, one page per request
    engine_state = ((2 * 16 * 128 + 32 * 128) * 3 + 32 * 128 * 128) * 2
    assert f.engine_cache_bytes(4096, batch, BF16) == batch * (36 * engine_state + 4096 * attn_per_token)


def test_jamba_mamba1_state():
    f = facts(model_type="jamba", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
              num_attention_heads=32, num_key_value_heads=8, vocab_size=65536, mamba_d_state=16, mamba_d_conv=4,
              mamba_expand=2, attn_layer_period=8, attn_layer_offset=4, num_experts=16)
    assert [mf.layer_kind(layer) for layer in f.layers[:8]] == ["mamba_state"] * 4 + ["full"] + ["mamba_state"] * 3
    state = 8192 * 4 * 2 + 8192 * 16 * 4  # conv (2 x 4096 channels x 4) in bf16 + SSM (8192 x 16) in float32
    assert f.cache_bytes(1000, 1, BF16) == 28 * state + 4 * 1000 * 2 * 8 * 128 * 2


def test_nemotron_h_pattern_with_cacheless_layers():
    f = facts(model_type="nemotron_h", hybrid_override_pattern="M-M*-", hidden_size=64, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, vocab_size=128, intermediate_size=96, mamba_num_heads=4,
              mamba_head_dim=16, n_groups=2, ssm_state_size=8, conv_kernel=4)
    assert [mf.layer_kind(layer) for layer in f.layers] == ["mamba_state", "none", "mamba_state", "full", "none"]
    state = (4 * 16 + 2 * 2 * 8) * 4 * 2 + 4 * 16 * 8 * 4  # conv (64 + 2 groups x 2 x 8) x 4 in bf16; SSM in f32
    assert f.cache_bytes(10, 2, BF16) == 2 * (2 * state + 10 * 2 * 2 * 16 * 2)
    assert f.layer_cache_bytes(1, 10, 2, BF16)["bytes"] == 0


def test_falcon_multi_query_and_new_decoder_architecture():
    mq = facts(model_type="falcon", hidden_size=4544, num_attention_heads=71, num_hidden_layers=32,
               vocab_size=65024, multi_query=True, new_decoder_architecture=False)
    assert mq.bytes_per_token(BF16) == 32 * 2 * 1 * 64 * 2  # one K/V head of 4544 / 71 = 64
    new = facts(model_type="falcon", hidden_size=8192, num_attention_heads=128, num_kv_heads=8,
                num_hidden_layers=60, vocab_size=65024, new_decoder_architecture=True)
    # transformers broadcasts K/V to all 128 heads before caching; the engine keeps 8
    assert new.cache_bytes(16, 1, BF16) == 60 * 2 * 128 * 64 * 2 * 16
    assert new.engine_cache_bytes(16, 1, BF16) == 60 * 2 * 8 * 64 * 2 * 16


def test_engine_pages_for_windows_and_chunks():
    block = 16
    sliding = mf.SlidingWindowSpec(1, 1, sliding_window=100)
    # 1000 tokens: tokens before 1000 - 100 + 1 = 901 are skipped, so 901 // 16 = 56 whole pages freed
    assert sliding.engine_pages(1000) == 63 - 56 and sliding.engine_pages(50) == 4
    chunked = mf.ChunkedLocalAttentionSpec(1, 1, attention_chunk_size=64)
    # 1000 tokens: the current chunk starts at 1000 // 64 x 64 = 960, so 60 pages freed of 63
    assert chunked.engine_pages(1000) == 3 and chunked.engine_pages(960) == 60 - 60
    assert mf.FullAttentionSpec(1, 1).engine_pages(17) == 2 == -(-17 // block)


def test_fits_splits_heads_replicates_latent_and_subtracts_weights():
    f = facts(**LLAMA)
    per_request_tp8 = 32 * 4096 // 16 * 16 * 1 * 256 * 2  # 8 KV heads over 8 ranks: 1 head of K+V (128+128)
    assert f.engine_cache_bytes(4096, 1, BF16, tp=8) == per_request_tp8
    assert f.engine_cache_bytes(4096, 1, BF16, tp=8) == f.engine_cache_bytes(4096, 1, BF16, tp=16)  # replicated
    budget = int(0.9 * 80e9) - -(-f.weight_bytes(BF16) // 8)
    assert f.fits(80 * 10**9, 4096, 8) == budget // per_request_tp8
    ds = facts(**DSV3)
    assert ds.engine_cache_bytes(4096, 1, BF16, tp=8) == ds.engine_cache_bytes(4096, 1, BF16, tp=1)
    assert ds.fits(24 * 10**9, 4096, 1) == 0  # 671B-class weights never fit one card


def test_pricing_terms_reproduce_cache_bytes():
    f = facts(model_type="gemma3_text", head_dim=16, sliding_window=8, **SMALL)
    per_token, capped, constant = f.pricing_terms(BF16)
    for t in (1, 7, 8, 50):
        assert t * per_token - sum(b * max(0, t - cap) for b, cap in capped) + constant == f.cache_bytes(t, 1, BF16)


def test_llama_weight_count_by_hand():
    f = facts(**LLAMA)
    attn = 4096 * 4096 * 2 + 4096 * 1024 * 2  # q and o, k and v (8 heads x 128)
    per_layer = attn + 3 * 4096 * 14336 + 2 * 4096
    assert f.weight_params == 32 * per_layer + 2 * 128256 * 4096 + 4096  # untied embedding and lm_head, final norm
    assert f.weight_bytes(BF16) == 2 * f.weight_params


@pytest.mark.parametrize("raw,needle", [
    ({"model_type": "bert", "hidden_size": 8}, "'num_hidden_layers' is missing (model_type bert, read generically"),
    ({"hidden_size": 8}, "'model_type' is missing"),
    ({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2}, "'num_hidden_layers' is missing"),
    ({**LLAMA, "num_hidden_layers": "many"}, "'num_hidden_layers' is 'many'"),
    ({"model_type": "gemma3"}, "'text_config' is missing"),
    ({"model_type": "gemma3", "text_config": {"model_type": [1]}}, "'text_config.model_type' is not a string"),
    ({**LLAMA, "layer_types": ["sliding_attention"] * 32}, "needs config field 'sliding_window'"),
    ({**LLAMA, "layer_types": ["full_attention"]}, "'layer_types' has 1 entries for 32 layers"),
])
def test_bad_configs_name_the_field(raw, needle):
    with pytest.raises(ModelFactsError, match=needle.replace("(", r"\(")):
        facts_from_config(raw, where="x/config.json")


def test_load_paths(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    assert mf.load(str(tmp_path)).bytes_per_token() == mf.load(str(tmp_path / "config.json")).bytes_per_token()
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFactsError, match="no config.json"):
        mf.load(str(tmp_path / "empty"))
    (tmp_path / "bad.json").write_text("{\n  oops")
    with pytest.raises(ModelFactsError, match="not valid JSON \\(line 2"):
        mf.load(str(tmp_path / "bad.json"))
    with pytest.raises(ModelFactsError, match="unknown model 'no-such-model': not a built-in model"):
        mf.load("no-such-model")
    assert mf.load("llama-3.1-8b").bytes_per_token() == 131_072  # a legacy built-in, 16-bit


def test_models_command_json(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "model_type": "mistral", "sliding_window": 4096}))
    r = _kvreport("models", str(tmp_path), "llama-3.1-8b", "--json", "--seq", "4096,8192", "--batch", "2")
    assert r.returncode == 0, r.stderr
    swa, llama = json.loads(r.stdout)
    assert {"name", "source", "layers", "cache_bytes", "engine_cache_bytes", "weight_bytes", "fits"} <= set(swa)
    assert swa["layers"][0]["kind"] == "sliding" and swa["layers"][0]["count"] == 32
    per = 32 * 2 * 8 * 128 * 2
    assert swa["cache_bytes"] == {"4096": 2 * 4095 * per, "8192": 2 * 4095 * per}  # capped at window - 1
    assert llama["cache_bytes"]["8192"] == 2 * 8192 * per
    assert swa["engine_cache_bytes"]["analytic"] is True and "vLLM" in swa["engine_cache_bytes"]["rules"]
    assert set(swa["fits"]) == {"24", "80", "141", "192"} and set(swa["fits"]["80"]) == {"1", "2", "4", "8"}
    assert swa["weight_bytes"]["analytic"] is True


@pytest.mark.parametrize("args,needle", [
    (["models", "nope"], "unknown model 'nope': not a built-in model"),
    (["models", "--seq", "4k"], "--seq 4k"),
    (["models", "--dtype", "int3"], "--dtype int3"),
    (["models", "--batch", "0"], "--batch 0"),
])
def test_models_command_bad_input_is_one_line_exit_2(args, needle):
    r = _kvreport(*args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_models_command_imports_no_torch():
    code = ("import sys; from kvreport.runner.cli import main\n"
            "try:\n    main(['models', 'llama-3.1-8b', '--json'])\nexcept SystemExit as e:\n    assert not e.code\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))\n"
            "assert not heavy, heavy\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


# --- the Models page -----------------------------------------------------------------------------------


def test_models_page_answers_first_and_sets_measurements_beside_the_formula():
    from kvreport.analysis.pages import models as page

    measured = [  # one exact, one off by a byte, one MLA row from a release whose layout was read
        {"run_id": 1, "model": "llama-3.1-8b", "dtype": "bfloat16", "transformers_version": "5.24.0",
         "weights_random": True, "seq_len": 512, "batch_size": 2, "kv_bytes": 2 * 512 * 131_072},
        {"run_id": 2, "model": "llama-3.1-8b", "dtype": "float32", "transformers_version": "5.24.0",
         "weights_random": True, "seq_len": 512, "batch_size": 1, "kv_bytes": 512 * 262_144 + 1},
        {"run_id": 3, "model": "no-such-model", "dtype": "float32", "transformers_version": "5.24.0",
         "weights_random": True, "seq_len": 8, "batch_size": 1, "kv_bytes": 1},
    ]
    ctx = page.context(lambda name, **kw: [dict(r) for r in measured] if name == "models_measured" else [], None)
    rows = dict(ctx.cost_tables)["bfloat16"].rows
    reaching = [r for r in rows if r["kv_131072"] is not None]
    assert ctx.answer["most"] is reaching[0] and ctx.answer["least"] is reaching[-1]
    assert all(a["kv_131072"] >= b["kv_131072"] for a, b in zip(reaching, reaching[1:]))  # the answer column leads
    by_model = {r["model"]: r for r in rows}
    assert by_model["llama-3.1-8b"]["kv_131072"] == 131_072 * 131_072
    assert by_model["gpt2"]["kv_131072"] is None  # past GPT-2's 1,024-token context: no request gets there
    m = ctx.measured
    assert [r["match"] for r in m] == [True, False, None]
    assert m[1]["formula_bytes"] == 512 * 262_144 and "no formula" in m[2]["layout"]


def test_dsa_indexer_keys_grow_beside_the_latent():
    f = facts(**{**DSV3, "model_type": "deepseek_v32", "index_head_dim": 128, "index_n_heads": 64})
    # every layer: latent 512 + indexer key 128 (keys), rotary key 64 (values)
    assert f.bytes_per_token(BF16) == 61 * (512 + 128 + 64) * 2
    glm = facts(**{**DSV3, "model_type": "glm_moe_dsa", "num_hidden_layers": 4, "index_topk_pattern": "FSSF"})
    assert [layer[0].indexer_head_dim for layer in glm.layers] == [128, 0, 0, 128]  # "shared" layers keep none


def test_fits_with_lighter_weights():
    ds = facts(**DSV3)
    per_request = ds.engine_cache_bytes(131072, 1, BF16, tp=8)  # the latent, replicated on every rank
    budget = int(0.9 * 141e9) - -(-ds.weight_params * 1 // 8)   # FP8 weights: one byte per parameter, split 8 ways
    assert ds.fits(141 * 10**9, 131072, 8, BF16, weight_dtype="float8") == budget // per_request > 0
    r = _kvreport("models", "llama-3.1-8b", "--json", "--weight-dtype", "float8")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["weight_bytes"]["bytes"] == facts(**LLAMA).weight_params
