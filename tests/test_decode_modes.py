"""Issue 23 on the CPU: the GPU paths' failure handling and what a CPU can check of GPU code.

- static caches rewound the same way on every supported transformers release (CI runs this file under
  the newest and under the GPU image's 5.17);
- the graph decoder driven through a fake torch.cuda that fails in one phase at a time: each failure is a
  ModeUnavailable naming the phase, and in the experiments that mode's recorded skip while the other
  modes keep their rows; interference falls back graph -> static -> eager and says why;
- the static decode step of the real gpt2 and llama-3.1-8b architectures on the meta device, watched for
  host syncs and CPU tensors in device work (what CUDA graph capture cannot hold);
- interference sizing for an 8B model on an H200-like device, Triton's probe launch, and `kvreport run`'s
  exit status when an experiment failed.
"""
from __future__ import annotations

import contextlib

import pytest
import torch

from kvreport.runner.measure import compaction as kc
from kvreport.runner.measure import decode_step
from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.experiments import kv_compact_v2
from kvreport.runner.measure.experiments import kv_decode_cost_v2 as kd
from kvreport.runner.measure.experiments import kv_interference_v3 as interference
from kvreport.runner.measure.kv_cache import forward_with_cache
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")
META = torch.device("meta")


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-gpt2", CPU, torch.float32)


def make_ctx(loaded, device=CPU, dtype=torch.float32) -> RunContext:
    return RunContext(run_id=1, device=device, dtype=dtype, loaded=loaded, quick=True,
                      shared={"copy_roof_gbs": 10.0, "peak_gbs": None})


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


def test_static_reset_refuses_to_report_a_wrong_length(tiny, monkeypatch):
    """The read-back after the rewind is what catches a release whose counters moved elsewhere."""
    ctx = make_ctx(tiny)
    with torch.no_grad():
        dec = decode_step.make_decoder("static", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))
        dec()
        layer = dec.cache.layers[1]
        monkeypatch.setattr(layer, "get_seq_length", lambda: 9)  # a counter the rewind did not know about
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


def test_static_mode_refuses_a_layer_type_it_does_not_know(tiny, monkeypatch):
    from transformers import cache_utils

    class RecurrentLayer(cache_utils.StaticLayer):  # a subclass may hold more state than the counters
        pass

    real = decode_step._static_cache

    def with_unknown_layer(*args):
        cache = real(*args)
        cache.layers[0] = RecurrentLayer(max_cache_len=cache.layers[0].max_cache_len)
        return cache

    monkeypatch.setattr(decode_step, "_static_cache", with_unknown_layer)
    ctx = make_ctx(tiny)
    with pytest.raises(decode_step.ModeUnavailable, match="RecurrentLayer: no known way to rewind it"):
        decode_step.make_decoder("static", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))


# --- the graph decoder under a fake torch.cuda ---------------------------------------------------------

class InjectedFailure(RuntimeError):
    pass


class FakeCuda:
    """The part of torch.cuda the graph decoder drives, on the CPU: streams and captures are no-ops (a
    'captured' step simply runs), and `fail_at` makes one phase raise: "warm-up" (entering the side
    stream), "capture" (ending the capture, as a host sync inside it would), "replay", or "sync" (an
    asynchronous error surfacing at the first synchronise)."""

    def __init__(self, fail_at: str | None = None):
        self.fail_at = fail_at
        self.calls: list[str] = []
        fake = self

        class Stream:
            def __init__(self, device=None):
                fake.calls.append("Stream")

            def wait_stream(self, other):
                pass

        class CUDAGraph:
            def replay(self):
                fake.calls.append("replay")
                if fake.fail_at == "replay":
                    raise InjectedFailure("injected replay failure")

        self.Stream, self.CUDAGraph = Stream, CUDAGraph

    def current_stream(self, device=None):
        return self.Stream(device)

    @contextlib.contextmanager
    def stream(self, s):
        self.calls.append("stream")
        if self.fail_at == "warm-up":
            raise InjectedFailure("injected warm-up failure")
        yield

    @contextlib.contextmanager
    def graph(self, g):
        self.calls.append("capture")
        yield
        if self.fail_at == "capture":
            raise InjectedFailure("operation not permitted when stream is capturing (injected)")

    def synchronize(self, device=None):
        self.calls.append("synchronize")
        if self.fail_at == "sync":
            raise InjectedFailure("an illegal memory access was encountered (injected)")


