"""No finding from noise: a decode step that ran faster at a larger batch, or a compaction timing with a wide
spread, is headlined as "too noisy to say" with its numbers, never with a bound or a share of the roof as
a finding; clean timings keep their verdict."""
from __future__ import annotations

import duckdb
import pytest

from kvreport.analysis.queries import Queries
from kvreport.runner.core.migrations import apply_steps


@pytest.fixture
def con():
    c = duckdb.connect()
    apply_steps(c, 0)
    c.execute("INSERT INTO runs (run_id, status, model, dtype, device_name) VALUES "
              "(1, 'ok', 'gpt2', 'float32', 'cpu'), (2, 'ok', 'gpt2', 'float32', 'cpu')")
    return c


def _decode(con, run_id, batch, step_ms, wide=False, prefix=64):
    con.execute(
        "INSERT INTO decode_cost (run_id, mode, prefix_len, batch_size, step_ms, p25_ms, p75_ms, spread_wide, "
        "pct_of_roof, weights_floor_ms, bandwidth_floor_ms, roof_basis, over_roof, dram_sized) "
        "VALUES (?, 'eager', ?, ?, ?, ?, ?, ?, 0.09, 1.0, 1.1, 'same-size read roof', false, true)",
        [run_id, prefix, batch, step_ms, 0.97 * step_ms, 1.03 * step_ms, wide])


def test_decode_bound_only_where_the_batches_are_in_order(con):
    for batch, ms in ((1, 1105.0), (4, 2704.0), (16, 2100.0)):  # batch 16 faster than batch 4: noise
        _decode(con, 1, batch, ms)
    for batch, ms in ((1, 100.0), (4, 104.0), (16, 110.0)):     # flat in the batch: launch-bound
        _decode(con, 2, batch, ms)
    rows = {r["run_id"]: r["finding"] for r in Queries(con)("headline_decode")}
    assert "too noisy to say" in rows[1] and "batch 16 (2100.00 ms) ran faster than batch 4 (2704.00 ms)" in rows[1]
    assert "-bound" not in rows[1].split("too noisy")[1] and "1105.00 ms" in rows[1]
    assert "too noisy" not in rows[2] and "launch/overhead-bound" in rows[2]
    bound = {(r["run_id"], r["batch_size"]): r["bound"] for r in Queries(con)("decode_variation")}
    assert bound[1, 1] == "too noisy to say" and bound[2, 1] == "launch/overhead-bound"


def test_decode_with_a_wide_spread_at_batch_one_is_too_noisy(con):
    _decode(con, 1, 1, 100.0, wide=True)
    _decode(con, 1, 4, 300.0)
    (row,) = Queries(con)("headline_decode")
    assert "too noisy to say what bounds it (the batch-1 timings have a wide spread)" in row["finding"]
    assert "compute-bound" not in row["finding"]


def _compact(con, run_id, moved, method, gbs, pct, wide):
    con.execute(
        "INSERT INTO compaction (run_id, method, bytes_moved, time_ms, spread_wide, gbs, pct_of_roof, roof_gbs, "
        "over_roof, roof_basis) VALUES (?, ?, ?, 1.0, ?, ?, ?, 10.0, false, 'same-size copy roof')",
        [run_id, method, moved, wide, gbs, pct])


def test_compaction_with_a_wide_spread_is_too_noisy_to_say(con):
    for run_id, wide in ((1, True), (2, False)):
        for moved in (1 << 20, 1 << 27):
            _compact(con, run_id, moved, "naive", 1.0, 0.1, False)
            _compact(con, run_id, moved, "batched", 1.5, 0.151, wide and moved > 1 << 20)
    rows = {r["run_id"]: r["finding"] for r in Queries(con)("headline_compaction")}
    assert "too noisy to say (batched 1.5 GB/s = 15% of the same-size copy roof" in rows[1]
    assert "too noisy" not in rows[2] and "batched 1.5 GB/s = 15% of the same-size copy roof" in rows[2]


