-- Version 3 (issue 11): GPU measurements that mean what their labels say.
-- Per-size roofs, the device's clock/power state, dispatch-free device times with host times beside them,
-- decode decomposed by mode, balanced interference, fragmentation extras and measured pressure.
-- Fractions are stored as fractions (0.42 = 42%), GB = 10^9 bytes, like every ratio kvreport stores.

-- The roof curve: `copy` (device-to-device, bytes = read + written) and `read` (a streaming sum, bytes =
-- read) at every size the experiments use. Every pct_of_roof divides by the row of the same run, op and
-- bytes. Sizes of at least 4 x llc_bytes (GPU L2, CPU last-level cache) are DRAM measurements.
CREATE TABLE roof_curve (
    run_id INTEGER NOT NULL,
    op VARCHAR,
    bytes BIGINT,
    gbs DOUBLE,
    p25_gbs DOUBLE,
    p75_gbs DOUBLE,
    n INTEGER,
    rounds INTEGER,
    worst_round_gbs DOUBLE,
    llc_bytes BIGINT,
    flushed BOOLEAN,
    threads INTEGER,
    host_ms DOUBLE,
    -- 'alone', or the experiment whose variants it was timed interleaved with (A B roof A B roof ...), so
    -- drift between the two measurements cannot put a workload above its roof
    measured_with VARCHAR
);

-- NVML readings before and after each experiment on CUDA (never set: clocks and power limits are left
-- as found). throttle_reasons names the active clock-event reasons ('none' when idle of them).
CREATE TABLE device_state (
    run_id INTEGER NOT NULL,
    experiment VARCHAR,
    moment VARCHAR,
    sm_clock_mhz INTEGER,
    mem_clock_mhz INTEGER,
    power_w DOUBLE,
    temp_c INTEGER,
    throttle_reasons VARCHAR
);

ALTER TABLE device_ceilings ADD COLUMN llc_bytes BIGINT;

-- Compaction: host time per call beside the device time, the same-size roof flag, the DRAM-size flag.
ALTER TABLE kv_compact_v2 ADD COLUMN host_ms DOUBLE;
ALTER TABLE kv_compact_v2 ADD COLUMN host_p25_ms DOUBLE;
ALTER TABLE kv_compact_v2 ADD COLUMN host_p75_ms DOUBLE;
ALTER TABLE kv_compact_v2 ADD COLUMN dispatch_hidden BOOLEAN;
ALTER TABLE kv_compact_v2 ADD COLUMN over_roof BOOLEAN;
ALTER TABLE kv_compact_v2 ADD COLUMN llc_bytes BIGINT;
ALTER TABLE kv_compact_v2 ADD COLUMN dram_sized BOOLEAN;
ALTER TABLE kv_compact_v2 ADD COLUMN element_bytes INTEGER;
ALTER TABLE kv_compact_v2 ADD COLUMN skipped_methods VARCHAR;
-- Rows of version 2 divided by one roof at one size: say so rather than pretend they were same-size.
ALTER TABLE kv_compact_v2 ADD COLUMN roof_basis VARCHAR;
UPDATE kv_compact_v2 SET roof_basis = 'single-size copy roof';

-- Decode by mode (eager / static / graph), with the bytes a step must move and where its time goes.
ALTER TABLE kv_decode_cost_v2 ADD COLUMN mode VARCHAR;
UPDATE kv_decode_cost_v2 SET mode = 'eager';
ALTER TABLE kv_decode_cost_v2 ADD COLUMN host_ms DOUBLE;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN host_p25_ms DOUBLE;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN host_p75_ms DOUBLE;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN dispatch_hidden BOOLEAN;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN kv_read_bytes BIGINT;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN kv_write_bytes BIGINT;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN recopy_bytes BIGINT;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN bytes_moved BIGINT;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN overhead_ms DOUBLE;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN over_roof BOOLEAN;
ALTER TABLE kv_decode_cost_v2 ADD COLUMN roof_basis VARCHAR;
UPDATE kv_decode_cost_v2 SET roof_basis = 'single-size copy roof';
ALTER TABLE kv_decode_cost_v2 ADD COLUMN skipped_modes VARCHAR;
-- A step whose bytes fit in 4x the last-level cache runs from the cache: its bandwidth is no DRAM figure.
ALTER TABLE kv_decode_cost_v2 ADD COLUMN dram_sized BOOLEAN;

-- Interference: which decode mode ran, the parts' times inside `both`, balance, inflation, loss.
ALTER TABLE kv_interference_v3 ADD COLUMN decode_mode VARCHAR;
ALTER TABLE kv_interference_v3 ADD COLUMN host_ms DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN decode_in_both_ms DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN compact_in_both_ms DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN balance_ratio DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN balanced BOOLEAN;
ALTER TABLE kv_interference_v3 ADD COLUMN decode_inflation DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN compact_bw_lost DOUBLE;
ALTER TABLE kv_interference_v3 ADD COLUMN over_roof BOOLEAN;

-- Fragmentation extras: expandable segments left after empty_cache, peak reserved while caches grow.
ALTER TABLE kv_frag_v2 ADD COLUMN expandable_segments INTEGER;
ALTER TABLE kv_frag_v2 ADD COLUMN expandable_segment_bytes BIGINT;
ALTER TABLE kv_frag_v2 ADD COLUMN peak_reserved_bytes BIGINT;

-- Pressure filled to the ceiling in prefill batches, and the deliberate out-of-memory in a child process.
ALTER TABLE kv_capacity_v3 ADD COLUMN prefill_batch INTEGER;
ALTER TABLE kv_capacity_v3 ADD COLUMN oom_child_status VARCHAR;
ALTER TABLE kv_capacity_v3 ADD COLUMN oom_child_note VARCHAR;