@pytest.fixture
def fake_cuda(monkeypatch):
    def install(fail_at=None):
        fake = FakeCuda(fail_at)
        monkeypatch.setattr(decode_step, "CUDA", fake)
        monkeypatch.setattr(decode_step, "graph_unavailable", lambda device: None)
        return fake
    return install


def fail_rewind_at_call(monkeypatch, n: int):
    """The static cache's rewind raises on its n-th call (1 = the reset inside the warm-up)."""
    real, count = decode_step.rewind_static_cache, [0]

    def rewind(cache, length):
        count[0] += 1
        if count[0] == n:
            raise InjectedFailure("injected reset failure")
        real(cache, length)

    monkeypatch.setattr(decode_step, "rewind_static_cache", rewind)


def test_graph_decoder_runs_every_phase_under_the_fake(tiny, fake_cuda):
    fake = fake_cuda()
    ctx = make_ctx(tiny)
    with torch.no_grad():
        dec = decode_step.make_decoder("graph", tiny.model, ctx.input_ids(2, 8), ctx.input_ids(2, 1))
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
def test_a_failure_in_any_graph_phase_is_a_mode_unavailable_naming_it(tiny, fake_cuda, monkeypatch, phase, inject):
    if isinstance(inject, tuple):
        fake_cuda()
        fail_rewind_at_call(monkeypatch, inject[1])
    else:
        fake_cuda(inject)
    ctx = make_ctx(tiny)
    with torch.no_grad(), pytest.raises(decode_step.ModeUnavailable) as err:
        decode_step.make_decoder("graph", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))
    assert str(err.value).startswith(f"CUDA graph {phase} failed: InjectedFailure: "), str(err.value)


def test_a_replay_that_computes_something_else_is_refused(tiny, fake_cuda, monkeypatch):
    fake_cuda()
    real_call = decode_step.StaticDecoder.__call__
    calls = [0]

    def drifting(self):  # the captured step computes different logits from the warm-up's
        real_call(self)
        calls[0] += 1
        if calls[0] == 3:  # warm-up, warm-up, capture
            self.logits = self.logits + 1.0

    monkeypatch.setattr(decode_step.StaticDecoder, "__call__", drifting)
    ctx = make_ctx(tiny)
    with torch.no_grad(), pytest.raises(decode_step.ModeUnavailable, match="replay failed: RuntimeError: the replayed step differs"):
        decode_step.make_decoder("graph", tiny.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))


@pytest.mark.parametrize("inject", ["warm-up", "capture", ("rewind", 1)])
def test_decode_experiment_records_the_graph_failure_and_keeps_the_other_modes(tiny, fake_cuda, monkeypatch, inject):
    if isinstance(inject, tuple):
        fake_cuda()
        # every graph decoder's first reset fails; the static decoders' resets are untouched
        real_init = decode_step.GraphDecoder.__init__

        def init(self, *a, **kw):
            fail_rewind_at_call(monkeypatch, 1)
            try:
                real_init(self, *a, **kw)
            finally:
                monkeypatch.setattr(decode_step, "rewind_static_cache", REAL_REWIND)

        monkeypatch.setattr(decode_step.GraphDecoder, "__init__", init)
    else:
        fake_cuda(inject)
    ctx = make_ctx(tiny)
    with torch.inference_mode():
        result = kd.run(ctx)
    rows = result.tables["kv_decode_cost_v2"]
    assert {r["mode"] for r in rows} == {"eager", "static"} and len(rows) == 2 * len(kd.sweep(ctx))
    phase = inject if isinstance(inject, str) else "reset"
    assert all(f"graph: CUDA graph {phase} failed: InjectedFailure: " in r["skipped_modes"] for r in rows)
    assert any(line.startswith(f"decode graph skipped: CUDA graph {phase} failed") for line in result.summary)


