"""Interference of compaction and decode: the sanity bound, a failed compaction re-raised, the threaded
run on the CPU and the compaction sized to the decode part."""
from __future__ import annotations


import pytest
import torch

from kvreport.runner.measure.experiments import kv_interference_v3 as interference

from measure_helpers import make_ctx, tiny  # noqa: F401 - tiny: a fixture


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


def test_threaded_both_reraises_a_failed_compaction(tiny):
    def broken():
        raise RuntimeError("gather failed")

    variants, concurrency, _, _ = interference._variants(make_ctx(tiny), broken, lambda: None)
    assert concurrency == "threads"
    with pytest.raises(RuntimeError, match="gather failed"):
        variants["both"]()


def test_interference_runs_on_cpu_with_threads(tiny):
    ctx = make_ctx(tiny)
    ctx.shared.update(copy_roof_gbs=10.0, peak_gbs=None)  # skip the headline roof: not under test here
    with torch.inference_mode():
        result = interference.run(ctx)
    rows = {r["mode"]: r for r in result.tables["kv_interference_v3"]}
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
