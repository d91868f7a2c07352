"""The numbers every published bandwidth rests on, on fixed inputs: the timing statistics (median and
inclusive quartiles, never a mean), GB/s units, the theoretical-peak and copy-roof formulas, the compaction
workload's byte counts, cache sizes and flush threshold, and the bytes a decode step reads and re-copies.
tests/test_gpu_measurement.py and the subject files (test_compaction.py, test_decode.py, ...) hold the rest;
nothing here is timed."""
from __future__ import annotations

import sys
import types

import pytest
import torch

from kvreport.runner.measure import ceilings, timing
from kvreport.runner.measure import compaction as kc
from kvreport.runner.measure import decode_step, probes
from kvreport.runner.core.kv_formula import KVShape, kv_shape
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")
MIB, GIB = 1 << 20, 1 << 30


# --- timing statistics ----------------------------------------------------------------------------------

@pytest.mark.parametrize("samples, median, p25, p75", [
    # skewed: the mean (22.0) is far from the median; inclusive quartiles sit on samples 2 and 4
    ([100.0, 3.0, 1.0, 4.0, 2.0], 3.0, 2.0, 4.0),
    # even count: median between the middle two; inclusive quartiles interpolate (exclusive: 1.25 / 8.25)
    ([10.0, 1.0, 3.0, 2.0], 2.5, 1.75, 4.75),
    # seven samples, one far outlier: inclusive p75 is 5.5 (exclusive would be 7.0)
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 700.0], 4.0, 2.5, 5.5),
    # fewer than four: the extremes stand in for the quartiles
    ([30.0, 1.0, 2.0], 2.0, 1.0, 30.0),
    ([7.0], 7.0, 7.0, 7.0),
])
def test_summarize_is_median_and_inclusive_quartiles(samples, median, p25, p75):
    t = timing.summarize(samples)
    assert (t.median_ms, t.p25_ms, t.p75_ms) == (pytest.approx(median), pytest.approx(p25), pytest.approx(p75))
    assert (t.min_ms, t.max_ms, t.n) == (min(samples), max(samples), len(samples))
    cols = t.columns("x_")
    assert cols == {"x_time_ms": t.median_ms, "x_p25_ms": t.p25_ms, "x_p75_ms": t.p75_ms, "x_n": len(samples),
                    "x_spread_wide": (p75 - p25) / median > timing.WIDE_SPREAD}


def test_summarize_does_not_change_the_callers_samples():
    samples = [3.0, 1.0, 2.0]
    timing.summarize(samples)
    assert samples == [3.0, 1.0, 2.0]


@pytest.mark.parametrize("p25, median, p75, wide", [
    (3.5, 4.0, 4.5, False),     # IQR / median = 0.25 exactly: not wide (the flag is strictly above)
    (3.5, 4.0, 4.51, True),
    (0.0, 0.0, 0.0, False),     # a zero median has no spread rather than a division error
])
def test_wide_spread_is_iqr_over_median_strictly_above_a_quarter(p25, median, p75, wide):
    t = timing.Timing(median, p25, p75, p25, p75, 4)
    assert t.wide is wide and t.columns()["spread_wide"] is wide


@pytest.mark.parametrize("hidden, flag", [([True] * 19 + [False], True), ([True] * 18 + [False] * 2, False)])
def test_dispatch_counts_as_hidden_from_95_percent_of_samples(hidden, flag):
    t = timing.summarize_calls([1.0] * 20, [2.0] * 20, hidden)
    assert t.dispatch_hidden == sum(hidden) / 20 and t.host_columns()["dispatch_hidden"] is flag


@pytest.mark.parametrize("nbytes, ms, expected", [
    (1e9, 1000.0, 1.0),              # 10^9 bytes in a second: 1 GB/s
    (GIB, 1.0, 1073.741824),         # decimal GB, not GiB: 2^30 B in 1 ms
    (36_864, 0.001, 36.864),
])
def test_gbs_is_decimal_gigabytes_per_second(nbytes, ms, expected):
    assert timing.gbs(nbytes, ms) == pytest.approx(expected)


# --- ceilings -------------------------------------------------------------------------------------------

class FakeNvml(types.ModuleType):
    NVML_CLOCK_MEM = 2

    def __init__(self, mem_mhz, bus_bits):
        super().__init__("pynvml")
        self.mem_mhz, self.bus_bits, self.shut = mem_mhz, bus_bits, False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        assert kind == self.NVML_CLOCK_MEM
        return self.mem_mhz

    def nvmlDeviceGetMemoryBusWidth(self, handle):
        return self.bus_bits


@pytest.mark.parametrize("mem_mhz, bus_bits, gbs", [
    (7001, 256, 448.064),     # RTX 2070 (GDDR6): the datasheet's 448 GB/s
    (2619, 5120, 3352.32),    # H100 SXM (HBM3): 3.35 TB/s
    (0, 256, None),           # no clock reported: no number invented
    (7001, 0, None),
])
def test_nvml_peak_is_memory_clock_times_bus_width_double_data_rate(monkeypatch, mem_mhz, bus_bits, gbs):
    nvml = FakeNvml(mem_mhz, bus_bits)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)  # the optional [gpu] extra, faked: no NVML here
    got = ceilings.nvml_peak(torch.device("cuda", 0), handle_of=lambda pynvml, device: "handle")
    assert got == (None if gbs is None else pytest.approx(gbs)) and nvml.shut


