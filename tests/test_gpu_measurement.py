"""Issue 11 on the CPU: the timing statistics, the roof byte counts and same-size lookups, the Triton row
gather under Triton's interpreter, and the device-state reader's handling of a missing NVML."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
import torch
import triton.language as tl  # in the [test] extra: CI runs the Triton tests, never skips them

from kvreport.runner.measure import ceilings, timing
from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")


# --- timing statistics ------------------------------------------------------------------------------

def test_summarize_on_fixed_samples():
    t = timing.summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (t.median_ms, t.p25_ms, t.p75_ms, t.min_ms, t.max_ms, t.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert t.rel_spread == pytest.approx(2 / 3) and t.wide
    small = timing.summarize([2.0, 1.0, 9.0])  # fewer than 4 samples: the extremes stand in for quartiles
    assert (small.median_ms, small.p25_ms, small.p75_ms) == (2.0, 1.0, 9.0)
    assert not timing.summarize([10.0, 10.5, 10.2, 10.1]).wide
    with pytest.raises(ValueError):
        timing.summarize([])


def test_host_times_are_kept_beside_device_times():
    t = timing.summarize_calls([1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 20.0, 30.0, 40.0, 50.0], [True, True, False, True, True])
    assert t.median_ms == 3.0 and t.host.median_ms == 30.0 and t.dispatch_hidden == pytest.approx(0.8)
    cols = t.host_columns()
    assert cols == {"host_ms": 30.0, "host_p25_ms": 20.0, "host_p75_ms": 40.0, "dispatch_hidden": False}
    assert timing.summarize_calls([1.0] * 4, [2.0] * 4, [True] * 4).host_columns()["dispatch_hidden"] is True
    cpu = timing.summarize_calls([1.0, 2.0], [1.0, 2.0])
    assert cpu.host_columns()["dispatch_hidden"] is None  # no device-side lead on the CPU


def test_cpu_clock_is_one_measurement_and_the_warmup_is_dropped():
    calls = []
    t = timing.time_fn(lambda: calls.append(1), CPU, warmup=2, repeats=5)
    assert len(calls) == 7 and t.n == 5
    assert t.host.median_ms == t.median_ms and t.dispatch_hidden is None


def test_device_lead_grows_to_cover_the_slowest_dispatch_and_is_capped():
    clock = timing._Clock(CPU)
    assert clock.lead_ms == timing.LEAD_FLOOR_MS
    clock.learn(2.0)
    assert clock.lead_ms == pytest.approx(timing.LEAD_FACTOR * 2.0 + timing.LEAD_FLOOR_MS)
    clock.learn(0.1)  # a faster dispatch never shrinks it
    assert clock.lead_ms == pytest.approx(timing.LEAD_FACTOR * 2.0 + timing.LEAD_FLOOR_MS)
    clock.learn(1e6)
    assert clock.lead_ms == timing.LEAD_CAP_MS


# --- roofs --------------------------------------------------------------------------------------------

def _fixed_timing(ms):
    def fake_time_fn(fn, device, **kw):
        fn()
        return timing.summarize_calls([ms * 0.9, ms, ms, ms * 1.25], [ms] * 4)
    return fake_time_fn


@pytest.mark.parametrize("op", ["copy", "read"])
def test_roof_byte_counts(monkeypatch, op):
    """copy moves `bytes` in all (half read, half written: buffers of bytes/2); read reads `bytes`."""
    allocated = []
    real_empty = torch.empty

    def spy_empty(*shape, **kw):
        t = real_empty(*shape, **kw)
        allocated.append(t.numel() * t.element_size())
        return t

    monkeypatch.setattr(torch, "empty", spy_empty)  # counts the buffers the roof allocates
    nbytes = 8 << 20
    r = ceilings.measure_roof(CPU, op, nbytes, repeats=4, rounds=2, timer=_fixed_timing(2.0))
    assert r["op"] == op and r["bytes"] == nbytes and r["n"] == 4 and r["rounds"] == 2
    assert r["gbs"] == pytest.approx(nbytes / 2e-3 / 1e9)  # bytes over the median time
    t = timing.summarize([1.8, 2.0, 2.0, 2.5])
    assert r["p25_gbs"] == pytest.approx(nbytes / t.p75_ms / 1e6)  # the slow quartile of time = low bandwidth
    assert r["p75_gbs"] == pytest.approx(nbytes / t.p25_ms / 1e6)
    assert r["flushed"] and r["llc_bytes"] > 0 and r["threads"] == torch.get_num_threads()
    src = nbytes // 2 if op == "copy" else nbytes
    assert allocated[0] == src  # the source buffer; a copy's destination is empty_like(source)


def test_unknown_roof_op_is_refused():
    with pytest.raises(ValueError, match="roof op"):
        ceilings.measure_roof(CPU, "write", 1 << 20)


def test_same_size_roof_is_measured_once_and_flags_above_105_percent(monkeypatch):
    measured = []

    def fake_roof(device, op, nbytes, **kw):
        measured.append((op, nbytes))
        return {"op": op, "bytes": nbytes, "gbs": 10.0}

    monkeypatch.setattr(ceilings, "measure_roof", fake_roof)
    ctx = RunContext(run_id=1, device=CPU, dtype=torch.float32, loaded=None, quick=True)
    a = ceilings.pct_of_roof(ctx, "copy", 1000, 10.4)
    b = ceilings.pct_of_roof(ctx, "copy", 1000, 10.6)
    c = ceilings.pct_of_roof(ctx, "read", 1000, 5.0)
    assert measured == [("copy", 1000), ("read", 1000)]  # one measurement per (op, size)
    assert (a["pct_of_roof"], a["over_roof"]) == (pytest.approx(1.04), False)
    assert (b["pct_of_roof"], b["over_roof"]) == (pytest.approx(1.06), True)
    assert c["roof_gbs"] == 10.0 and c["pct_of_roof"] == 0.5
    assert [r["op"] for r in ceilings.new_roof_rows(ctx)] == ["copy", "read"]
    assert ceilings.new_roof_rows(ctx) == []  # each point is stored once, by the experiment that measured it


@pytest.mark.slow
def test_device_ceilings_fills_the_roof_curve_at_the_compaction_sizes():
    from kvreport.runner.measure.compaction import planned_workloads
    from kvreport.runner.measure.experiments import device_ceilings

    ctx = RunContext(run_id=1, device=CPU, dtype=torch.float32, loaded=load_model("tiny-gpt2", CPU, torch.float32),
                     quick=True)
    result = device_ceilings.run(ctx)
    curve = result.tables["roof_curve"]
    sizes = sorted(p.bytes_moved for p in planned_workloads(ctx))
    assert sorted(r["bytes"] for r in curve if r["op"] == "copy") == sizes
    assert sorted(r["bytes"] for r in curve if r["op"] == "read") == sizes
    assert all(r["gbs"] > 0 and r["p25_gbs"] <= r["gbs"] <= r["p75_gbs"] for r in curve)
    assert result.tables["device_ceilings"][0]["llc_bytes"] == curve[0]["llc_bytes"]


# --- the Triton row gather, under Triton's interpreter ------------------------------------------------

TRITON_CHECK = textwrap.dedent("""
    import json, os
    assert os.environ["TRITON_INTERPRET"] == "1"
    import torch
    from kvreport.runner.measure import compaction
    from kvreport.runner.measure.triton_gather import gather_rows, launch_config
    out = {"cases": [], "workloads": []}
    g = torch.Generator().manual_seed(7)
    # odd row lengths (3 halves = 6 bytes: 16-bit words), rows not a multiple of the block, one row that
    # is exactly a block (the unmasked EVEN path), several blocks per row, bf16 and float32
    for dtype, rows, width, n in [(torch.float16, 7, 3, 5), (torch.float32, 9, 4099, 4),
                                  (torch.bfloat16, 5, 8192, 3), (torch.float32, 13, 4096, 13),
                                  (torch.float16, 11, 1, 2), (torch.int8, 6, 37, 6)]:
        src = (torch.randn(rows, width, generator=g) * 50).to(dtype)
        idx = torch.randperm(rows, generator=g)[:n]
        dst = torch.full((n, width), -7, dtype=dtype) if dtype == torch.int8 else \\
            torch.full((n, width), float("nan"), dtype=dtype)
        gather_rows(src, idx, dst)
        words = width * src.element_size() // 4 if width * src.element_size() % 4 == 0 else None
        out["cases"].append({"dtype": str(dtype), "equal": bool(torch.equal(dst, src[idx])),
                             "even": launch_config(words)[1] if words else None})
    for n_tensors, n_live, row, dtype in [(6, 5, 40, torch.float16), (4, 3, 48, torch.float32), (2, 7, 3, torch.bfloat16)]:
        w = compaction.make_workload(n_tensors, n_live, row, dtype, torch.device("cpu"))
        ok, skipped = w.methods(compaction.TRITON_METHODS)
        out["workloads"].append({"skipped": skipped, **{m: compaction.is_correct(w, fn) for m, fn in ok.items()}})
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_triton_row_gather_matches_advanced_indexing_under_the_interpreter():
    """Runs in a child process: TRITON_INTERPRET must be set before triton is imported, and must not leak
    into the other tests (the Triton methods count as unavailable on the CPU otherwise)."""
    import os

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", TRITON_CHECK], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [c["equal"] for c in out["cases"]] == [True] * 6, out
    assert {c["even"] for c in out["cases"]} == {True, False, None}  # both kernel paths and 16-bit words ran
    for w in out["workloads"]:
        assert w == {"skipped": {}, "triton": True, "triton_layers": True}


