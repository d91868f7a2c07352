"""KV compaction: every gather method exact on random data, the check that catches a wrong gather, the
workload shapes and the experiment's rows on the CPU (Triton methods skipped with the reason: triton
missing, or its probe launch failing), and a method that fails its first run skipped, not fatal."""
from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from kvreport.runner.core.kv_formula import kv_shape
from kvreport.runner.measure import compaction as kc
from kvreport.runner.measure.experiments import compaction

from kvreport.runner.measure.probes import MIB
from measure_helpers import CPU, ctx_for


@pytest.mark.parametrize("dtype, row", [(torch.float32, 48), (torch.float16, 40), (torch.float16, 3),
                                        (torch.bfloat16, 6)])
def test_compaction_methods_are_correct(dtype, row):
    w = kc.make_workload(n_tensors=6, n_live=5, row=row, dtype=dtype, device=CPU)
    assert kc.is_correct(w, w.naive)
    assert kc.is_correct(w, w.batched)
    # The reference really is "live slots of every tensor, in order".
    ref = torch.stack([torch.stack([w.pool[j, i] for i in w.idx.tolist()]) for j in range(6)])
    assert torch.equal(w.dst, ref)


def test_compaction_check_catches_a_wrong_gather():
    w = kc.make_workload(n_tensors=4, n_live=4, row=16, dtype=torch.float32, device=CPU)
    slots = w.pool.shape[1]
    shifted = (w.idx + 1) % slots

    def wrong_rows():
        torch.index_select(w.pool, 1, shifted, out=w.dst)

    def skips_last_tensor():
        for j in range(w.pool.shape[0] - 1):
            torch.index_select(w.pool[j], 0, w.idx, out=w.dst[j])

    assert not kc.is_correct(w, wrong_rows)
    assert not kc.is_correct(w, skips_last_tensor)  # its NaN poison survives
    assert kc.is_correct(w, w.batched)


def test_workload_shapes():
    assert kc.shape_for(64 << 10, 36864, 1024) == (1, 2)
    assert kc.shape_for(1 << 30, 36864, 1024) == (57, 512)
    assert kc.shape_for(1 << 20, 1024, 256) == (4, 256)


def test_compaction_run_rows():
    ctx = ctx_for("tiny-llama-gqa", copy_roof_gbs=10.0, peak_gbs=None)
    ctx.llc_bytes = 16 * MIB  # not the host's cache: the DRAM-sized point below must not depend on it
    result = compaction.run(ctx)
    rows = result.tables["compaction"]
    # On the CPU the Triton methods are skipped with their reason, in every row and in the summary.
    assert {r["method"] for r in rows} == {"naive", "batched"}
    assert len(rows) == 2 * len(kc.CPU_TARGETS_QUICK)
    assert all("triton" in r["skipped_methods"] and "GPUs only" in r["skipped_methods"] for r in rows)
    assert any(line.startswith("compaction triton skipped") for line in result.summary)
    shape = kv_shape(ctx.config)
    roofs = {(r["op"], r["bytes"]): r for r in result.tables["roof_curve"]}
    for r in rows:
        assert r["correct"]
        assert r["bytes_moved"] == 2 * r["kv_bytes"] == 2 * r["n_requests"] * r["seq_len"] * shape.bytes_per_token(4)
        # every share of roof divides by the copy roof measured at exactly this size, stored beside it
        roof = roofs["copy", r["bytes_moved"]]  # timed interleaved with the methods, at the same size
        assert roof["measured_with"] == "compaction" and roof["n"] == r["n"]
        assert r["roof_gbs"] == roof["gbs"] and r["pct_of_roof"] == pytest.approx(r["gbs"] / roof["gbs"])
        assert r["over_roof"] == (r["pct_of_roof"] > 1.05)
        assert r["pct_of_peak"] is None
        assert r["p25_ms"] <= r["time_ms"] <= r["p75_ms"]
        assert r["host_ms"] == r["time_ms"] and r["dispatch_hidden"] is None  # the CPU: one clock
        assert r["launches"] == (2 * shape.n_layers if r["method"] == "naive" else 1)
        assert r["llc_bytes"] == 16 * MIB and r["dram_sized"] == (r["bytes_moved"] >= 4 * 16 * MIB)
    assert max(r["kv_bytes"] for r in rows) > 10e6 and min(r["kv_bytes"] for r in rows) < 1e6
    assert any(r["dram_sized"] for r in rows)  # the quick run has a DRAM-sized point (>= 4x LLC)


def test_without_triton_the_triton_methods_are_skipped_with_the_reason():
    """triton is optional at run time: with it missing (blocked in a child process), compaction still
    imports and the Triton methods' skip reason says why."""
    blocked = "import sys; sys.modules['triton'] = None; import torch; from kvreport.runner.measure import compaction"
    out = subprocess.run([sys.executable, "-c", f"{blocked}; print(compaction.probe_triton(torch.device('cpu')))"],
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().startswith("triton is not installed"), out.stderr[-2000:]


def test_a_triton_that_cannot_launch_is_the_triton_methods_skip_reason(monkeypatch):
    """Importing triton works, but its first launch fails (no C compiler for its launcher): the Triton
    methods are skipped with that reason, naive and batched keep their rows."""
    import kvreport.runner.measure.triton_gather as tg

    def no_compiler(*args, **kwargs):
        raise RuntimeError("Failed to find C compiler. Please specify via CC environment variable.")

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the probe path, which the CPU otherwise never takes
    monkeypatch.setattr(kc, "_TRITON_PROBED", {})
    monkeypatch.setattr(tg, "gather_rows", no_compiler)
    ctx = ctx_for("tiny-llama-gqa", copy_roof_gbs=10.0, peak_gbs=None)
    result = compaction.run(ctx)
    rows = result.tables["compaction"]
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
