"""Device ceilings: the theoretical peak by GPU name, the CPU's copy roof, and the roof measured on first use."""
from __future__ import annotations


import pytest

from kvreport.runner.measure import ceilings

from measure_helpers import CPU, ctx_for


@pytest.mark.parametrize("name, gbs", [
    ("NVIDIA H200", 4800.0), ("NVIDIA H100 80GB HBM3", 3350.0), ("NVIDIA H100 PCIe", 2000.0),
    ("NVIDIA A100-SXM4-80GB", 2039.0), ("NVIDIA A100 80GB PCIe", 2039.0), ("NVIDIA A100-SXM4-40GB", 1555.0),
    ("NVIDIA L4", 300.0), ("NVIDIA A10G", 600.0), ("NVIDIA GeForce RTX 4090", 1008.0),
    ("NVIDIA GeForce RTX 3090", 936.0), ("NVIDIA GeForce RTX 2070", 448.0), ("Tesla T4", 320.0),
    ("Tesla V100-SXM2-16GB", 900.0),
    # Not in the table: no number is invented, and near-miss names do not match a neighbour.
    ("NVIDIA L40S", None), ("NVIDIA B200", None), ("Tesla V100S-PCIE-32GB", None), ("", None),
])
def test_table_peak_by_name(name, gbs):
    assert ceilings.table_peak(name) == gbs


def test_cpu_has_no_theoretical_peak():
    gbs, source = ceilings.theoretical_peak(CPU)
    assert gbs is None and source.startswith("none")


def test_copy_roof_on_cpu_is_sane():
    r = ceilings.measure_copy_roof(CPU, 32 << 20, warmup=1, repeats=5)
    assert r["roof_n"] == 5
    assert r["roof_bytes"] == 2 * (32 << 20)  # read + written
    assert 0.1 < r["roof_gbs"] < 10_000
    assert r["roof_p25_gbs"] <= r["roof_gbs"] <= r["roof_p75_gbs"]


def test_roof_is_measured_when_no_experiment_published_it():
    ctx = ctx_for("tiny-gpt2")
    roof, peak = ceilings.roof_and_peak(ctx)
    assert roof > 0 and peak is None and ctx.shared["copy_roof_gbs"] == roof