def test_triton_gather_rejects_mismatched_shapes():
    import triton  # noqa: F401 - in the [test] extra: CI must run the Triton tests, never skip them

    from kvreport.runner.measure.triton_gather import gather_rows

    src = torch.zeros(4, 8)
    with pytest.raises(ValueError, match="gather_rows"):
        gather_rows(src, torch.tensor([0, 1]), torch.zeros(3, 8))
    with pytest.raises(ValueError, match="one dtype"):
        gather_rows(src, torch.tensor([0]), torch.zeros(1, 8, dtype=torch.float16))


# --- probes -------------------------------------------------------------------------------------------

class FakeNVML:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 1, 0
    nvmlClocksThrottleReasonGpuIdle = 0x1
    nvmlClocksThrottleReasonSwPowerCap = 0x4
    nvmlClocksThrottleReasonHwThermalSlowdown = 0x40

    def __init__(self, mask=0x4 | 0x40 | 0x1000, power=True):
        self.mask, self.power = mask, power

    def nvmlDeviceGetClockInfo(self, handle, which):
        return {0: 1980, 1: 3201}[which]

    def nvmlDeviceGetPowerUsage(self, handle):
        if not self.power:
            raise RuntimeError("not supported")
        return 412_345  # milliwatts

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 61

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self.mask


