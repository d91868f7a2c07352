"""Interference of compaction and decode: the sanity bound, a failed compaction re-raised, the threaded
run on the CPU, the compaction sized to the decode part, the decode part's fallback graph -> static ->
eager (a fake torch.cuda passed in, tests/fake_cuda.py), and the GPU sizing of an 8B model on an
H200-like device, its pilot path driven on the CPU with the probes passed in."""
from __future__ import annotations


import pytest
import torch
from transformers import StaticCache

from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.experiments import interference as interference

from fake_cuda import FakeCuda, InjectedFailure, decoders
from measure_helpers import CPU, make_ctx

NO_HEADLINE_ROOF = {"copy_roof_gbs": 10.0, "peak_gbs": None}  # skip measuring the headline roof: not under test


def _t(ms):
    return {"median_ms": ms, "p25_ms": ms * 0.98, "p75_ms": ms * 1.02}


def test_bound_flags_the_seed_pattern():
    # the seed: compaction alone 1.289 ms, compaction + decode 0.903 ms
    out = interference.check_bounds({"compact": _t(1.289), "decode": _t(0.5), "both": _t(0.903)},
                                    {"compact": 66_000_000, "decode": 1_000_000, "both": 67_000_000}, None)
    assert out["both"]["bound_violated"] and "compact alone" in out["both"]["bound_note"]
    assert out["both"]["bound_ms"] == pytest.approx(1.289)
    assert not out["compact"]["bound_violated"] and not out["decode"]["bound_violated"]


def test_bound_accepts_overlap_and_noise_but_not_the_roof():
    times = {"compact": _t(1.0), "decode": _t(2.0), "both": _t(1.97)}  # within 5% of perfect overlap
    ok = interference.check_bounds(times, {"compact": 10**6, "decode": 10**6, "both": 2 * 10**6}, roof_gbs=100.0)
    assert not any(v["bound_violated"] for v in ok.values())
    # each part alone moves 1 MB in 1 ms at a 1 GB/s roof: both at once cannot move 2 MB in 1 ms
    par = {"compact": _t(1.0), "decode": _t(1.0), "both": _t(1.0)}
    roof = interference.check_bounds(par, {"compact": 10**6, "decode": 10**6, "both": 2 * 10**6}, roof_gbs=1.0)
    assert roof["both"]["bound_violated"] and "bandwidth ceiling" in roof["both"]["bound_note"]
    assert roof["both"]["bound_ms"] == pytest.approx(2.0)
    assert not roof["compact"]["bound_violated"]  # alone modes get no roof bound
    # a part that beats the roof disproves it as a ceiling: its own rate (4 GB/s) is the ceiling then
    fast = {"compact": _t(1.0), "decode": _t(2.0), "both": _t(2.0)}
    beat = interference.check_bounds(fast, {"compact": 4 * 10**6, "decode": 0, "both": 4 * 10**6}, roof_gbs=1.0)
    assert not beat["both"]["bound_violated"]
    peak = interference.check_bounds(times, {"compact": 10**9, "decode": 10**6, "both": 10**9 + 10**6},
                                     roof_gbs=None, peak_gbs=100.0)  # 1 GB in 1 ms = 1,000 GB/s > peak
    assert peak["compact"]["bound_violated"] and "theoretical peak" in peak["compact"]["bound_note"]


def _shared(inflation, lost, balanced=True):
    return {"concurrency": "threads", "decode_mode": "eager", "balance_ratio": 1.1 if balanced else 3.0,
            "balanced": balanced, "decode_inflation": inflation, "compact_bw_lost": lost}


def test_the_run_summary_judges_as_the_findings_do():
    """The terminal line says what headline_interference.sql says: a violated bound is a measurement error and
    impossible contention figures are too noisy to say; neither prints as a result."""
    ok = {"bound_violated": False, "bound_note": None}
    bad = {"bound_violated": True, "bound_note": "faster than compact alone (1.289 ms)"}
    violated = interference.summary_line(1.289, 0.5, 0.903, bad, _shared(0.4, -2.42))
    assert "measurement error" in violated and "-242%" not in violated and "SANITY" not in violated
    noisy = interference.summary_line(1.0, 1.0, 1.5, ok, _shared(1.5, -2.42))
    assert "too noisy to say" in noisy and "lost -242%" in noisy  # the numbers, named as noise
    faster = interference.summary_line(1.0, 1.0, 1.5, ok, _shared(0.8, 0.2))
    assert "too noisy to say" in faster
    unbalanced = interference.summary_line(1.0, 3.0, 3.2, ok, _shared(1.2, 0.3, balanced=False))
    assert "cannot show contention" in unbalanced and "lost" not in unbalanced
    good = interference.summary_line(1.0, 1.0, 1.5, ok, _shared(1.3, 0.25))
    assert good.endswith("decode inflated 1.30x, compaction bandwidth lost 25% when run together")


def test_threaded_both_reraises_a_failed_compaction(tiny):
    def broken():
        raise RuntimeError("gather failed")

    variants, concurrency, _, _ = interference._variants(make_ctx(tiny), broken, lambda: None)
    assert concurrency == "threads"
    with pytest.raises(RuntimeError, match="gather failed"):
        variants["both"]()


