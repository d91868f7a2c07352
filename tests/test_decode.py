"""Decode steps: eager and static modes and the bytes they read, identical steps after every reset, no host
sync in the static step, graph mode skipped on the CPU, the prefix restorer and the position limit."""
from __future__ import annotations


import pytest
import torch

from kvreport.runner.core.kv_formula import kv_shape
from kvreport.runner.measure import decode_step
from kvreport.runner.measure.experiments import kv_decode_cost_v2 as kd
from kvreport.runner.measure.kv_cache import cache_seq_len, forward_with_cache

from measure_helpers import ctx_for


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny-llama-gqa"])
def test_decode_modes_and_their_bytes(model):
    ctx = ctx_for(model, copy_roof_gbs=10.0, peak_gbs=None)
    with torch.inference_mode():
        result = kd.run(ctx)
    rows = result.tables["kv_decode_cost_v2"]
    per_token = kv_shape(ctx.config).bytes_per_token(4)
    assert len(rows) == 2 * len(kd.sweep(ctx)) == 8  # eager and static per shape; graph needs CUDA
    assert {r["mode"] for r in rows} == {"eager", "static"}
    assert all("graph: CUDA graphs need a CUDA device" in r["skipped_modes"] for r in rows)
    roofs = {(r["op"], r["bytes"]): r for r in result.tables["roof_curve"]}
    for r in rows:
        prefix_kv = r["batch_size"] * r["prefix_len"] * per_token
        assert r["kv_growth_bytes"] == r["batch_size"] * per_token == r["expected_growth_bytes"] == r["kv_write_bytes"]
        assert r["growth_match"]
        assert r["kv_bytes"] == prefix_kv
        assert r["kv_read_bytes"] == prefix_kv + r["kv_write_bytes"]  # attention covers the new token too
        assert r["bytes_read"] == r["weight_bytes"] + r["kv_read_bytes"]
        # eager's torch.cat re-reads the prefix and writes it one token longer; static writes in place
        assert r["recopy_bytes"] == (2 * prefix_kv + r["kv_write_bytes"] if r["mode"] == "eager" else 0)
        assert r["bytes_moved"] == r["bytes_read"] + r["kv_write_bytes"] + r["recopy_bytes"]
        assert r["achieved_gbs"] == pytest.approx(r["bytes_read"] / (r["step_ms"] * 1e-3) / 1e9)
        roof = roofs["read", r["bytes_read"]]  # the read roof at exactly the bytes the step reads
        assert r["pct_of_roof"] == pytest.approx(r["achieved_gbs"] / roof["gbs"])
        assert r["bandwidth_floor_ms"] == pytest.approx((r["bytes_read"] + r["kv_write_bytes"]) / roof["gbs"] / 1e6)
        assert r["n"] == 6 and r["restore_method"] in ("crop", "deepcopy", "static")
        assert r["overhead_ms"] is None  # not separable on the CPU


@pytest.mark.parametrize("mode", ["eager", "static"])
def test_decoders_compute_the_same_steps_after_every_reset(mode):
    ctx = ctx_for("tiny-llama-gqa")
    with torch.inference_mode():
        prefix, step = ctx.input_ids(2, 20), ctx.input_ids(2, 1)
        _, ref_cache = forward_with_cache(ctx.model, prefix)
        for _ in range(3):
            ref, ref_cache = forward_with_cache(ctx.model, step, ref_cache)
        dec = decode_step.make_decoder(mode, ctx.model, prefix, step, steps=3)
        for _ in range(3):  # without the reset the third call would attend over 26 tokens, not 23
            dec.reset()
            dec()
            assert torch.allclose(dec.logits, ref, atol=1e-5), mode
    if mode == "static":  # sized to exactly the steps: the attention reads 23 tokens, 3 times
        assert dec.max_len == 23 and dec.kv_read_bytes() == 3 * dec.buffer_bytes


def test_static_step_has_no_host_sync():
    """What a CUDA graph capture needs, checked on the CPU: the static step never turns a tensor into a
    Python number (the eager one may; it is never captured)."""
    ctx = ctx_for("tiny-gpt2")
    with torch.no_grad():  # not inference_mode: its tensors bypass the dispatch mode that watches
        dec = decode_step.make_decoder("static", ctx.model, ctx.input_ids(2, 16), ctx.input_ids(2, 1))
        assert decode_step.host_syncs(dec) == []
        # the watch does see a sync: the (untimed) reset reads the cache's device-side length
        assert decode_step.host_syncs(dec.reset) != []


def test_graph_mode_is_skipped_on_cpu_with_reason():
    ctx = ctx_for("tiny-gpt2")
    with pytest.raises(decode_step.ModeUnavailable, match="CUDA graphs need a CUDA device"):
        decode_step.make_decoder("graph", ctx.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))


def test_restorer_brings_the_cache_back_to_the_prefix():
    ctx = ctx_for("tiny-gpt2")
    with torch.inference_mode():
        _, cache = forward_with_cache(ctx.model, ctx.input_ids(2, 20))
        rest = decode_step.Restorer(cache, 20)
        for _ in range(3):
            forward_with_cache(ctx.model, ctx.input_ids(2, 1), rest.cache)
            assert cache_seq_len(rest.cache) == 21
            rest.restore()
            assert cache_seq_len(rest.cache) == 20


def test_decode_sweep_respects_position_limit():
    ctx = ctx_for("tiny-gpt2")  # 512 positions
    ctx.quick = False
    assert max(p for p, _ in kd.sweep(ctx)) == 256  # 512 + 1 would not fit
