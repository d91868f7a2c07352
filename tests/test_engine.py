"""The engine view: each vLLM profile's rules, checked against figures read in that release's source and
against a real vLLM startup log (Llama-3.1-8B on an RTX 3090: 31,232 tokens, 1.56x at 20,000 tokens)."""
import json

import pytest

from kvreport.runner.core.model_facts.catalogue import aliases
from kvreport.runner.core import engine
from kvreport.runner.core.engine.gpus import MIB
from kvreport.runner.core.engine.layout import LayerSpec
from kvreport.runner.core.model_facts import load
from conftest import cli_process as _kvreport

OLD, MID, NEW = (engine.PROFILES[r] for r in ("0.10.2", "0.20.0", "0.34.0"))


def layout(name, profile, tp=1, kv="auto"):
    target, raw = engine.resolve(name)
    return engine.layout_for(load(target), raw, profile, tp, kv)


def test_profiles_by_release_and_the_newest_is_the_default():
    assert engine.profile_for(None) is engine.profile_for("vllm") is NEW
    assert engine.profile_for("vllm==0.20.0") is MID
    for bad in ("vllm==0.11.0", "sglang==0.5", "0.20.0"):
        with pytest.raises(engine.EngineError, match="--engine"):
            engine.profile_for(bad)


@pytest.mark.parametrize("profile,tokens,line", [
    (OLD, "GPU KV cache size: 31,232 tokens", "Maximum concurrency for 20,000 tokens per request: 1.56x"),
    (MID, "GPU KV cache size: 31,232 tokens", "Maximum concurrency for 20,000 tokens per request: 1.56x"),
    (NEW, "GPU KV cache size: 31,182 tokens, Maximum concurrency for 20,000 tokens per request: 1.56x", None),
])
def test_llama_8b_rtx3090_startup_log(profile, tokens, line):
    # 1,952 blocks of 2 MiB (32 layers x 16 tokens x 8 heads x 256 x 2 B): what "3.81 GiB" stood for in the log
    log = engine.vllm_log(layout("llama-3.1-8b", profile), 1952 * 2 * MIB, 20_000, 2048)
    assert tokens in log["lines"] and (line is None or line in log["lines"])
    assert log["num_gpu_blocks"] == (1952 if profile.block_size == 16 else 488)


@pytest.mark.parametrize("name,profile,block", [
    ("qwen3.5-27b", MID, 784), ("nemotron-h-56b", MID, 4128),  # the figures vLLM 0.20 logs
    ("qwen3.5-27b", OLD, 400),   # 0.10.2: no float32 override, the delta-rule state in bfloat16
    ("qwen3.5-27b", NEW, 832),   # 0.34: aligned to the 64-token default block
])
def test_hybrid_attention_block_holds_one_mamba_state(name, profile, block):
    lay = layout(name, profile)
    assert lay.hybrid_block_size == block
    pages = {g.page_bytes for g in lay.groups}
    assert len(pages) == 1  # the Mamba page padded to the attention page


def test_dsa_indexer_is_132_bytes_per_token_whatever_the_kv_dtype():
    def per_token(lay):  # one uniform-type group, 64-token blocks
        return lay.block_bytes // 64

    assert per_token(layout("deepseek-v3.2", MID)) == 61 * (576 * 2 + 132)
    assert per_token(layout("deepseek-v3.2", MID, kv="fp8")) == 61 * (656 + 132)
    assert per_token(layout("deepseek-v3", MID, kv="fp8")) == 61 * 576


def test_skip_rules_free_only_what_the_last_allocation_skipped():
    chunked = LayerSpec("chunked", 16, 1, window=8192)
    assert chunked.held_blocks(32768) == 512  # (32768 - 1) // 8192 x 8192 skipped, not 32768
    sliding = LayerSpec("sliding", 16, 1, window=128)
    assert sliding.held_blocks(144) == 9 - 1  # 143 - 128 + 1 = 16 tokens skipped: one whole block
    assert sliding.held_blocks(143) == 9      # 15 skipped: no whole block yet


def test_layer_group_padding_and_raised_block():
    lay = layout("mimo-v2-flash", MID)
    assert lay.padding_layers == 6 and len(lay.groups) == 6
    assert {g.spec.kind: g.spec.block_size for g in lay.groups} == {"full": 32, "sliding": 16}


def test_group_size_takes_the_larger_kind_when_close():
    from kvreport.runner.core.model_facts import facts_from_config

    types = ["sliding_attention"] * 12 + ["full_attention"] * 13  # vLLM's own example: gpt-oss-20b + eagle
    f = facts_from_config({"model_type": "llama", "num_hidden_layers": 25, "num_attention_heads": 8,
                           "num_key_value_heads": 8, "hidden_size": 512, "intermediate_size": 1024,
                           "vocab_size": 1000, "sliding_window": 128, "layer_types": types})
    new = engine.build_layout(f, {}, MID)
    assert (len(new.groups), new.padding_layers) == (2, 1)  # (13 sw, 13 full)
    old = engine.build_layout(f, {}, OLD)
    assert (len(old.groups), old.padding_layers) == (3, 11)  # 0.10.2: groups of 12


