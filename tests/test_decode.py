"""Decode steps (runner/measure/decode_step.py) and the decode experiment, on the CPU.

- eager and static modes and the bytes they read; identical steps after every reset; the prefix restorer
  and the position limit; graph mode skipped on the CPU with the reason;
- the static cache's rewind, the same on every supported transformers release (CI runs this file under the
  newest and under the GPU image's 5.17), and the layers it refuses;
- the graph decoder driving a fake torch.cuda (tests/fake_cuda.py, passed in as `cuda=`) that fails in one
  phase at a time: each failure is a ModeUnavailable naming the phase, and in the experiment that mode's
  recorded skip while the other modes keep their rows;
- the static step, of the tiny model and of the real gpt2 and llama-3.1-8b architectures on the meta device,
  watched for host syncs and CPU tensors in device work (what CUDA graph capture cannot hold).
"""
from __future__ import annotations

import pytest
import torch

from kvreport.runner.core.kv_formula import kv_shape
from kvreport.runner.measure import decode_step
from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.experiments import decode_cost as kd
from kvreport.runner.measure.kv_cache import cache_seq_len, forward_with_cache
from kvreport.runner.measure.models import load_model

from fake_cuda import FakeCuda, decoders, failing_rewind
from measure_helpers import ctx_for, make_ctx

META = torch.device("meta")
NO_HEADLINE_ROOF = {"copy_roof_gbs": 10.0, "peak_gbs": None}  # skip measuring the headline roof: not under test


def quick_ctx(loaded) -> RunContext:
    return make_ctx(loaded, shared=dict(NO_HEADLINE_ROOF))


def meta_ctx(name: str) -> RunContext:
    """Built-in model `name` at full size on the meta device (no data, so no memory) in bf16."""
    return RunContext(run_id=1, device=META, dtype=torch.bfloat16, loaded=load_model(name, META, torch.bfloat16),
                      quick=True, shared=dict(NO_HEADLINE_ROOF))


# --- eager and static steps -----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny-llama-gqa"])
def test_decode_modes_and_their_bytes(model):
    ctx = ctx_for(model, copy_roof_gbs=10.0, peak_gbs=None)
    with torch.inference_mode():
        result = kd.run(ctx)
    rows = result.tables["decode_cost"]
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


@pytest.mark.slow
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


# --- the static cache's reset ---------------------------------------------------------------------------

def test_static_reset_rewinds_every_layer_and_the_steps_repeat_exactly(tiny):
    ctx = make_ctx(tiny)
    with torch.no_grad():
        prefix, step = ctx.input_ids(2, 12), ctx.input_ids(2, 1)
        dec = decode_step.make_decoder("static", tiny.model, prefix, step, steps=2)
        dec()
        first = dec.logits.clone()
        assert {int(layer.get_seq_length()) for layer in dec.cache.layers} == {14}
        dec.reset()
        assert {int(layer.get_seq_length()) for layer in dec.cache.layers} == {12}
        dec()
        assert torch.equal(dec.logits, first)  # the same two positions again, not positions 14 and 15
        _, ref = forward_with_cache(tiny.model, prefix)
        for _ in range(2):
            out, ref = forward_with_cache(tiny.model, step, ref)
        assert torch.allclose(dec.logits, out, atol=1e-5)


def test_static_reset_refuses_to_report_a_wrong_length(tiny):
    """The read-back after the rewind is what catches a release whose counters moved elsewhere."""
    ctx = make_ctx(tiny)
    with torch.no_grad():
        dec = decode_step.make_decoder("static", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))
        dec()
        # A counter the rewind did not know about: this test's own cache layer reports one more token.
        dec.cache.layers[1].get_seq_length = lambda: 9
        with pytest.raises(RuntimeError, match=r"left lengths \[8, 9\], expected 8"):
            dec.reset()