def test_nvml_peak_without_a_handle_is_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(7001, 256))  # the optional [gpu] extra, faked
    assert ceilings.nvml_peak(torch.device("cuda", 0), handle_of=lambda pynvml, device: None) is None


@pytest.mark.parametrize("nvml, name, expected", [
    (3352.32, "NVIDIA H100 80GB HBM3", (3352.32, "nvml")),          # NVML's own clocks win over the table
    (None, "NVIDIA GeForce RTX 2070", (448.0, "table")),
    (None, "NVIDIA B200", (None, None)),                            # neither: no number invented
])
def test_theoretical_peak_on_a_gpu_prefers_nvml_then_the_table(monkeypatch, nvml, name, expected):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: name)  # fakes a GPU on this CPU machine
    assert ceilings.theoretical_peak("cuda:0", from_nvml=lambda device: nvml) == expected


@pytest.mark.parametrize("free, expected", [
    (10 * GIB, 2 * GIB),               # source + destination (4 GiB) within 80% of free
    (3 * GIB, GIB),                    # 2 x 2 GiB is over 80% of 3 GiB, 2 x 1 GiB is not
    (GIB, 409 * MIB),                  # 40% of free, whole MiB
    (100 * MIB, 64 * MIB),             # never below 64 MiB
])
def test_default_copy_bytes_on_a_gpu_follows_free_memory(monkeypatch, free, expected):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (free, 80 * GIB))
    assert ceilings.default_copy_bytes(types.SimpleNamespace(type="cuda")) == expected


def test_default_copy_bytes_on_the_cpu_is_256_mib():
    assert ceilings.default_copy_bytes(CPU) == 256 * MIB


def test_copy_roof_counts_both_buffers_and_keeps_the_best_round():
    """A copy of N bytes per buffer moves 2N (read + write); the roof is the fastest round's median and
    its quartiles swap (the slow quartile of time is the low quartile of bandwidth)."""
    rounds = iter([[4.0, 4.0, 4.0, 4.0], [1.0, 2.0, 2.0, 3.0], [3.0, 3.0, 3.0, 3.0]])

    def fake_time_fn(fn, device, **kw):
        s = next(rounds)
        return timing.summarize_calls(s, s)

    r = ceilings.measure_copy_roof(CPU, 4 * MIB, warmup=1, repeats=4, rounds=3, timer=fake_time_fn)
    moved = 8 * MIB
    t = timing.summarize([1.0, 2.0, 2.0, 3.0])
    assert r["roof_bytes"] == moved and r["roof_rounds"] == 3 and r["roof_n"] == 4
    assert r["roof_gbs"] == pytest.approx(moved / 2.0e-3 / 1e9)
    assert r["roof_p25_gbs"] == pytest.approx(moved / (t.p75_ms * 1e-3) / 1e9)
    assert r["roof_p75_gbs"] == pytest.approx(moved / (t.p25_ms * 1e-3) / 1e9)
    assert r["roof_worst_round_gbs"] == pytest.approx(moved / 4.0e-3 / 1e9)


# --- compaction workload ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n_tensors, n_live, row, dtype, elem", [
    (6, 5, 40, torch.float16, 2), (4, 3, 48, torch.float32, 4), (2, 7, 3, torch.bfloat16, 2)])
def test_workload_bytes_are_the_live_slots_read_once_and_written_once(n_tensors, n_live, row, dtype, elem):
    w = kc.make_workload(n_tensors, n_live, row, dtype, CPU)
    assert w.pool.shape == (n_tensors, 2 * n_live, row)  # half the slots evicted
    assert w.kv_bytes == n_tensors * n_live * row * elem
    assert w.bytes_moved == 2 * w.kv_bytes
    assert {m: w.launches(m) for m in kc.METHODS} == {"naive": n_tensors, "batched": 1, "triton": 1,
                                                      "triton_layers": n_tensors}
    # pool (2x) + destination + reference gather + the same-size copy roof beside it (source and destination)
    assert kc.footprint_bytes(n_live, n_tensors, row, elem) == 6 * w.kv_bytes


def test_plan_bytes_match_the_workload_it_builds():
    """A plan's byte counts (stored before anything is allocated) equal the workload's own."""
    shape = KVShape(n_layers=4, n_heads=8, n_kv_heads=2, head_dim=16, sliding_windows=(None,) * 4)
    for target in (64 << 10, MIB, 64 * MIB):
        p = kc.plan_for(target, shape, 2, max_seq=256)
        assert p.n_tensors == 2 * shape.n_layers and p.row == shape.n_kv_heads * p.seq_len * shape.head_dim
        assert p.kv_bytes == p.n_live * p.seq_len * shape.bytes_per_token(2)
        assert p.bytes_moved == 2 * p.kv_bytes and p.footprint == 6 * p.kv_bytes  # + the same-size roof copy
        if target <= MIB:  # allocate only the small ones
            w = kc.make_workload(p.n_tensors, p.n_live, p.row, torch.float16, CPU)
            assert (w.kv_bytes, w.bytes_moved) == (p.kv_bytes, p.bytes_moved)