@pytest.mark.slow
def test_interference_runs_on_cpu_with_threads(tiny):
    ctx = make_ctx(tiny, shared=dict(NO_HEADLINE_ROOF))
    with torch.inference_mode():
        result = interference.run(ctx)
    rows = {r["mode"]: r for r in result.tables["interference"]}
    assert set(rows) == {"compact", "decode", "both"}
    assert all(r["concurrency"] == "threads" and r["correct"] for r in rows.values())
    assert all(r["decode_mode"] == "static" for r in rows.values())  # the fastest mode the CPU has
    assert rows["both"]["bytes_moved"] == rows["compact"]["bytes_moved"] + rows["decode"]["bytes_moved"]
    assert rows["decode"]["decode_bytes"] >= rows["decode"]["decode_steps"] * tiny.step_weight_bytes()
    assert len({r["n"] for r in rows.values()}) == 1
    assert interference.MIN_REPEATS <= rows["both"]["n"] <= interference.DECODE["cpu", True][4]
    assert rows["both"]["bound_ms"] >= max(rows["compact"]["time_ms"], rows["decode"]["time_ms"])
    both = rows["both"]
    assert both["balance_ratio"] == pytest.approx(rows["compact"]["time_ms"] / rows["decode"]["time_ms"])
    assert both["balanced"] == (0.5 <= both["balance_ratio"] <= 2.0)
    assert both["decode_inflation"] == pytest.approx(both["decode_in_both_ms"] / rows["decode"]["time_ms"])
    assert both["compact_bw_lost"] == pytest.approx(1 - rows["compact"]["time_ms"] / both["compact_in_both_ms"])
    roofs = {(r["op"], r["bytes"]): r["gbs"] for r in result.tables["roof_curve"]}
    assert rows["compact"]["roof_gbs"] == roofs["copy", rows["compact"]["bytes_moved"]]  # same size, same op
    # decode and both mix reads and writes of different sizes: no same-size same-op roof, so no share of one
    assert all(rows[m]["roof_gbs"] is None and rows[m]["pct_of_roof"] is None for m in ("decode", "both"))


@pytest.mark.parametrize("ms_per_mib, decode_ms", [(1.0, 3.0), (0.25, 6.0), (5.0, 0.5)])
def test_compaction_is_sized_to_the_decode_part(tiny, ms_per_mib, decode_ms):
    """A gather whose time grows with its size (plus a fixed launch cost) is sized to land within the
    0.5-2x balance of the decode part, from any pilot size."""
    def fake_gather(w):
        return 0.02 + ms_per_mib * w.kv_bytes / 2**20

    work, ms = interference.balanced_workload(make_ctx(tiny), decode_ms, time_gather=fake_gather)
    assert ms == fake_gather(work)
    assert 0.5 <= ms / decode_ms <= 2.0


# --- the decode part's mode: graph, then static, then eager ---------------------------------------------

@pytest.mark.slow
def test_interference_falls_back_from_graph_to_static_to_eager_and_says_why(tiny):
    def run():  # the CUDA order of modes, on the CPU: the graph decoder drives a fake whose capture fails
        return interference.run(make_ctx(tiny, shared=dict(NO_HEADLINE_ROOF)), modes=("graph", "static", "eager"),
                                make_decoder=decoders(graph={"cuda": FakeCuda("capture")}))

    result = run()
    rows = result.tables["interference"]
    assert {r["decode_mode"] for r in rows} == {"static"}
    assert {r["decode_fallback"] for r in rows} == {
        "graph: CUDA graph capture failed: InjectedFailure: operation not permitted when stream is capturing (injected)"}

    def explode_on_static_steps(model, args, kwargs):  # the prefill runs; every one-token static step fails
        if args[0].shape[1] == 1 and any(isinstance(v, StaticCache) for v in kwargs.values()):
            raise InjectedFailure("static step exploded")

    hook = tiny.model.register_forward_pre_hook(explode_on_static_steps, with_kwargs=True)
    try:  # the graph's warm-up runs the static step too
        result = run()
    finally:
        hook.remove()  # the model is the module's fixture
    rows = result.tables["interference"]
    assert {r["decode_mode"] for r in rows} == {"eager"} and all(r["correct"] for r in rows)
    fallback = rows[0]["decode_fallback"]
    assert fallback.startswith("graph: CUDA graph warm-up failed: InjectedFailure: static step exploded; ")
    assert "static: failed: InjectedFailure: static step exploded" in fallback
    assert any("fallbacks" in line for line in result.summary)


def test_interference_without_any_decode_mode_fails_with_every_reason(tiny):
    def broken(*args, **kwargs):
        raise InjectedFailure("no decoder")

    with pytest.raises(RuntimeError, match="no decode mode ran: static: failed: InjectedFailure: no decoder; eager: failed"):
        interference.run(make_ctx(tiny, shared=dict(NO_HEADLINE_ROOF)), make_decoder=broken)


# --- sizing on a GPU ------------------------------------------------------------------------------------

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


def test_the_gpu_pilot_path_sizes_steps_and_cap_from_free_memory(tiny):
    """The CUDA branch of the decode part's set-up, run on the CPU: a one-step pilot, a pilot gather, the
    free memory read, then the decoder rebuilt with the sized steps. The device probes (free memory, the
    settle) and a small pilot gather are passed in."""
    class CudaLike(RunContext):
        is_cuda = True

    free = 1 << 30
    ctx = CudaLike(run_id=1, device=CPU, dtype=torch.float32, loaded=tiny, quick=True)
    built = []

    def recording(*args):  # the steps each decoder was built with
        built.append(args[-1])
        return interference.make_decoder(*args)

    with torch.inference_mode():
        dec, pilot_ms, cap, per_byte = interference._decode_part(
            ctx, "static", 1, 16, max_steps=3, make_decoder=recording, free_bytes=lambda device: (free, 2 * free),
            settle=lambda ctx: None, pilot_live_bytes=1 << 20)
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
