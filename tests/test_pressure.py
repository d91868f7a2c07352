"""Memory pressure: admission stops at the cap, the ceiling or the time budget, fills in batches, the
out-of-memory path is caught, recorded and freed, and the seed's capacity arithmetic."""
from __future__ import annotations

import gc
import math
import weakref

import pytest
import torch

from kvreport.runner.measure.experiments import pressure as pressure

from measure_helpers import fake_cache, make_ctx


def test_pressure_stops_at_the_cap_and_records_every_request(tiny, monkeypatch):
    monkeypatch.setenv("KVREPORT_PRESSURE_CAP", "3")
    with torch.inference_mode():
        result = pressure.run(make_ctx(tiny))
    rows, caps = result.tables["pressure"], result.tables["concurrent_capacity"]
    assert [c["seq_len"] for c in caps] == [64, 128]
    for c in caps:
        mine = [r for r in rows if r["seq_len"] == c["seq_len"]]
        assert [r["n_requests"] for r in mine] == [1, 2, 3]
        assert c["stop_reason"] == "cap" and c["max_requests_measured"] == 3
        # tiny-gpt2 at float32: 2 (K,V) x 2 layers x 4 heads x 16 dims x 4 B = 1,024 B/token
        assert c["bytes_per_request"] == 1024 * c["seq_len"] == c["formula_bytes_per_request"]
        assert [r["kv_bytes"] for r in mine] == [n * c["bytes_per_request"] for n in (1, 2, 3)]
        assert all(r["reserved_bytes"] is None and r["memory_source"] == "tensor_storage" for r in mine)
        assert c["theoretical_max_requests"] == c["free_bytes"] // c["bytes_per_request"]
        assert c["capacity_tokens"] == c["kv_budget_bytes"] // 1024
        assert c["device_usable_after"] is True and "CPU" in c["notes"]
        assert c["prefill_batch"] == 1 and c["oom_child_status"] == "skipped"
    # the engine rule's figure is never printed as if measured; what was measured is named beside it
    assert any(line.startswith("KV capacity ") and "requests at " in line and "by the engine's rule, not measured "
               "(measured: admitted " in line for line in result.summary)


def test_pressure_stops_below_the_ceiling():
    memory = pressure.TensorMemory()
    adm = pressure.admit(lambda k=1: fake_cache(4096 * k), 16, cap=100, ceiling_bytes=10_000, deadline=math.inf,
                         memory=memory, estimate_bytes=4096)
    # 2 x 4096 fit; a third would reach 12,288 > 10,000: stop before it, not after
    assert adm.stop_reason == "ceiling" and len(adm.rows) == 2
    assert adm.rows[-1]["allocated_bytes"] == 8192 <= 10_000


def test_pressure_stops_at_the_time_budget():
    ticks = iter(range(100))
    adm = pressure.admit(lambda k=1: fake_cache(64 * k), 16, cap=100, ceiling_bytes=1 << 30, deadline=2.5,
                         memory=pressure.TensorMemory(), estimate_bytes=64, clock=lambda: next(ticks))
    assert adm.stop_reason == "time" and len(adm.rows) == 3  # clock 0, 1, 2 admit; 3 > 2.5 stops


def test_pressure_fills_in_batches_and_shrinks_the_last_one_to_the_ceiling():
    sizes = []

    def prefill(k=1):
        sizes.append(k)
        return fake_cache(4096 * k)

    adm = pressure.admit(prefill, 16, cap=1000, ceiling_bytes=30_000, deadline=math.inf,
                         memory=pressure.TensorMemory(), estimate_bytes=4096, batch=4)
    # 4 requests (16,384 B), then room for 3 more under 30,000 B, then none: measured to the ceiling
    assert sizes == [4, 3] and [r["n_requests"] for r in adm.rows] == [4, 7]
    assert adm.stop_reason == "ceiling" and adm.rows[-1]["kv_bytes"] == 7 * 4096 <= 30_000


@pytest.mark.slow
def test_oom_child_is_skipped_on_cpu_and_refuses_a_cpu_device(tiny):
    from kvreport.runner.measure.child_process import ChildError, run_json_child

    status, note = pressure.oom_recovery(make_ctx(tiny))
    assert status == "skipped" and "OOM killer" in note
    with pytest.raises(ChildError, match="out-of-memory child: scenario child exited 3: .*needs a CUDA"):
        run_json_child("kvreport.runner.measure.oom_child", {"device": "cpu"}, "out-of-memory child", 120)


@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError, MemoryError])
def test_pressure_out_of_memory_is_caught_recorded_and_freed(tiny, monkeypatch, error):
    made, alive_at_check = [], []
    real_check = pressure.device_usable

    def check_after_freeing(ctx):
        gc.collect()
        alive_at_check.append(sum(ref() is not None for ref in made if ref is not None))
        return real_check(ctx)

    def fake_make_prefill(ctx, seq_len):
        def prefill(k=1):
            if len(made) % 3 == 2:  # the third request of every length fails
                made.append(None)
                raise error("CUDA out of memory. Tried to allocate 20.00 MiB")
            cache = fake_cache(1024 * seq_len)
            made.append(weakref.ref(cache.layers[0].keys))
            return cache
        return prefill

    monkeypatch.setattr(pressure, "make_prefill", fake_make_prefill)
    monkeypatch.setattr(pressure, "device_usable", check_after_freeing)
    with torch.inference_mode():
        result = pressure.run(make_ctx(tiny))
    caps = result.tables["concurrent_capacity"]
    assert [c["stop_reason"] for c in caps] == ["oom", "oom"]
    assert all(c["max_requests_measured"] == 2 for c in caps)
    assert all("out of memory after 2 requests" in c["notes"] and error.__name__ in c["notes"] for c in caps)
    assert all(c["device_usable_after"] is True for c in caps)  # the real model still runs afterwards
    assert alive_at_check == [0, 0]  # every admitted cache was freed before the device was checked


def test_pressure_rejects_a_bad_fraction(tiny, monkeypatch):
    from kvreport.runner.core.errors import UserError

    monkeypatch.setenv("KVREPORT_PRESSURE_FRACTION", "1.5")
    with pytest.raises(UserError, match="KVREPORT_PRESSURE_FRACTION"):
        pressure.run(make_ctx(tiny))


def test_capacity_reproduces_the_seed_arithmetic():
    bpr = 512 * 36_864  # GPT-2 at float16: 18 MiB per 512-token request
    assert 49 * bpr == 882 * 2 ** 20
    cap = pressure.capacity(512, bpr, free_bytes=7452 * 2 ** 20, ceiling_bytes=7452 * 2 ** 20, overhead_bytes=0)
    assert cap["theoretical_max_requests"] == 414  # what the seed's 414 needs: 7.28 GiB free, not 7.5
    assert pressure.capacity(512, bpr, int(7.5 * 2 ** 30), 0, 0)["theoretical_max_requests"] == 426
    assert cap["capacity_tokens"] == 414 * 512 and cap["max_concurrency"] == 414