REAL_REWIND = decode_step.rewind_static_cache


def test_any_failure_of_one_mode_keeps_the_rows_of_the_others(tiny, monkeypatch):
    """Not a ModeUnavailable: a plain error in a timed call's reset. Static is recorded as failed, with the
    shape and the exception; eager keeps every row."""
    def broken_reset(self):
        raise ValueError("reset exploded")

    monkeypatch.setattr(decode_step.StaticDecoder, "reset", broken_reset)
    ctx = make_ctx(tiny)
    with torch.inference_mode():
        result = kd.run(ctx)
    rows = result.tables["kv_decode_cost_v2"]
    assert {r["mode"] for r in rows} == {"eager"} and len(rows) == len(kd.sweep(ctx))
    assert all("static: failed at prefix=32 batch=1: ValueError: reset exploded" in r["skipped_modes"] for r in rows)


def test_interference_falls_back_from_graph_to_static_to_eager_and_says_why(tiny, fake_cuda, monkeypatch):
    fake_cuda("capture")
    monkeypatch.setitem(interference.DECODE_MODES, "cpu", ("graph", "static", "eager"))
    ctx = make_ctx(tiny)
    result = interference.run(ctx)
    rows = result.tables["kv_interference_v3"]
    assert {r["decode_mode"] for r in rows} == {"static"}
    assert {r["decode_fallback"] for r in rows} == {
        "graph: CUDA graph capture failed: InjectedFailure: operation not permitted when stream is capturing (injected)"}

    def broken_call(self):
        raise InjectedFailure("static step exploded")

    monkeypatch.setattr(decode_step.StaticDecoder, "__call__", broken_call)  # the graph's warm-up uses it too
    result = interference.run(make_ctx(tiny))
    rows = result.tables["kv_interference_v3"]
    assert {r["decode_mode"] for r in rows} == {"eager"} and all(r["correct"] for r in rows)
    fallback = rows[0]["decode_fallback"]
    assert fallback.startswith("graph: CUDA graph warm-up failed: InjectedFailure: static step exploded; ")
    assert "static: failed: InjectedFailure: static step exploded" in fallback
    assert any("fallbacks" in line for line in result.summary)


def test_interference_without_any_decode_mode_fails_with_every_reason(tiny, monkeypatch):
    def broken(*args, **kwargs):
        raise InjectedFailure("no decoder")

    monkeypatch.setattr(interference, "make_decoder", broken)
    with pytest.raises(RuntimeError, match="no decode mode ran: static: failed: InjectedFailure: no decoder; eager: failed"):
        interference.run(make_ctx(tiny))


# --- the static step on the meta device -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt2", "llama-3.1-8b"])
def test_static_step_of_the_real_architectures_can_be_captured(name):
    """The built-in gpt2 and llama-3.1-8b (full size: the meta device holds no data) run their static
    decode step with no host sync and no CPU tensor in device work: what a CUDA graph capture needs."""
    loaded = load_model(name, META, torch.bfloat16)
    ctx = make_ctx(loaded, device=META, dtype=torch.bfloat16)
    with torch.no_grad():  # not inference_mode: its tensors bypass the dispatch mode that watches
        dec = decode_step.make_decoder("static", loaded.model, ctx.input_ids(2, 16), ctx.input_ids(2, 1), steps=2)
        assert dec.cache.layers[0].keys.device.type == "meta"
        assert decode_step.host_syncs(dec) == []


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
    loaded = load_model("gpt2", META, torch.bfloat16)
    ctx = make_ctx(loaded, device=META, dtype=torch.bfloat16)
    with torch.no_grad():
        dec = decode_step.make_decoder("static", loaded.model, ctx.input_ids(1, 8), ctx.input_ids(1, 1))
        loaded.model.transformer.h[3].register_forward_hook(lambda mod, args, out: out[0].sum().item())
        seen = decode_step.host_syncs(dec)
    assert seen[0] == "host sync: aten._local_scalar_dense.default"


# --- interference sizing on a GPU -----------------------------------------------------------------------