def test_device_state_reads_nvml_fields_and_names_throttle_reasons():
    from kvreport.runner.measure import probes

    s = probes.read_device_state(FakeNVML(), handle=object())
    assert (s.sm_clock_mhz, s.mem_clock_mhz, s.power_w, s.temp_c) == (1980, 3201, pytest.approx(412.345), 61)
    assert s.throttle_reasons == "sw_power_cap,hw_thermal,other(0x1000)"
    assert s.row("compaction", "after") == {"experiment": "compaction", "moment": "after", "sm_clock_mhz": 1980,
                                               "mem_clock_mhz": 3201, "power_w": pytest.approx(412.345),
                                               "temp_c": 61, "throttle_reasons": "sw_power_cap,hw_thermal,other(0x1000)"}
    quiet = probes.read_device_state(FakeNVML(mask=0, power=False), handle=object())
    assert quiet.throttle_reasons == "none" and quiet.power_w is None  # an unsupported field is NULL, not an error
    assert probes.device_state(CPU) is None


def test_host_memory_probes():
    from kvreport.runner.measure import probes

    free, source = probes.host_available()
    total = probes.host_total_bytes()
    assert 0 < free <= total and "this host" in source


def test_machine_card_summarises_device_state():
    from kvreport.analysis.pages.index import gpu_state

    base = {"sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "power_w": 400.0, "temp_c": 50,
            "throttle_reasons": "none", "throttled": False}
    hot = {**base, "sm_clock_mhz": 1755, "power_w": 690.4, "temp_c": 71, "throttle_reasons": "sw_power_cap,hw_thermal",
           "throttled": True}
    line = gpu_state([base, hot, base])
    assert line == ("1,755–1,980 MHz SM; 3,201 MHz memory; 400–690 W; 50–71 °C; "
                    "throttled in 1 of 3 readings (hw_thermal, sw_power_cap)")
    assert gpu_state([base]).endswith("no throttling in 1 readings")
    assert gpu_state([]) is None  # CPU runs and runs without NVML: no line on the card