def test_static_mode_refuses_a_sliding_window_it_could_not_rewind():
    from transformers import AutoModelForCausalLM, MistralConfig

    config = MistralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                           num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, sliding_window=8)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 64, (1, 12))
    with torch.no_grad(), pytest.raises(decode_step.ModeUnavailable, match="8-token sliding window"):
        decode_step.make_decoder("static", model, ids, ids[:, :1])
    with torch.no_grad():  # within the window it runs, and its reset repeats the step exactly
        dec = decode_step.make_decoder("static", model, ids[:, :5], ids[:, :1], steps=2)
        dec()
        first = dec.logits.clone()
        dec.reset()
        dec()
        assert torch.equal(dec.logits, first)


def test_static_mode_refuses_a_layer_type_it_does_not_know(tiny):
    from transformers import cache_utils

    class RecurrentLayer(cache_utils.StaticLayer):  # a subclass may hold more state than the counters
        pass

    def with_unknown_layer(*args):
        cache = decode_step.static_cache(*args)
        cache.layers[0] = RecurrentLayer(max_cache_len=cache.layers[0].max_cache_len)
        return cache

    ctx = make_ctx(tiny)
    with pytest.raises(decode_step.ModeUnavailable, match="RecurrentLayer: no known way to rewind it"):
        decode_step.make_decoder("static", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1),
                                 make_cache=with_unknown_layer)


# --- the graph decoder driving a fake torch.cuda --------------------------------------------------------

def test_graph_decoder_runs_every_phase_under_the_fake(tiny):
    fake = FakeCuda()
    ctx = make_ctx(tiny)
    with torch.no_grad():
        dec = decode_step.make_decoder("graph", tiny.model, ctx.input_ids(2, 8), ctx.input_ids(2, 1), cuda=fake)
    assert dec.mode == "graph"
    assert fake.calls.count("capture") == 1 and fake.calls.count("replay") == 1  # the checked replay
    assert fake.calls.index("stream") < fake.calls.index("capture") < fake.calls.index("replay")
    assert fake.calls[-1] == "synchronize"  # the last phase ends synchronised
    assert {int(layer.get_seq_length()) for layer in dec.cache.layers} == {8}


@pytest.mark.parametrize("phase, inject", [
    ("warm-up", "warm-up"), ("capture", "capture"), ("replay", "replay"), ("warm-up", "sync"),
    ("reset", ("rewind", 1)),  # the reset inside the warm-up
    ("reset", ("rewind", 3)),  # the reset after the capture (two warm-up resets before it)
    ("reset", ("rewind", 4)),  # the reset after the checked replay
])
def test_a_failure_in_any_graph_phase_is_a_mode_unavailable_naming_it(tiny, phase, inject):
    if isinstance(inject, tuple):
        options = {"cuda": FakeCuda(), "rewind": failing_rewind(inject[1])}
    else:
        options = {"cuda": FakeCuda(inject)}
    ctx = make_ctx(tiny)
    with torch.no_grad(), pytest.raises(decode_step.ModeUnavailable) as err:
        decode_step.make_decoder("graph", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1), **options)
    assert str(err.value).startswith(f"CUDA graph {phase} failed: InjectedFailure: "), str(err.value)


def test_a_replay_that_computes_something_else_is_refused(tiny):
    """The captured step computes different logits from the warm-up's (a hook on the output layer shifts
    them while the fake captures; the fake's replay leaves the captured logits): the check refuses it."""
    fake = FakeCuda()
    head = tiny.model.get_output_embeddings()
    shift = head.register_forward_hook(lambda mod, args, out: out + 1.0 if fake.capturing else None)
    ctx = make_ctx(tiny)
    try:
        with torch.no_grad(), pytest.raises(decode_step.ModeUnavailable,
                                            match="replay failed: RuntimeError: the replayed step differs"):
            decode_step.make_decoder("graph", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1), cuda=fake)
    finally:
        shift.remove()  # the model is the module's fixture