H200_READ_GBS = 4000.0   # what a well-fed decode step and a good gather reach of the H200's 4.8 TB/s
LLAMA_8B_STEP_BYTES = 15_000_000_000  # llama-3.1-8b at bf16: 16 GB of weights less the 1 GB input table
FREE_AFTER_LOAD = 120_000_000_000  # ~141 GB card, the model and its caches loaded


def test_gpu_sizing_balances_an_8b_model():
    step_ms = LLAMA_8B_STEP_BYTES / (H200_READ_GBS * 1e6)  # ~3.75 ms per step
    ms_per_live_byte = 2 / (H200_READ_GBS * 1e6)  # a gather reads and writes each live byte
    steps, cap = interference.gpu_sizing(step_ms, ms_per_live_byte, FREE_AFTER_LOAD, max_steps=4)
    assert cap == int(0.6 * FREE_AFTER_LOAD) // 4 and 1 <= steps < 4
    decode_ms = steps * step_ms
    live = min(cap, decode_ms / ms_per_live_byte)  # what balanced_workload aims for
    assert not interference.cap_binds(live, cap)
    assert 0.5 <= live * ms_per_live_byte / decode_ms <= 2.0
    # The fixed 4 GiB cap and four steps it replaces: balance 0.15, outside 0.5-2x.
    old = (4 << 30) * ms_per_live_byte / (4 * step_ms)
    assert old < 0.5


def test_gpu_sizing_gives_a_small_model_every_step_and_says_when_the_cap_binds():
    ms_per_live_byte = 2 / (H200_READ_GBS * 1e6)
    steps, cap = interference.gpu_sizing(0.15, ms_per_live_byte, FREE_AFTER_LOAD, max_steps=4)  # gpt2
    assert steps == 4 and not interference.cap_binds(4 * 0.15 / ms_per_live_byte, cap)
    # A model whose one step outlasts any gather free memory allows: one step, and the cap binds.
    steps, cap = interference.gpu_sizing(200.0, ms_per_live_byte, 8_000_000_000, max_steps=4)
    live = min(cap, 200.0 / ms_per_live_byte)
    assert steps == 1 and live == cap and interference.cap_binds(live, cap)
    assert live * ms_per_live_byte / 200.0 < 0.5  # unbalanced, and recorded so instead of resized


def test_the_gpu_pilot_path_sizes_steps_and_cap_from_free_memory(tiny, monkeypatch):
    """The CUDA branch of the decode part's set-up, run on the CPU: a one-step pilot, a pilot gather, the
    free memory read, then the decoder rebuilt with the sized steps."""
    class CudaLike(RunContext):
        is_cuda = True

    free = 1 << 30
    monkeypatch.setattr(interference, "cuda_free_bytes", lambda device: (free, 2 * free))
    monkeypatch.setattr(interference, "_settle", lambda ctx: None)
    monkeypatch.setitem(interference.COMPACT_PILOT_LIVE_BYTES, "cuda", 1 << 20)
    ctx = CudaLike(run_id=1, device=CPU, dtype=torch.float32, loaded=tiny, quick=True)
    built = []
    real = interference.make_decoder
    monkeypatch.setattr(interference, "make_decoder", lambda *a: built.append(a[-1]) or real(*a))
    with torch.inference_mode():
        dec, pilot_ms, cap, per_byte = interference._decode_part(ctx, "static", 1, 16, max_steps=3)
    assert cap == int(0.6 * free) // 4 and per_byte > 0 and pilot_ms > 0
    assert built[0] == 1 and dec.steps == built[-1] and 1 <= dec.steps <= 3
    assert len(built) == (1 if dec.steps == 1 else 2)


def test_resize_is_skipped_when_the_cap_binds(tiny):
    """balanced_workload stops growing the gather at its cap instead of rebuilding the same workload."""
    sizes = []

    def slow_gather(w):  # 1 ms per live MiB: the decode part would need 50 MiB, the cap is 16 MiB
        sizes.append(w.kv_bytes)
        return w.kv_bytes / 2**20

    cap = 16 << 20
    work, ms = interference.balanced_workload(make_ctx(tiny), 50.0, time_gather=slow_gather, cap=cap)
    assert sizes[0] == pytest.approx(8 << 20, rel=0.05)  # the CPU pilot
    assert len(sizes) == 2 and sizes[1] <= cap and interference.cap_binds(sizes[1], cap)  # grown once, to the cap