# --- the GPU clock, on a simulated device timeline ------------------------------------------------------

class FakeGPU:
    """A host clock and one CUDA stream's timeline, in ms: enough of torch.cuda for timing._Clock."""

    def __init__(self, cycles_per_ms=1.5e6):
        self.host = 0.0
        self.gpu_end = 0.0
        self.cycles_per_ms = cycles_per_ms
        gpu = self

        class Event:
            def __init__(self, enable_timing=True):
                self.t = None

            def record(self, stream=None):
                self.t = gpu.gpu_end = max(gpu.host, gpu.gpu_end)

            def elapsed_time(self, other):
                return other.t - self.t

        self.Event = Event
        self.cuda = self

    def device(self, _device):
        import contextlib

        return contextlib.nullcontext()

    def synchronize(self, *_):
        self.host = max(self.host, self.gpu_end)

    def _sleep(self, cycles):
        self.gpu_end = max(self.host, self.gpu_end) + cycles / self.cycles_per_ms

    def kernel(self, dispatch_ms, run_ms):
        self.host += dispatch_ms  # the host's launch cost, then the kernel queues behind what is there
        self.gpu_end = max(self.host, self.gpu_end) + run_ms

    def perf_counter(self):
        return self.host / 1e3


def _fake_clock(gpu):
    """A GPU clock on the simulated device: its torch.cuda and host clock are passed in, nothing patched."""
    return timing._Clock("cuda:0", cuda=gpu, now=gpu.perf_counter)


def test_gpu_samples_exclude_host_dispatch():
    """Ten kernels of 5 us the host needs 10 us each to launch: the device is busy 50 us of a 100 us call.
    Timed from an idle GPU the sample would be ~100 us; behind the learnt lead it is the 50 us of work."""
    gpu = FakeGPU()
    clock = _fake_clock(gpu)
    assert clock._cycles_per_ms == pytest.approx(1.5e6)  # calibrated from a timed sleep

    def launch_bound():
        for _ in range(10):
            gpu.kernel(dispatch_ms=0.010, run_ms=0.005)

    device_ms, host_ms, hidden = clock.measure(launch_bound)  # first call: the 50 us floor lead is too short
    assert host_ms == pytest.approx(0.100) and not hidden and device_ms > 0.052  # a dispatch gap got in
    clock.learn(host_ms)  # what the warm-up does
    device_ms, host_ms, hidden = clock.measure(launch_bound)
    assert hidden and device_ms == pytest.approx(0.050) and host_ms == pytest.approx(0.100)
    t = timing.summarize_calls([device_ms], [host_ms], [hidden])
    assert t.host_columns()["host_ms"] == pytest.approx(0.100) and t.host_columns()["dispatch_hidden"]


def test_a_call_that_synchronises_is_recorded_as_not_hidden():
    gpu = FakeGPU()
    clock = _fake_clock(gpu)
    clock.learn(0.1)

    def syncs_inside():
        gpu.kernel(0.010, 0.005)
        gpu.synchronize()  # a .item(): the host waits for the lead and the kernel
        gpu.kernel(0.010, 0.005)

    _, _, hidden = clock.measure(syncs_inside)
    assert hidden is False