def test_fits_are_capped_by_max_num_seqs_and_refusals_are_named():
    target, raw = engine.resolve("gpt-oss-20b")
    f = load(target)
    big = engine.fits(f, raw, MID, engine.gpu_bytes("h200"), [4096], gpu_name="h200")
    cell = big["requests"]["4096"]
    assert big["max_num_seqs"] == 1024 and cell["pool"] > 1024 and cell["requests"] == 1024
    small = engine.fits(f, raw, MID, engine.gpu_bytes("rtx3090"), [4096], gpu_name="rtx3090")
    assert small["max_num_seqs"] == 256
    llama = load("llama-3.1-8b")
    assert "must be divisible by tensor parallel size (3)" in engine.refusals(llama, engine.resolve(
        "llama-3.1-8b")[1], MID, 3)[0]
    assert engine.refusals(load("qwen3.5-27b"), engine.resolve("qwen3.5-27b")[1], OLD, 1)


def test_weights_as_the_checkpoint_stores_them():
    target, raw = engine.resolve("gpt-oss-120b")
    w = engine.weights(load(target), raw)
    assert w.stored_as == "mxfp4" and w.bytes_total < 80 * 10**9
    ds, ds_raw = engine.resolve("deepseek-v3")
    assert engine.weights(load(ds), ds_raw).stored_as == "float8"
    assert engine.weights(load("llama-3.1-8b"), None, "int4").bytes_total < load("llama-3.1-8b").weight_params


def test_every_alias_names_one_catalogue_entry():
    table = aliases()
    assert table["meta-llama/llama-3.1-8b-instruct"] == "llama-3.1-8b"
    name, raw = engine.resolve("meta-llama/Llama-3.1-8B-Instruct")
    assert name == "llama-3.1-8b" and raw["num_key_value_heads"] == 8
    for _repo, name in table.items():
        assert engine.resolve(name)[1] is not None


def test_models_command_predicts_the_vllm_log():
    r = _kvreport("models", "meta-llama/Llama-3.1-8B-Instruct", "--engine", "vllm==0.20.0", "--kv-memory",
                  "3.8125GiB", "--max-model-len", "20000", "--gpu", "rtx3090", "--json")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)[0]
    assert rec["engine"]["profile"] == "vllm==0.20.0"
    log = rec["engine"]["vllm_log"]
    assert (log["gpu_kv_cache_tokens"], log["num_gpu_blocks"], round(log["max_concurrency"], 2)) == (31232, 1952, 1.56)
    text = _kvreport("models", "llama-3.1-8b", "--kv-memory", "3.8125GiB", "--max-model-len", "20000")
    assert "GPU KV cache size: 31,182 tokens" in text.stdout


@pytest.mark.parametrize("args,needle", [
    (["--engine", "vllm==0.11.0"], "no rules for vLLM 0.11.0"),
    (["--kv-memory", "lots"], "--kv-memory lots"),
    (["--max-model-len", "200000"], "past llama-3.1-8b's max_position_embeddings"),
    (["--gpu", "tpu9"], "--gpu tpu9"),
])
def test_bad_engine_input_is_one_line_exit_2(args, needle):
    r = _kvreport("models", "llama-3.1-8b", *args)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_models_page_shows_the_default_profile_capacity_and_refusals():
    from kvreport.analysis.pages import models as page

    ctx = page.context(lambda name, **kw: [], None)
    assert ctx.engine_profile == engine.DEFAULT_PROFILE.name
    row = next(r for r in ctx.engine_fits_table.rows if r["model"] == "gpt-oss-20b")
    cell = engine.fits(load("gpt-oss-20b"), engine.resolve("gpt-oss-20b")[1], engine.DEFAULT_PROFILE,
                       engine.gpu_bytes("h200"), [32768], 1, gpu_name="h200")["requests"]["32768"]
    assert row["h200_1"] == cell["requests"] > 0
    refused = {(r["model"], r["tp"]) for r in ctx.engine_refusals_table.rows}
    assert ("qwen2.5-0.5b", 8) in refused and all("divisible" in r["reason"] for r in ctx.engine_refusals_table.rows)


def test_a_layer_letter_the_release_does_not_build_is_a_refusal():
    # Nemotron-3-Nano's pattern has MoE layers (E); 0.10.2's nemotron_h.py builds only M, - and *
    nano = engine.resolve("nemotron-3-nano-30b-a3b")
    (reason,) = engine.refusals(load(nano[0]), nano[1], OLD, 1)
    assert "no E layer of hybrid_override_pattern" in reason
    assert not engine.refusals(load(nano[0]), nano[1], MID, 1)
    h56 = engine.resolve("nemotron-h-56b")
    assert not engine.refusals(load(h56[0]), h56[1], OLD, 1)