# --- Triton's probe launch ------------------------------------------------------------------------------

def test_a_triton_that_cannot_launch_is_the_triton_methods_skip_reason(tiny, monkeypatch):
    """Importing triton works, but its first launch fails (no C compiler for its launcher): the Triton
    methods are skipped with that reason, naive and batched keep their rows."""
    import kvreport.runner.measure.triton_gather as tg

    def no_compiler(*args, **kwargs):
        raise RuntimeError("Failed to find C compiler. Please specify via CC environment variable.")

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the probe path, which the CPU otherwise never takes
    monkeypatch.setattr(kc, "_TRITON_PROBED", {})
    monkeypatch.setattr(tg, "gather_rows", no_compiler)
    ctx = make_ctx(load_model("tiny-llama-gqa", CPU, torch.float32))
    result = kv_compact_v2.run(ctx)
    rows = result.tables["kv_compact_v2"]
    assert {r["method"] for r in rows} == {"naive", "batched"} and all(r["correct"] for r in rows)
    why = "the Triton gather's probe launch failed: RuntimeError: Failed to find C compiler."
    assert all(why in r["skipped_methods"] for r in rows)
    assert list(kc._TRITON_PROBED.values()) == [why + " Please specify via CC environment variable."]


def test_a_method_that_raises_on_its_first_run_is_skipped_not_fatal():
    w = kc.make_workload(n_tensors=4, n_live=3, row=16, dtype=torch.float32, device=CPU)

    def broken():
        raise RuntimeError("kernel launch failed")

    w.broken = broken
    ok, correct, skipped = kc.checked_methods(w, ("naive", "batched", "broken"))
    assert set(ok) == {"naive", "batched"} and correct == {"naive": True, "batched": True}
    assert skipped["broken"] == "failed its first run: RuntimeError: kernel launch failed"
    assert "triton" in kc.checked_methods(w)[2]  # on the CPU the Triton methods are skipped with a reason


# --- `kvreport run` exits non-zero when an experiment failed ----------------------------------------------

@pytest.mark.slow
def test_run_exits_1_and_lists_the_failed_experiments(tmp_path, monkeypatch, capsys):
    import types

    from kvreport.runner import cli
    from kvreport.runner.measure import experiments as ex
    from kvreport.runner.measure.experiments import Experiment, Result, Skip

    def module(name, fn):
        return types.SimpleNamespace(NAME=name, ITERATION=1, ORDER=0, TABLES=(), run=fn)

    def boom(ctx):
        raise ZeroDivisionError("the measurement divided by zero")

    def skip(ctx):
        raise Skip("needs a GPU")

    fakes = [Experiment("fine", "1", 1, module("fine", lambda ctx: Result({}, ["fine ran"]))),
             Experiment("broken", "1", 2, module("broken", boom)),
             Experiment("skipping", "1", 3, module("skipping", skip))]
    monkeypatch.setattr(ex, "registry", lambda: fakes)
    db = tmp_path / "k.duckdb"
    with pytest.raises(SystemExit) as code:
        cli.main(["run", "--model", "tiny-gpt2", "--device", "cpu", "--quick", "--iterations", "1", "--db", str(db)])
    assert code.value.code == 1
    out = capsys.readouterr().out
    assert "FAILED: 1 of 3 experiments" in out
    assert "  - broken: ZeroDivisionError: the measurement divided by zero" in out
    assert "skipping" not in out.split("FAILED: 1 of 3")[1]  # a skip is not a failure

    monkeypatch.setattr(ex, "registry", lambda: [fakes[0], fakes[2]])
    cli.main(["run", "--model", "tiny-gpt2", "--device", "cpu", "--quick", "--iterations", "1", "--db", str(db)])
    assert "FAILED" not in capsys.readouterr().out  # returned normally: exit status 0