# --- the decode experiment: one mode's failure is that mode's skip --------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("inject", ["warm-up", "capture", ("rewind", 1)])
def test_decode_experiment_records_the_graph_failure_and_keeps_the_other_modes(tiny, inject):
    if isinstance(inject, tuple):  # the graph decoder's first reset fails; the static decoders' are untouched
        make = decoders(graph={"cuda": FakeCuda(), "rewind": failing_rewind(inject[1])})
    else:
        make = decoders(graph={"cuda": FakeCuda(inject)})
    ctx = quick_ctx(tiny)
    with torch.inference_mode():
        result = kd.run(ctx, make_decoder=make)
    rows = result.tables["decode_cost"]
    assert {r["mode"] for r in rows} == {"eager", "static"} and len(rows) == 2 * len(kd.sweep(ctx))
    phase = inject if isinstance(inject, str) else "reset"
    assert all(f"graph: CUDA graph {phase} failed: InjectedFailure: " in r["skipped_modes"] for r in rows)
    assert any(line.startswith(f"decode graph skipped: CUDA graph {phase} failed") for line in result.summary)


@pytest.mark.slow
def test_any_failure_of_one_mode_keeps_the_rows_of_the_others(tiny):
    """Not a ModeUnavailable: a plain error in a timed call's reset. Static is recorded as failed, with the
    shape and the exception; eager keeps every row."""
    exploding = failing_rewind(1, ValueError("reset exploded"))
    ctx = quick_ctx(tiny)
    with torch.inference_mode():
        result = kd.run(ctx, make_decoder=decoders(static={"rewind": exploding}))
    rows = result.tables["decode_cost"]
    assert {r["mode"] for r in rows} == {"eager"} and len(rows) == len(kd.sweep(ctx))
    assert all("static: failed at prefix=32 batch=1: ValueError: reset exploded" in r["skipped_modes"] for r in rows)


# --- the static step on the meta device: what a CUDA graph capture cannot hold --------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b"])
def test_static_step_of_the_real_architectures_can_be_captured(name):
    """The built-in gpt2 and llama-3.1-8b (full size: the meta device holds no data) run their static
    decode step with no host sync and no CPU tensor in device work: what a CUDA graph capture needs."""
    ctx = meta_ctx(name)
    with torch.no_grad():  # not inference_mode: its tensors bypass the dispatch mode that watches
        dec = decode_step.make_decoder("static", ctx.model, ctx.input_ids(2, 16), ctx.input_ids(2, 1), steps=2)
        assert dec.cache.layers[0].keys.device.type == "meta"
        assert decode_step.host_syncs(dec) == []


def test_static_step_has_no_host_sync():
    """What a CUDA graph capture needs, checked on the CPU: the static step never turns a tensor into a
    Python number (the eager one may; it is never captured)."""
    ctx = ctx_for("tiny-gpt2")
    with torch.no_grad():  # not inference_mode: its tensors bypass the dispatch mode that watches
        dec = decode_step.make_decoder("static", ctx.model, ctx.input_ids(2, 16), ctx.input_ids(2, 1))
        assert decode_step.host_syncs(dec) == []
        # the watch does see a sync: the (untimed) reset reads the cache's device-side length
        assert decode_step.host_syncs(dec.reset) != []


def test_the_watch_sees_what_capture_cannot_hold():
    a = torch.ones(4, device=META)
    assert decode_step.host_syncs(lambda: a.sum().item())[0] == "host sync: aten._local_scalar_dense.default"
    assert decode_step.host_syncs(lambda: a.nonzero())[0] == "host sync: aten.nonzero.default"
    assert decode_step.host_syncs(lambda: bool(a.sum() > 0))[0].startswith("host sync:")
    assert decode_step.host_syncs(lambda: a + torch.tensor(2.0)) == ["CPU tensor in device work: aten.add.Tensor"]
    assert decode_step.host_syncs(lambda: a.cpu())[0] == "device work handed back to the CPU: aten._to_copy.default"
    assert decode_step.host_syncs(lambda: torch.arange(4, device=META) * a) == []


def test_the_watch_sees_a_sync_inside_a_real_model_step():
    """The meta check is not vacuous: a forward hook that reads one value makes the gpt2 step fail it."""
    ctx = meta_ctx("gpt2")
    with torch.no_grad():
        dec = decode_step.make_decoder("static", ctx.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))
        ctx.model.transformer.h[3].register_forward_hook(lambda mod, args, out: out[0].sum().item())
        seen = decode_step.host_syncs(dec)
    assert seen[0] == "host sync: aten._local_scalar_dense.default"
