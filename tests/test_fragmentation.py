"""Fragmentation: CUDA only, so on the CPU its skip, the deterministic plan and a child's failure; and the
page and claim from GPU-shaped rows written by hand."""
from __future__ import annotations


import duckdb
import pytest

from kvreport.runner.measure.experiments import Skip
from kvreport.runner.measure.experiments import fragmentation as kf
from kvreport.runner.measure.frag_child import plan

from htmldoc import Doc, element_ids, page_text
from measure_helpers import ctx_for


def test_frag_skipped_on_cpu_with_reason():
    with pytest.raises(Skip, match="CUDA"):
        kf.run(ctx_for("tiny-gpt2"))


def test_frag_plan_is_deterministic():
    spec = {"n_requests": 20, "min_len": 16, "max_len": 100, "evict_fraction": 0.4, "seed": 3}
    lengths, evicted = plan(spec)
    assert (lengths, evicted) == plan(spec)
    assert len(lengths) == 20 and all(16 <= n <= 100 for n in lengths)
    assert len(evicted) == 8 and len(set(evicted)) == 8
    assert plan({**spec, "seed": 4}) != (lengths, evicted)


@pytest.mark.slow
def test_frag_child_failure_is_a_clear_error():
    spec = kf.scenario_spec(ctx_for("tiny-gpt2"), 1 << 20)
    spec["device"] = "cpu"
    with pytest.raises(kf.FragChildError, match="default allocator: scenario child exited 3: .*needs a CUDA"):
        kf.run_child("default", spec, timeout_s=120)



@pytest.mark.slow
def test_fragmentation_page_and_claim_with_gpu_rows(tmp_path):
    """GPU-shaped rows (written by hand, for the renderer only): the page draws the chart and the table,
    and the claim's verdict follows the numbers."""
    from kvreport.analysis.queries import Queries
    from kvreport.analysis.site import build_site
    from kvreport.runner.core.store import Store

    db = tmp_path / "g.duckdb"
    mb = 1_000_000
    phases = [("admitted", 900, 1000, 20), ("after_evict", 500, 1000, 60), ("after_empty_cache", 500, 700, 10)]
    rows = [{"allocator": alloc, "phase": ph, "allocated_bytes": a * mb, "reserved_bytes": r * mb,
             "inactive_split_bytes": s * mb, "num_alloc_retries": 0, "live_requests": 10 if ph == "admitted" else 6,
             "evicted_bytes": 0 if ph == "admitted" else 400 * mb, "n_requests": 10, "kv_live_bytes": 500 * mb,
             "setting_confirmed": True}
            for alloc in ("default", "expandable_segments") for ph, a, r, s in phases]
    with Store(db) as store:
        run_id = store.begin_run({"device_kind": "cuda", "device_name": "Synthetic GPU", "model": "tiny-gpt2",
                                  "dtype": "float16"})
        state = {"experiment": "fragmentation", "sm_clock_mhz": 1980, "mem_clock_mhz": 3201, "power_w": 120.5,
                 "temp_c": 41, "throttle_reasons": "none"}
        store.record_experiment(run_id, "fragmentation", "ok", None, {
            "fragmentation": rows, "device_state": [{**state, "moment": "before"},
                                                 {**state, "moment": "after", "throttle_reasons": "sw_power_cap"}]})
        store.finish_run(run_id, "complete")
    build_site(db, tmp_path / "site")
    index = page_text((tmp_path / "site" / "index.html").read_text())
    assert "GPU state (NVML)" in index and "throttled in 1 of 2 readings (sw_power_cap)" in index
    page = Doc((tmp_path / "site" / "fragmentation.html").read_text())
    assert "fragmentation-memory-run1" in element_ids(page)
    assert "fragmentation-skipped" not in element_ids(page)
    assert len(page.table("fragmentation-retention")["rows"]) == 2
    assert len(page.table("fragmentation-phases")["rows"]) == 6

    con = duckdb.connect(str(db), read_only=True)
    q = Queries(con)
    claim = q("claim_fragmentation")
    assert [c["verdict"] for c in claim] == ["confirmed"]  # 500 MB retained after evicting 400 MB
    assert "evicted 400.0 MB" in claim[0]["measured_value"]
    head = q("headline_fragmentation")
    assert head[0]["value"] == pytest.approx(500.0) and head[0]["page"] == "fragmentation.html"
    con.close()