@pytest.mark.parametrize("target, bpt, max_seq, shape", [
    (10_000, 1000, 1024, (1, 10)),        # under one request's cap: one request of that many tokens
    (511_000, 1000, 1024, (1, 511)),
    (512_000, 1000, 1024, (1, 512)),      # exactly one full request
    (1_300_000, 1000, 1024, (3, 512)),    # 1,300 tokens -> round(2.54) = 3 requests of 512
    (1_300_000, 1000, 256, (5, 256)),     # the model's context caps the request length
    (1, 1000, 1024, (1, 1)),              # never zero tokens
])
def test_shape_for_targets(target, bpt, max_seq, shape):
    assert kc.shape_for(target, bpt, max_seq) == shape


@pytest.mark.parametrize("sizes, expected", [
    ({"index0": "32K", "index1": "32K", "index2": "1024K", "index3": "36864K"}, 36864 << 10),
    ({"index0": "48K", "index3": "32M"}, 32 << 20),
    ({}, 32 << 20),                       # nothing readable: assume a 32 MiB LLC
    ({"index3": "491520K"}, 64 << 20),    # a VM reporting its host's 480 MiB: capped (probes.CPU_LLC_CAP)
])
def test_last_level_cache_is_the_largest_cpu_cache(tmp_path, sizes, expected):
    for name, text in sizes.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "size").write_text(text + "\n")
    assert probes.last_level_cache_bytes(CPU, cpu_cache_dir=tmp_path) == expected


def test_flusher_overwrites_four_llcs_and_flushes_footprints_below_that():
    f = probes.Flusher(CPU, llc=MIB)
    assert f.llc == MIB and f.buf.numel() * f.buf.element_size() == probes.FLUSH_FACTOR * MIB == 4 * MIB
    assert f.needed(4 * MIB - 1) and not f.needed(4 * MIB)


def test_targets_per_device():
    assert kc.targets(True, True) == kc.GPU_TARGETS and max(kc.GPU_TARGETS) == 4 * GIB
    assert kc.targets(False, False) == kc.CPU_TARGETS and max(kc.CPU_TARGETS) == 64 * MIB
    assert kc.targets(False, True) == kc.CPU_TARGETS_QUICK == [64 << 10, MIB, 64 * MIB]


# --- decode step bytes ------------------------------------------------------------------------------------

def _bare(cls, **fields):
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def test_eager_steps_read_the_whole_cache_and_recopy_it_each_step():
    """Three steps from a 1,000-byte prefix growing 10 bytes a step: attention reads 1,010 + 1,020 + 1,030;
    torch.cat reads the cache so far and writes it one token longer: (1,000 + 1,010) + (1,010 + 1,020) + ..."""
    d = _bare(decode_step.EagerDecoder, kv_bytes=1000, growth_bytes=10, steps=3)
    assert d.kv_read_bytes() == 1010 + 1020 + 1030
    assert d.recopy_bytes() == (1000 + 1010) + (1010 + 1020) + (1020 + 1030)


def test_static_steps_read_the_whole_buffer_and_recopy_nothing():
    d = _bare(decode_step.StaticDecoder, buffer_bytes=2300, steps=3)
    assert d.kv_read_bytes() == 3 * 2300 and d.recopy_bytes() == 0


def test_decoder_byte_counts_on_a_real_cache():
    """Prefix 20, 3 steps, batch 2 on tiny-gpt2 at float32: the counts the decode rows store, from the
    cache tensors, against the formula's bytes per token."""
    lm = load_model("tiny-gpt2", CPU, torch.float32)
    per_token = kv_shape(lm.model.config).bytes_per_token(4)
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, lm.model.config.vocab_size, (2, 20), generator=g)
    step = torch.randint(0, lm.model.config.vocab_size, (2, 1), generator=g)
    with torch.inference_mode():
        eager = decode_step.make_decoder("eager", lm.model, prefix, step, steps=3)
        static = decode_step.make_decoder("static", lm.model, prefix, step, steps=3)
    assert eager.kv_bytes == static.kv_bytes == 2 * 20 * per_token
    assert eager.growth_bytes == static.growth_bytes == 2 * per_token
    assert static.buffer_bytes == 2 * 23 * per_token  # sized to exactly prefix + steps
    assert eager.kv_read_bytes() == sum(2 * (20 + i) * per_token for i in (1, 2, 3))
    assert static.kv_read_bytes() == 3 * 2 * 23 * per_token


@pytest.mark.parametrize("text, expected", [
    ('{"url": "https://github.com/x/kvreport", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}', "abc123"),
    ('{"url": "file:///src/kvreport", "dir_info": {}}', None),   # `pip install .`: pip records no commit
    (None, None), ("not json", None),
])
def test_installed_commit_from_pip_metadata(text, expected):
    from kvreport.runner.measure.environment import installed_commit

    assert installed_commit(lambda: text) == expected