def _compare(con, metric_start):
    return {(r["run_id"], r["metric"]): r["value"] for r in Queries(con)("compare_compaction")
            if r["metric"].startswith(metric_start)}


def test_compare_reads_the_headline_figure_and_never_a_flagged_best(con):
    # run 1: the largest workload is noisy, a small one reads 99.7% of its roof; run 2: clean everywhere,
    # with a naive row above its roof (a measurement error: never the "best").
    for run_id, wide in ((1, True), (2, False)):
        for moved, pct in ((2 << 20, 0.997), (144 << 20, 0.151)):
            _compact(con, run_id, moved, "naive", 1.0, 0.1, False)
            _compact(con, run_id, moved, "batched", 10 * pct, pct, wide and moved > 2 << 20)
    con.execute("UPDATE compaction SET gbs = 4.09, over_roof = true WHERE run_id = 2 AND method = 'naive' "
                "AND bytes_moved = 2 << 20")
    at_largest = _compare(con, "compaction batched, % of same-size copy roof at the largest workload")
    headline = {r["run_id"]: r["value"] for r in Queries(con)("headline_compaction")}
    assert (1, "compaction batched, % of same-size copy roof at the largest workload") not in at_largest
    assert at_largest[2, "compaction batched, % of same-size copy roof at the largest workload"] == \
        pytest.approx(headline[2]) == pytest.approx(15.1)
    best = _compare(con, "compaction naive, best bandwidth")
    assert best[2, "compaction naive, best bandwidth"] == 1.0  # not the flagged 4.09


def test_pressure_headline_number_is_the_requests_admitted(con):
    con.execute("UPDATE runs SET device_kind = 'cpu'")
    con.execute("INSERT INTO concurrent_capacity (run_id, seq_len, bytes_per_request, capacity_tokens, max_concurrency, "
                "max_requests_measured, ceiling_bytes, ceiling_fraction, stop_reason) "
                "VALUES (1, 512, 37748736, 13107, 25.6, 1, 966367641, 0.9, 'time')")
    (row,) = Queries(con)("headline_pressure")
    assert row["value"] == 1 and row["unit"] == "request admitted"
    assert "1 request of 512 tokens admitted before the time budget" in row["finding"]
    assert "rule (not a measurement)" in row["finding"] and "25.6 requests" in row["finding"]


def test_pressure_engine_line_of_a_length_with_no_request_admitted(con):
    con.execute("INSERT INTO concurrent_capacity (run_id, seq_len, max_requests_measured, stop_reason) "
                "VALUES (1, 128, 0, 'time')")
    (row,) = Queries(con)("pressure_capacity")
    assert row["engine_line"] == "no 128-token request admitted before the time budget: no capacity to compute"


def test_decode_costing_more_than_the_batch_explains_is_too_noisy(con):
    for batch, ms in ((1, 1715.0), (2, 6749.0)):  # 3.9x for twice the work
        _decode(con, 1, batch, ms, prefix=32)
    (row,) = Queries(con)("headline_decode")
    assert "too noisy to say" in row["finding"] and "cost 3.9x batch 1 (1715.00 ms)" in row["finding"]
    assert "compute-bound" not in row["finding"]


def test_audit_headline_names_the_dtype_its_price_scales_to(con):
    con.execute("INSERT INTO audits (audit_id, run_id, n_calls, kv_bytes_per_token, kv_bytes_source, overall_pcer, "
                "leakage_index) VALUES ('run-1-demo', 1, 193, 36864, 'measured', 0.4, 0.9), "
                "('audit-1', NULL, 3, 131072, 'given', 0.6, 0.5)")
    rows = {r["run_id"]: r["finding"] for r in Queries(con)("headline_audit") if "priced at" in r["finding"]}
    assert "priced at 36,864 B/token (16-bit KV, measured)" in rows[1]
    assert "priced at 131,072 B/token (given with --kv-bytes-per-token)" in rows[None]