def test_the_lead_follows_the_sm_clock():
    """Calibrated at one clock, run at another: the cycles per ms are re-learnt from the measured sleep."""
    gpu = FakeGPU(cycles_per_ms=1.0e6)
    clock = _fake_clock(gpu)
    gpu.cycles_per_ms = 2.0e6  # the clock ramps up after calibration: the same cycles now sleep half as long
    clock.measure(lambda: gpu.kernel(0.001, 0.001))
    assert clock._cycles_per_ms == pytest.approx(2.0e6)


def _int32_offsets_control(src_ptr, dst_ptr, idx_ptr, row_words, blocks_per_row, BLOCK: tl.constexpr,
                           EVEN: tl.constexpr):
    """A control for the PTX check below: the gather with 32-bit offsets, which wrap past 2^31 words."""
    pid = tl.program_id(0)
    row = pid // blocks_per_row
    src_row = tl.load(idx_ptr + row).to(tl.int32)
    offs = (pid - row * blocks_per_row) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + row * row_words + offs, tl.load(src_ptr + src_row * row_words + offs))


def _gather_ptx_for_sm90(row_words_divisible_by_16: bool, kernel=None) -> str:
    """The row gather compiled ahead of time for an H100/H200 (sm_90), no GPU needed: the kernel and the
    launch configuration a 1 MiB row gets (llama-3.1-8b: 8 KV heads x 512 tokens x 128 x 2 bytes), with
    the argument specialisation Triton's runtime applies (16-byte-aligned pointers; an int argument
    divisible by 16 is marked so). Only the kernel's body is returned (no debug sections)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kvreport.runner.measure.triton_gather import _gather_rows_kernel, launch_config

    block, even, warps = launch_config((1 << 20) // 4)
    assert (block, even, warps) == (4096, True, 8)
    signature = {"src_ptr": "*i32", "dst_ptr": "*i32", "idx_ptr": "*i64", "row_words": "i32",
                 "blocks_per_row": "i32", "BLOCK": "constexpr", "EVEN": "constexpr"}
    divisible = [0, 1, 2] + ([3] if row_words_divisible_by_16 else [])
    fn = _gather_rows_kernel if kernel is None else triton.jit(kernel)
    src = ASTSource(fn=fn, signature=signature, constexprs={"BLOCK": block, "EVEN": even},
                    attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps}).asm["ptx"]
    assert ".address_size 64" in ptx and re.search(r"\.target sm_90", ptx)
    return ptx[ptx.index(".entry"):].split(".section")[0]


def _offsets_are_64_bit(body: str) -> bool:
    """No 32-bit multiply (which wraps) in the kernel; the row offset is a 64-bit product (mul.wide.s32:
    two 32-bit operands, a 64-bit result; or mul.lo.s64); every global access takes a 64-bit register."""
    return (not re.search(r"\b(mul|mad)\.lo\.[su]32", body)
            and bool(re.search(r"\b(mul\.lo\.s64|mul\.wide\.s32)", body))
            and all(re.search(r"\[ ?%rd\d+", line) for line in body.splitlines() if re.search(r"(ld|st)\.global", line)))


@pytest.mark.slow
def test_triton_gather_compiles_for_sm90_with_16_byte_accesses_and_64_bit_offsets():
    body = _gather_ptx_for_sm90(True)
    loads = re.findall(r"ld\.global\S*", body)
    stores = re.findall(r"st\.global\S*", body)
    data_loads = [op for op in loads if op != "ld.global.b64"]  # that one is the row index (an int64)
    assert len(loads) - len(data_loads) == 1
    # every data access is a 16-byte vector (4 x 32-bit words), and the loads evict first
    assert data_loads and all(op.endswith(".v4.b32") and "evict_first" in op for op in data_loads), loads
    assert stores and all(op == "st.global.v4.b32" for op in stores), stores
    assert _offsets_are_64_bit(body)
    # Both checks can fail: rows not known to divide by 16 words get scalar accesses, and 32-bit offsets
    # show as a 32-bit multiply.
    assert not re.search(r"(ld|st)\.global\S*\.v4", _gather_ptx_for_sm90(False))
    assert not _offsets_are_64_bit(_gather_ptx_for_sm90(True, _int32_offsets_control))
